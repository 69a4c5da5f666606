//! Names the API server makes up: `generateName` suffixes and uids. The randomness is the
//! caller's (an API server draws it, `simulate` seeds it), so the formats live in one place.

/// `k8s.io/apimachinery/pkg/util/rand`'s alphanumerics without vowels and look-alikes, which
/// generated names and `pod-template-hash` values are spelled in.
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `rand.SafeEncodeString`: each character mapped onto [`SAFE_ALPHABET`] (no words, no
/// look-alikes), as the deployment controller spells `pod-template-hash`.
pub fn safe_encode(s: &str) -> String {
    s.chars().map(|c| char::from(SAFE_ALPHABET[c as usize % SAFE_ALPHABET.len()])).collect()
}

/// A generateName suffix of `bytes.len()` characters from random bytes.
pub fn suffix(bytes: &[u8]) -> String {
    bytes.iter().map(|b| SAFE_ALPHABET[usize::from(*b) % SAFE_ALPHABET.len()] as char).collect()
}

/// A version-4 UUID from 16 random bytes, as `metadata.uid` is spelled.
pub fn uid(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(suffix(&[0, 1, 26, 27, 255]), "bc9bq");
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        assert_eq!(uid([0xff; 16]), "ffffffff-ffff-4fff-bfff-ffffffffffff");
    }
}
