// The README's first plugin is test/greeter.ts, verbatim, so the docs show code that compiles
// and passes its test.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

test("the README shows the first plugin as tested", () => {
  const root = new URL("../../", import.meta.url);
  const readme = readFileSync(new URL("README.md", root), "utf8");
  const plugin = readFileSync(new URL("test/greeter.ts", root), "utf8");
  const body = plugin.split("\n").slice(1).join("\n").trim();
  assert.ok(readme.includes(body), "README.md's first plugin differs from test/greeter.ts: copy it over");
});
