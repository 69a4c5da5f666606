//! The rollback controller natively, one test binary, a module per area.

mod rollback;
