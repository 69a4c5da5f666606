//! The ServiceAccount tokens this server issued (TokenRequest), by token: what `auth` issues,
//! verifies and reviews, kept apart so that the shared state can hold it without depending on
//! authentication.

use std::collections::HashMap;
use std::sync::Mutex;

use jiff::Timestamp;

/// One issued token: for whom, until when, to whom.
pub(crate) struct Issued {
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// The ServiceAccount's uid when the token was issued.
    pub(crate) uid: String,
    pub(crate) expires: Timestamp,
    /// Whom the token is for (`spec.audiences` of its TokenRequest).
    pub(crate) audiences: Vec<String>,
}

/// ServiceAccount tokens issued by this server, by token.
#[derive(Default)]
pub(crate) struct Tokens {
    issued: Mutex<HashMap<String, Issued>>,
}

impl Tokens {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Issued>> {
        self.issued.lock().unwrap_or_else(|e| e.into_inner())
    }
}
