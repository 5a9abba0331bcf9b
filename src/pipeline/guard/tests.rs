use super::component_matches;

#[test]
fn globs_match_like_bash() {
    for (p, n, want) in [
        ("*", "usr", true),
        ("u*", "usr", true),
        ("*r", "usr", true),
        ("u?r", "usr", true),
        ("[a-v]sr", "usr", true),
        ("[!u]sr", "usr", false),
        ("\\*", "*", true),
        ("\\*", "usr", false),
        ("*", ".ssh", false),
        (".*", ".ssh", true),
        ("*a*b*c", "xaybzc", true),
        ("*a*b*c", "xaybz", false),
        ("us", "usr", false),
        ("usr*", "usr", true),
    ] {
        assert_eq!(component_matches(p, n), want, "{p} vs {n}");
    }
}

#[test]
fn hostile_globs_stay_fast() {
    let p = "*a".repeat(5000);
    let n = "a".repeat(10_000) + "b";
    let t = std::time::Instant::now();
    assert!(!component_matches(&p, &n));
    assert!(t.elapsed() < crate::harness::scaled(std::time::Duration::from_secs(5)));
}
