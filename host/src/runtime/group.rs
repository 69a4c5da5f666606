//! Whether this replica agrees with its group's shape, and telling whoever watches when it does
//! not. The group's anchor Lease (`wasmcm_core::group`) records how the replicas split the work:
//! one leader, or N shards with one lease duration. A replica run otherwise (another
//! `--shards`, another `--leader-elect-lease-duration` for shards, leader election beside a
//! sharded group or the reverse) sees the anchor held by the group and takes nothing: the
//! elector and the shard loop say so here, and [`report`] turns it into a log line, the
//! `wasmcm_group_shape_mismatch` gauge, a Warning event on the anchor Lease and a `/readyz`
//! line, once per disagreement.
//!
//! It owns the report only; reading and writing the Leases is `leader`'s and `shards`'.

use std::sync::Arc;

use tokio::sync::watch;
use wasmcm_core::group::Shape;
use wasmcm_guest::{Event, EventType, ObjectRef};

use crate::metrics::Metrics;
use crate::writes::writer::WriteApi;

/// This replica's standing in its group, as its last read of the anchor Lease found it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Agreement {
    /// No group: a host without election, or the anchor not read yet.
    #[default]
    Unknown,
    /// The group's shape is this replica's.
    Agrees(Shape),
    /// The anchor is held, and not in this replica's shape: it takes nothing until the group's
    /// replicas have gone (its Lease released, or not renewed for its duration).
    Disagrees {
        /// The anchor Lease, `namespace/name`.
        anchor: String,
        group: Result<Shape, String>,
        /// Who renewed the anchor last.
        holder: String,
        mine: Shape,
    },
}

impl Agreement {
    /// Why this replica takes nothing, for logs, events and `/readyz`; `None` while it agrees.
    pub fn disagreement(&self) -> Option<String> {
        let Agreement::Disagrees { anchor, group, holder, mine } = self else { return None };
        let group = match group {
            Ok(shape) => shape.to_string(),
            Err(text) => format!("an unknown shape ({text:?})"),
        };
        Some(format!(
            "the replica group runs as {group} (Lease {anchor}, renewed by {holder}); this replica is run as {mine}, \
             so it takes nothing until that group's replicas have gone (see deploy/README.md, \"Changing the shape \
             of a group\")"
        ))
    }
}

/// Where the elector or the shard loop says what it found.
pub(crate) type Standing = watch::Sender<Agreement>;

/// Reports each change of `standing`: a disagreement is logged (WARN), counted in the gauge and
/// recorded as a Warning event on the anchor Lease once; its end is logged (INFO).
pub(crate) async fn report(
    mut standing: watch::Receiver<Agreement>,
    anchor: ObjectRef,
    identity: String,
    metrics: Arc<Metrics>,
    events: Arc<impl WriteApi + Send + 'static>,
) {
    let mut disagreed = false;
    loop {
        let now = standing.borrow_and_update().clone();
        match now.disagreement() {
            Some(why) if !disagreed => {
                disagreed = true;
                metrics.group_shape_mismatch.set(1);
                tracing::warn!(identity, "{why}");
                let event = Event {
                    regarding: anchor.clone(),
                    event_type: EventType::Warning,
                    reason: "ShapeMismatch".into(),
                    message: format!("{identity}: {why}"),
                };
                if let Err(e) = events.record_event(&event, None).await {
                    tracing::debug!("recording an event: {e}");
                }
            }
            None if disagreed && now != Agreement::Unknown => {
                disagreed = false;
                metrics.group_shape_mismatch.set(0);
                tracing::info!(identity, "the replica group's shape is this replica's now: taking part");
            }
            _ => {}
        }
        if standing.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disagreement_names_both_shapes_and_the_way_out() {
        let d = Agreement::Disagrees {
            anchor: "wasmcm/wasmcm".into(),
            group: Ok(Shape::Shards { count: 4, lease_seconds: 15 }),
            holder: "wasmcm-a".into(),
            mine: Shape::Shards { count: 3, lease_seconds: 15 },
        };
        let why = d.disagreement().unwrap();
        assert!(why.contains("4 shards with 15s leases (Lease wasmcm/wasmcm, renewed by wasmcm-a)"), "{why}");
        assert!(why.contains("run as 3 shards with 15s leases, so it takes nothing"), "{why}");
        assert_eq!(Agreement::Agrees(Shape::Leader).disagreement(), None);
    }
}
