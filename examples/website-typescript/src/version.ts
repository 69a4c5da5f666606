/** This release: the Rust plugin's first (examples/website), whose children it writes alike. */
export const VERSION = "0.1.0";
