//! The guest's `cache` imports: `get`, `list` and `list-controlled` over the view the caller
//! gave the call, each refused (trapping the call) for a kind the plugin did not declare, a
//! selector past the caps, or an answer larger than one list, one call or the memory budget
//! may hold.
//!
//! It reads the view only; it never writes, and what the view holds is the caller's.

use wasmcm_guest::{Kind, Operator, Requirement, Selector};

use super::call::{CallState, CapabilityViolation, mib, size};
use super::wit::{kind_from_wit, wit_cache, wit_types};

impl CallState {
    fn check_readable(&mut self, kind: Kind) -> wasmtime::Result<Kind> {
        if self.readable.contains(&kind) {
            return Ok(kind);
        }
        let msg = format!("read of {kind}, a kind the plugin did not declare");
        self.violation = Some(msg.clone());
        Err(CapabilityViolation(msg).into())
    }

    /// The host's copy of the last read's answer is gone: the guest, calling the host again,
    /// has been handed it (it lives on in linear memory, which is charged as it grows).
    fn copy_dropped(&mut self) {
        self.budget.give_back(std::mem::take(&mut self.copy));
    }

    /// Hands `objects` to the guest if they fit what one list and one call may read, and the
    /// host's memory budget: these copies are the host's memory until the guest has them.
    fn hand_out(&mut self, what: &str, objects: Vec<String>) -> wasmtime::Result<Vec<String>> {
        let bytes: usize = objects.iter().map(String::len).sum();
        self.read_bytes = self.read_bytes.saturating_add(bytes);
        let refused = if objects.len() > MAX_LIST_OBJECTS {
            Some(format!("{what} matched more than {MAX_LIST_OBJECTS} objects"))
        } else if bytes > MAX_LIST_BYTES {
            Some(format!("{what} matched more than {} of objects", mib(MAX_LIST_BYTES)))
        } else if self.read_bytes > MAX_CALL_READ_BYTES {
            Some(format!("the call read more than {} of objects", mib(MAX_CALL_READ_BYTES)))
        } else {
            None
        };
        if let Some(why) = refused {
            self.read_limit = Some(why.clone());
            return Err(CapabilityViolation(why).into());
        }
        // Overhead of a string beside its bytes (the guest's copy is charged as it grows).
        let copy = bytes + objects.len() * size_of::<String>();
        if !self.budget.try_take(copy) {
            let why = format!(
                "the host's memory budget for plugin calls ({}) cannot hold the {} {what} returned, beside what \
                 this and other calls hold",
                mib(self.budget.total()),
                size(copy)
            );
            self.budget_refused = Some(why.clone());
            return Err(CapabilityViolation(why).into());
        }
        self.copy = copy;
        Ok(objects)
    }

    /// Refuses a selector whose matching would cost more than any controller needs.
    fn check_selector(&mut self, selector: &Selector) -> wasmtime::Result<()> {
        let requirements = selector.match_labels.len() + selector.match_expressions.len();
        let values = selector.match_expressions.iter().map(|r| r.values.len()).max().unwrap_or(0);
        let why = if requirements > MAX_SELECTOR_REQUIREMENTS {
            format!("a selector of {requirements} requirements; at most {MAX_SELECTOR_REQUIREMENTS}")
        } else if values > MAX_SELECTOR_VALUES {
            format!("a selector requirement of {values} values; at most {MAX_SELECTOR_VALUES}")
        } else {
            return Ok(());
        };
        self.read_limit = Some(why.clone());
        Err(CapabilityViolation(why).into())
    }
}

/// Objects one `list` may return: a namespace of thousands of pods fits, a cluster-wide list
/// of a large cluster does not (`list-controlled` costs what the owner controls).
pub(crate) const MAX_LIST_OBJECTS: usize = 20_000;
/// Bytes of objects one `list` may return.
pub(crate) const MAX_LIST_BYTES: usize = 64 << 20;
/// Bytes of objects one call may read over all its `get`s and `list`s.
const MAX_CALL_READ_BYTES: usize = 128 << 20;
/// A selector's requirements, and values of one requirement: matching costs their product per
/// object, and every object of a namespace may be matched.
const MAX_SELECTOR_REQUIREMENTS: usize = 64;
const MAX_SELECTOR_VALUES: usize = 256;

impl CallState {
    /// `cache.get`, in either contract.
    pub(super) fn read_get(&mut self, kind: Kind, namespace: &str, name: &str) -> wasmtime::Result<Option<String>> {
        self.copy_dropped();
        let kind = self.check_readable(kind)?;
        let object = self.cache.get(&kind, namespace, name);
        Ok(self.hand_out("get", object.into_iter().collect())?.pop())
    }

    /// `cache.list`, in either contract.
    pub(super) fn read_list(
        &mut self,
        kind: Kind,
        namespace: &str,
        selector: Selector,
    ) -> wasmtime::Result<Vec<String>> {
        self.copy_dropped();
        let kind = self.check_readable(kind)?;
        self.check_selector(&selector)?;
        let objects = self.cache.list(&kind, namespace, &selector);
        self.hand_out(&format!("list of {kind}"), objects)
    }

    /// `cache.list-controlled`, in either contract.
    pub(super) fn read_list_controlled(
        &mut self,
        kind: Kind,
        namespace: &str,
        owner_uid: &str,
        orphans: bool,
    ) -> wasmtime::Result<Vec<String>> {
        self.copy_dropped();
        let kind = self.check_readable(kind)?;
        let objects = self.cache.list_controlled(&kind, namespace, owner_uid, orphans);
        self.hand_out(&format!("list-controlled of {kind}"), objects)
    }
}

/// The contract's operator as the host's.
fn operator(op: wit_types::Operator) -> Operator {
    match op {
        wit_types::Operator::In => Operator::In,
        wit_types::Operator::NotIn => Operator::NotIn,
        wit_types::Operator::Exists => Operator::Exists,
        wit_types::Operator::DoesNotExist => Operator::DoesNotExist,
    }
}

pub(super) fn selector_from_wit(selector: wit_types::Selector) -> Selector {
    Selector {
        match_labels: selector.match_labels,
        match_expressions: selector
            .match_expressions
            .into_iter()
            .map(|r| Requirement { key: r.key, operator: operator(r.operator), values: r.values })
            .collect(),
    }
}

impl wit_types::Host for CallState {}

impl wit_cache::Host for CallState {
    fn get(&mut self, kind: wit_types::Kind, namespace: String, name: String) -> wasmtime::Result<Option<String>> {
        self.read_get(kind_from_wit(kind), &namespace, &name)
    }

    fn list(
        &mut self,
        kind: wit_types::Kind,
        namespace: String,
        selector: wit_types::Selector,
    ) -> wasmtime::Result<Vec<String>> {
        self.read_list(kind_from_wit(kind), &namespace, selector_from_wit(selector))
    }

    fn list_controlled(
        &mut self,
        kind: wit_types::Kind,
        namespace: String,
        owner_uid: String,
        orphans: bool,
    ) -> wasmtime::Result<Vec<String>> {
        self.read_list_controlled(kind_from_wit(kind), &namespace, &owner_uid, orphans)
    }
}
