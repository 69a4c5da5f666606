//! Shards of a collection as Kubernetes' sharded list and watch defines them (KEP-5866,
//! alpha in v1.36): a 64-bit FNV-1a hash of a field (`metadata.namespace` or `metadata.uid`)
//! placed in one of `count` contiguous ranges of the hash space, the range `i` starting at
//! `floor(i * 2^64 / count)`, and the `shardSelector` expression that asks a server for some
//! of them: `shardRange(object.metadata.namespace, '0x…', '0x…')`, several joined by `||`.
//!
//! Both sides use it: the API server to filter lists and watches by a selector (and its write
//! audit to find a write's shard), the host to place keys in shards ([`shard_of`], which mixes
//! the hash first: see there) and to ask the server for the namespaces of its shards by their
//! exact hashes ([`ShardSelector::of_values`]), so the two can never disagree.

use std::fmt::Write as _;
use std::hash::Hasher as _;

/// The field a selector hashes, as the selector names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardField {
    Namespace,
    Uid,
}

impl ShardField {
    fn path(self) -> &'static str {
        match self {
            ShardField::Namespace => "object.metadata.namespace",
            ShardField::Uid => "object.metadata.uid",
        }
    }
}

/// The FNV-1a hash of `value`'s bytes (not Rust's `Hash` of a `str`, which adds a terminator).
pub fn shard_hash(value: &str) -> u64 {
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(value.as_bytes());
    hasher.finish()
}

/// Where shard `index` of `count` starts: `floor(index * 2^64 / count)`; 2^64 for `count`.
pub fn shard_start(index: u32, count: u32) -> u128 {
    ((index as u128) << 64) / count.max(1) as u128
}

/// The shard of `count` that `value` (a namespace) is placed in: the range of the hash space
/// its *mixed* hash falls in. FNV-1a's high bits hardly depend on a string's last characters
/// (`team-00` … `team-29` all hash into one twelfth of the space), so ranges of the raw hash
/// would put a cluster's look-alike namespaces in one shard; murmur3's 64-bit finalizer first
/// spreads every bit over all of them. A server is asked for a shard's objects by the raw
/// hashes of its namespaces ([`ShardSelector::of_values`]), so the two never disagree.
pub fn shard_of(value: &str, count: u32) -> u32 {
    let mut h = shard_hash(value);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    ((h as u128 * count.max(1) as u128) >> 64) as u32
}

/// One `shardRange` of a selector: hashes in `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardRange {
    pub field: ShardField,
    pub start: u128,
    pub end: u128,
}

impl ShardRange {
    pub fn contains(&self, value: &str) -> bool {
        (self.start..self.end).contains(&(shard_hash(value) as u128))
    }
}

/// A `shardSelector`: the union of its ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardSelector {
    pub ranges: Vec<ShardRange>,
}

impl ShardSelector {
    /// The selector of `shards` (indexes of `count`) by `field`, adjacent shards merged into one
    /// range, in hash order. Empty when `shards` is.
    pub fn of_shards(field: ShardField, shards: impl IntoIterator<Item = u32>, count: u32) -> ShardSelector {
        let mut indexes: Vec<u32> = shards.into_iter().filter(|i| *i < count).collect();
        indexes.sort_unstable();
        indexes.dedup();
        let mut ranges: Vec<ShardRange> = Vec::new();
        for i in indexes {
            let (start, end) = (shard_start(i, count), shard_start(i + 1, count));
            match ranges.last_mut() {
                Some(last) if last.end == start => last.end = end,
                _ => ranges.push(ShardRange { field, start, end }),
            }
        }
        ShardSelector { ranges }
    }

    /// The selector of exactly `values` (namespaces, say): one range per distinct hash, each
    /// `[hash, hash + 1)`, adjacent ones merged, in hash order. Empty when `values` is.
    pub fn of_values<'a>(field: ShardField, values: impl IntoIterator<Item = &'a str>) -> ShardSelector {
        let mut hashes: Vec<u128> = values.into_iter().map(|v| shard_hash(v) as u128).collect();
        hashes.sort_unstable();
        hashes.dedup();
        let mut ranges: Vec<ShardRange> = Vec::new();
        for h in hashes {
            match ranges.last_mut() {
                Some(last) if last.end == h => last.end = h + 1,
                _ => ranges.push(ShardRange { field, start: h, end: h + 1 }),
            }
        }
        ShardSelector { ranges }
    }

    /// Whether an object with this namespace and uid is selected.
    pub fn matches(&self, namespace: &str, uid: &str) -> bool {
        self.ranges.iter().any(|r| {
            r.contains(match r.field {
                ShardField::Namespace => namespace,
                ShardField::Uid => uid,
            })
        })
    }

    /// Parses the `shardSelector` query parameter.
    pub fn parse(text: &str) -> Result<ShardSelector, String> {
        let mut ranges = Vec::new();
        for term in text.split("||") {
            ranges.push(parse_range(term.trim()).map_err(|why| format!("{why} in {:?}", term.trim()))?);
        }
        Ok(ShardSelector { ranges })
    }
}

fn parse_range(term: &str) -> Result<ShardRange, String> {
    let args = term
        .strip_prefix("shardRange(")
        .and_then(|t| t.strip_suffix(')'))
        .ok_or("expected shardRange(<field>, '<hexStart>', '<hexEnd>')")?;
    let parts: Vec<&str> = args.split(',').map(str::trim).collect();
    let [field, start, end] = parts[..] else {
        return Err("shardRange takes a field and two bounds".into());
    };
    let field = match field {
        "object.metadata.namespace" => ShardField::Namespace,
        "object.metadata.uid" => ShardField::Uid,
        other => {
            return Err(format!(
                "unsupported field {other:?}: supported are object.metadata.uid and object.metadata.namespace"
            ));
        }
    };
    let bound = |text: &str| -> Result<u128, String> {
        let hex = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .and_then(|t| t.strip_prefix("0x"))
            .ok_or_else(|| format!("bound {text} must be a single-quoted hex string starting with 0x"))?;
        let value = u128::from_str_radix(hex, 16).map_err(|_| format!("bound {text} is not hexadecimal"))?;
        if value > 1 << 64 {
            return Err(format!("bound {text} is past 0x10000000000000000"));
        }
        Ok(value)
    };
    let (start, end) = (bound(start)?, bound(end)?);
    if start >= end {
        return Err("the start must be below the end".into());
    }
    Ok(ShardRange { field, start, end })
}

impl std::fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                out.push_str(" || ");
            }
            let _ = write!(out, "shardRange({}, '0x{:016x}', '0x{:016x}')", r.field.path(), r.start, r.end);
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_of_known_inputs() {
        // The FNV-1a test vectors: the offset basis for "", and "a".
        assert_eq!(shard_hash(""), 0xcbf29ce484222325);
        assert_eq!(shard_hash("a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn look_alike_namespaces_spread_over_the_shards() {
        // Raw FNV-1a ranges put all 30 in one of 12 shards; placement must not.
        let mut load = [0u32; 12];
        for ns in (0..30).map(|i| format!("team-{i:02}")) {
            load[shard_of(&ns, 12) as usize] += 1;
        }
        assert!(load.iter().all(|l| *l <= 6), "{load:?}");
        assert!(load.iter().filter(|l| **l > 0).count() >= 9, "{load:?}");
        let raw: std::collections::BTreeSet<u128> =
            (0..30).map(|i| (shard_hash(&format!("team-{i:02}")) as u128 * 12) >> 64).collect();
        assert_eq!(raw.len(), 1, "FNV-1a's high bits cluster look-alike names (why placement mixes them)");
    }

    #[test]
    fn a_selector_of_values_selects_exactly_them() {
        let held = ["team-03", "payments", "kube-system"];
        let s = ShardSelector::of_values(ShardField::Namespace, held);
        assert_eq!(s.ranges.len(), 3);
        for ns in held {
            assert!(s.matches(ns, ""), "{ns}");
        }
        for ns in ["team-04", "default", ""] {
            assert!(!s.matches(ns, ""), "{ns}");
        }
        assert_eq!(ShardSelector::parse(&s.to_string()), Ok(s));
    }

    #[test]
    fn selectors_print_as_the_kep_and_parse_back() {
        let half = ShardSelector::of_shards(ShardField::Uid, [0], 2);
        assert_eq!(half.to_string(), "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')");
        let quarters = ShardSelector::of_shards(ShardField::Namespace, [3, 0, 1], 4);
        assert_eq!(
            quarters.to_string(),
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || \
             shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')"
        );
        assert_eq!(ShardSelector::parse(&quarters.to_string()), Ok(quarters));
        assert_eq!(
            ShardSelector::parse("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
                .map(|s| s.ranges.len()),
            Ok(1)
        );
    }

    #[test]
    fn bad_selectors_say_why() {
        for (text, why) in [
            ("shardRange(object.metadata.name, '0x0', '0x1')", "unsupported field"),
            ("shardRange(object.metadata.uid, 0x0, '0x1')", "single-quoted"),
            ("shardRange(object.metadata.uid, '0x2', '0x1')", "below the end"),
            ("shardRange(object.metadata.uid, '0x0', '0x20000000000000000')", "past"),
            ("labels", "expected shardRange"),
        ] {
            let error = ShardSelector::parse(text).expect_err(text);
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
