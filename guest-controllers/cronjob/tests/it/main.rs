//! The CronJob controller natively, one test binary: a module per area (`cargo test -p
//! wasmcm-cronjob --test it sync::` runs one), each restating upstream's test tables.

mod sync;
mod utils;
