//! A group of wasmcm replicas as its Leases describe it, for the host that takes part in it and
//! for the API server's write audit that judges it: the names and labels of the group's Leases,
//! and the group's **shape** — how the replicas split the work (one leader, or N shards) and the
//! lease duration they all use.
//!
//! The group's anchor is the Lease named by `--leader-elect-resource-name` itself: a leader
//! holds it as client-go's election does, and a sharded group holds it collectively (each member
//! renews it every round). Its [`SHAPE_ANNOTATION`] says which, so that a replica run with
//! another shape sees a held anchor and takes nothing, instead of writing beside the group.
//! Shard Leases are `<prefix>-shard-<i>`, member Leases `<prefix>-member-<identity>`: only
//! those reserved names count, whatever labels other Leases carry.
//!
//! Names and parsing only: when a Lease is fresh, and who may take it, is the host's.

/// The label every Lease of a shard group carries, valued with the group's prefix.
pub const GROUP_LABEL: &str = "wasmcm.dev/shard-group";
/// The role of a group's Lease: `group` (the anchor), `member` or `shard`.
pub const ROLE_LABEL: &str = "wasmcm.dev/shard-role";
/// The shape a Lease was written under (the anchor's is the group's): [`Shape`]'s text.
pub const SHAPE_ANNOTATION: &str = "wasmcm.dev/shape";

/// How a group's replicas split the work, and the lease duration they agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shape {
    /// One leader at a time writes (client-go's election); each candidate honours the lease
    /// duration the holder declares, so candidates need not agree on it.
    Leader,
    /// `count` shards, each a Lease; every member uses Leases of `lease_seconds`.
    Shards { count: u32, lease_seconds: u32 },
}

impl Shape {
    /// The shape a Lease declares: its annotation, and for shards its `leaseDurationSeconds`.
    /// A Lease without the annotation is a plain leader election's (client-go's, or an older
    /// wasmcm's); an annotation this version cannot read is `Err` with the text.
    pub fn of_lease(annotation: Option<&str>, lease_seconds: Option<i32>) -> Result<Shape, String> {
        let text = annotation.unwrap_or("leader");
        if text == "leader" {
            return Ok(Shape::Leader);
        }
        let count = text.strip_prefix("shards=").and_then(|n| n.parse::<u32>().ok()).filter(|n| *n > 0);
        match (count, lease_seconds) {
            (Some(count), Some(s)) if s > 0 => Ok(Shape::Shards { count, lease_seconds: s as u32 }),
            _ => Err(text.to_string()),
        }
    }

    /// The annotation's value.
    pub fn annotation(&self) -> String {
        match self {
            Shape::Leader => "leader".into(),
            Shape::Shards { count, .. } => format!("shards={count}"),
        }
    }

    /// The shard count, for a sharded shape.
    pub fn shards(&self) -> Option<u32> {
        match self {
            Shape::Leader => None,
            Shape::Shards { count, .. } => Some(*count),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Leader => f.write_str("one leader"),
            Shape::Shards { count, lease_seconds } => write!(f, "{count} shards with {lease_seconds}s leases"),
        }
    }
}

/// Shard `index`'s Lease.
pub fn shard_lease(prefix: &str, index: u32) -> String {
    format!("{prefix}-shard-{index}")
}

/// The membership Lease of the replica `identity`.
pub fn member_lease(prefix: &str, identity: &str) -> String {
    format!("{prefix}-member-{identity}")
}

/// The shard a Lease named `name` is, if it is one of the group's reserved shard names.
pub fn shard_index(prefix: &str, name: &str) -> Option<u32> {
    let index = name.strip_prefix(prefix)?.strip_prefix("-shard-")?;
    // `01` or `+1` would name shard 1 a second time.
    (index == "0" || !index.starts_with(['0', '+'])).then(|| index.parse().ok()).flatten()
}

/// The identity a member Lease named `name` belongs to, if it is one of the reserved names.
pub fn member_identity<'a>(prefix: &str, name: &'a str) -> Option<&'a str> {
    name.strip_prefix(prefix)?.strip_prefix("-member-").filter(|i| !i.is_empty())
}

/// Whether a Lease named `name` is one of the group's (the anchor, a shard, a member).
pub fn is_reserved(prefix: &str, name: &str) -> bool {
    name == prefix || shard_index(prefix, name).is_some() || member_identity(prefix, name).is_some()
}

/// The Lease that entitles a write in `namespace` under `shape`: the anchor for a leader, else
/// the Lease of the namespace's shard.
pub fn entitling_lease(prefix: &str, shape: Shape, namespace: &str) -> String {
    match shape {
        Shape::Leader => prefix.to_string(),
        Shape::Shards { count, .. } => shard_lease(prefix, crate::shard_of(namespace, count)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_read_back_from_their_leases() {
        let four = Shape::Shards { count: 4, lease_seconds: 15 };
        assert_eq!(Shape::of_lease(Some(&four.annotation()), Some(15)), Ok(four));
        assert_eq!(Shape::of_lease(None, Some(15)), Ok(Shape::Leader), "a plain leader election's Lease");
        assert_eq!(Shape::of_lease(Some("leader"), None), Ok(Shape::Leader));
        for bad in ["shards=0", "shards=x", "shards", "ring=3"] {
            assert_eq!(Shape::of_lease(Some(bad), Some(15)), Err(bad.to_string()));
        }
        assert_eq!(Shape::of_lease(Some("shards=4"), None), Err("shards=4".into()), "no duration");
        assert_ne!(four, Shape::Shards { count: 4, lease_seconds: 20 }, "the duration is part of the shape");
        assert_eq!(four.to_string(), "4 shards with 15s leases");
    }

    #[test]
    fn only_the_reserved_names_are_the_groups() {
        assert_eq!(shard_index("wasmcm", "wasmcm-shard-3"), Some(3));
        assert_eq!(shard_index("wasmcm", "wasmcm-shard-0"), Some(0));
        for other in ["wasmcm-shard-03", "wasmcm-shard-+3", "wasmcm-shard-", "other-shard-3", "wasmcm-shard-3x"] {
            assert_eq!(shard_index("wasmcm", other), None, "{other}");
        }
        assert_eq!(member_identity("wasmcm", "wasmcm-member-pod-a"), Some("pod-a"));
        assert_eq!(member_identity("wasmcm", "wasmcm-member-"), None);
        assert_eq!(member_identity("wasmcm", "forged-member-a"), None);
        assert!(is_reserved("wasmcm", "wasmcm"));
        assert!(!is_reserved("wasmcm", "wasmcm-other"));
    }

    #[test]
    fn the_entitling_lease_follows_the_shape() {
        assert_eq!(entitling_lease("wasmcm", Shape::Leader, "team-a"), "wasmcm");
        let shape = Shape::Shards { count: 4, lease_seconds: 15 };
        assert_eq!(entitling_lease("wasmcm", shape, "team-a"), shard_lease("wasmcm", crate::shard_of("team-a", 4)));
    }
}
