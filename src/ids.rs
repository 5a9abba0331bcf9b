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
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(32);
    for x in [first, second] {
        for shift in (0..16).rev() {
            out.push(char::from(HEX[((x >> (shift * 4)) & 0xf) as usize]));
        }
    }
    out
}
