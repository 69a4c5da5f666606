//! The write audit: for every request that would change something, who sent it (the user after
//! impersonation, and its User-Agent), when it arrived, what it asked for, how it was answered,
//! and who held the Lease that entitles a writer when it arrived, read from the Lease's own
//! `holderIdentity`, `renewTime` and `leaseDurationSeconds` — the fields of a kube-apiserver
//! audit event (`user`, `userAgent`, `verb`, `objectRef`, `responseStatus`,
//! `requestReceivedTimestamp`) plus the one a leader-election test needs. With it a test proves
//! that no write came from a process that was not the Lease's valid holder at the time.
//!
//! The Lease is one named Lease (a leader's); or, for writers sharded by namespace, the Lease
//! of the shard the write's namespace falls in ([`AuditLease::Shards`], placed by the same hash
//! as `shardSelector`); or whichever of those a wasmcm replica group's anchor Lease says entitles
//! the write when it arrives ([`AuditLease::Group`], `wasmcm_core::group`): its holder's for a
//! leader, its shard's for N shards, so that writes of replicas beside the group in another shape
//! are caught.
//!
//! Off unless a Lease is named. It records; it judges nothing and refuses nothing.

use std::sync::Mutex;

use serde_json::Value;

use crate::request_info::RequestInfo;
use crate::storage::change::Key;
use crate::storage::store::Store;
use crate::user::UserInfo;

/// One write, as it arrived.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditRecord {
    /// When the request arrived (the server's clock).
    pub received: jiff::Timestamp,
    /// The user it acted as (the impersonated one, if any).
    pub user: String,
    pub user_agent: String,
    /// create, update, patch, delete, deletecollection.
    pub verb: String,
    /// `pods`, `replicasets/status`, ...
    pub resource: String,
    pub namespace: String,
    /// Empty for a create (the name is in the body, or generated).
    pub name: String,
    /// The answer's HTTP status.
    pub code: u16,
    /// The audited Lease's name (the shard's, for [`AuditLease::Shards`]).
    pub lease_name: String,
    /// The audited Lease as it stood when the request arrived; `None` if it did not exist.
    pub lease: Option<LeaseState>,
}

/// Which Lease entitles a write.
#[derive(Clone, Debug)]
pub enum AuditLease {
    /// One Lease, every write (leader election).
    Single { namespace: String, name: String },
    /// The Lease of the write's shard: `leases[shard_of(namespace, leases.len())]`.
    Shards { namespace: String, leases: Vec<String> },
    /// The Lease a wasmcm replica group's anchor `name` says entitles the write: the anchor for
    /// a leader, else its shard's under the anchor's shard count.
    Group { namespace: String, name: String },
}

#[derive(Clone, Debug, PartialEq)]
pub struct LeaseState {
    pub holder: String,
    pub renew_time: Option<jiff::Timestamp>,
    pub duration_seconds: i64,
}

impl AuditRecord {
    /// Who validly held the Lease when this write arrived: its holder, if the holder's last
    /// renewal had not expired by then.
    pub fn valid_holder(&self) -> Option<&str> {
        let lease = self.lease.as_ref()?;
        let renewed = lease.renew_time?;
        let expires = renewed.checked_add(jiff::SignedDuration::from_secs(lease.duration_seconds)).ok()?;
        (!lease.holder.is_empty() && self.received <= expires).then_some(lease.holder.as_str())
    }
}

pub(crate) struct Audit {
    lease: AuditLease,
    records: Mutex<Vec<AuditRecord>>,
}

impl Audit {
    pub(crate) fn new(lease: AuditLease) -> Self {
        Audit { lease, records: Mutex::default() }
    }

    /// The Lease a write in `namespace` is entitled by.
    fn lease_for(&self, store: &Store, namespace: &str) -> Key {
        use wasmcm_core::group::{self, Shape};
        let key = |namespace: &str, name: String| Key {
            id: "coordination.k8s.io/leases".into(),
            namespace: namespace.into(),
            name,
        };
        match &self.lease {
            AuditLease::Single { namespace, name } => key(namespace, name.clone()),
            AuditLease::Shards { namespace: lease_namespace, leases } => {
                let shard = wasmcm_core::shard_of(namespace, leases.len() as u32) as usize;
                key(lease_namespace, leases.get(shard).cloned().unwrap_or_default())
            }
            AuditLease::Group { namespace: lease_namespace, name } => {
                let anchor = store.get(&key(lease_namespace, name.clone()));
                let shape = anchor.and_then(|a| {
                    let annotation = a.get("metadata")?.get("annotations").and_then(|m| m.get(group::SHAPE_ANNOTATION));
                    let seconds = a.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64);
                    Shape::of_lease(annotation.and_then(Value::as_str), seconds.map(|s| s as i32)).ok()
                });
                key(lease_namespace, group::entitling_lease(name, shape.unwrap_or(Shape::Leader), namespace))
            }
        }
    }

    /// The record of a request that arrived at `received`, if it is a write (its Lease as `store`
    /// holds it then); completed by [`Audit::answered`].
    pub(crate) fn arrived(
        &self,
        store: &Store,
        received: jiff::Timestamp,
        user: &UserInfo,
        user_agent: &str,
        request: &RequestInfo,
    ) -> Option<AuditRecord> {
        if !request.resource_request
            || !matches!(request.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
        {
            return None;
        }
        let key = self.lease_for(store, &request.namespace);
        let lease = store.get(&key).map(|l| {
            let spec = l.get("spec").cloned().unwrap_or(Value::Null);
            LeaseState {
                holder: spec.get("holderIdentity").and_then(Value::as_str).unwrap_or("").into(),
                renew_time: spec.get("renewTime").and_then(Value::as_str).and_then(|t| t.parse().ok()),
                duration_seconds: spec.get("leaseDurationSeconds").and_then(Value::as_i64).unwrap_or(0),
            }
        });
        let resource = match request.subresource.as_str() {
            "" => request.resource.clone(),
            sub => format!("{}/{sub}", request.resource),
        };
        Some(AuditRecord {
            received,
            user: user.name.clone(),
            user_agent: user_agent.into(),
            verb: request.verb.clone(),
            resource,
            namespace: request.namespace.clone(),
            name: request.name.clone(),
            code: 0,
            lease_name: key.name,
            lease,
        })
    }

    pub(crate) fn answered(&self, mut record: AuditRecord, code: u16) {
        record.code = code;
        if let Ok(mut records) = self.records.lock() {
            records.push(record);
        }
    }

    /// The records so far, in order of their answers, forgotten here.
    pub(crate) fn take(&self) -> Vec<AuditRecord> {
        self.records.lock().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default()
    }
}
