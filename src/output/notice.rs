//! The one place for byte-size formatting and the §5.4 truncation notices.

/// `51200` → `50.0KB` (1024-based, one decimal).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1}{}", UNITS[unit])
}

/// Where the full output is, for the end of a notice.
pub fn full_ref(artifact_url: Option<&str>) -> String {
    match artifact_url {
        Some(u) => format!(". Full: {u}"),
        None => ". Full output not saved".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(1536), "1.5KB");
        assert_eq!(format_size(1 << 30), "1.0GB");
        assert_eq!(format_size(5 * 1024 * 1024 + 1), "5.0MB");
    }
}
