// The component's entry: `npm run build` makes a WebAssembly component of this module.
import { exportPlugin } from "@wasmcm/guest/component";

import { WebsiteController } from "./index.js";

export const controller = exportPlugin(WebsiteController);
