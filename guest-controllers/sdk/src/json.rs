//! JSON helpers for building and adjusting objects.

use serde_json::Value;

/// RFC 7386 JSON merge patch (what `kubectl patch --type=merge` sends): objects merge key by
/// key, `null` removes a key, anything else replaces. Handy to change an object read from the
/// cache before sending it back in an update.
///
/// ```
/// use serde_json::json;
/// use wasmcm_guest::json::merge_patch;
///
/// let mut object = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "data": {"k": "v"}});
/// merge_patch(&mut object, json!({"metadata": {"labels": {"x": null, "z": "3"}}, "data": {"k": "w"}}));
/// assert_eq!(object, json!({"metadata": {"name": "a", "labels": {"y": "2", "z": "3"}}, "data": {"k": "w"}}));
/// ```
pub fn merge_patch(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(&k);
                } else {
                    merge_patch(t.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_replaces_and_removes() {
        let mut v = json!({"a": {"b": 1, "c": 2}, "d": [1], "e": 3});
        merge_patch(&mut v, json!({"a": {"b": 9, "c": null}, "d": [2, 3], "f": {"g": 1}}));
        assert_eq!(v, json!({"a": {"b": 9}, "d": [2, 3], "e": 3, "f": {"g": 1}}));
    }
}
