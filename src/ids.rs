//! Small identities: a stable 64-bit hash of bytes and hard-to-guess tokens.

/// FNV-1a, 64 bit: a stable hash for cache keys and change detection (not security).
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// `bytes` as lowercase hex digits, two a byte (a digest, a token). Not `format!` a
/// byte at a time: a run hashes what it sources on its way to the spawn.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// Lowercase hex SHA-256 of `bytes` (a trust record, a snapshot's seal).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// A hard-to-guess token (delimiters, sentinels); not for security: 32 hex digits.
pub fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let local = 0u8;
    // The time, a counter, the pid and a stack address, as bytes (no formatting: a
    // run makes several of these on its way to the spawn).
    let mut seed = [0u8; 37];
    seed[..16].copy_from_slice(&t.to_le_bytes());
    seed[16..24].copy_from_slice(&n.to_le_bytes());
    seed[24..28].copy_from_slice(&std::process::id().to_le_bytes());
    seed[28..36].copy_from_slice(&(std::ptr::addr_of!(local) as usize as u64).to_le_bytes());
    let first = fnv64(&seed[..36]);
    seed[36] = b'!';
    let second = fnv64(&seed);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&first.to_be_bytes());
    bytes[8..].copy_from_slice(&second.to_be_bytes());
    hex(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
        // The SHA-256 of "abc" (FIPS 180-2's first example).
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let token = nonce();
        assert_eq!(token.len(), 32);
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(token, nonce());
    }
}
