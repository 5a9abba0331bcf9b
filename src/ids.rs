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

/// A hard-to-guess token (delimiters, sentinels); not for security.
pub fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let local = 0u8;
    let seed = format!("{t}-{n}-{}-{:p}", std::process::id(), &local);
    format!(
        "{:016x}{:016x}",
        fnv64(seed.as_bytes()),
        fnv64(format!("{seed}!").as_bytes())
    )
}
