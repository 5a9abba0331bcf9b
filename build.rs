//! Link the `agentbash` binary static and position-dependent on Linux with glibc.
//!
//! Start-up is paid on every run (README "Benchmarks"). As a dynamically linked PIE,
//! the loader maps three libraries, binds their symbols and applies ~20 000 relative
//! relocations (copying every page they touch) before `main` — about half a
//! millisecond, a third of what `bash -c true` costs in total. A static,
//! fixed-address executable starts with none of that (and runs on any Linux).
//!
//! rustc's `crt-static` target feature cannot be set for the binary alone (it also
//! applies to proc-macros, which must be dynamic), and rustc names the system
//! libraries after a `-Bdynamic` we cannot move. So the binaries get `-static -no-pie`
//! and a directory, searched before the system ones, of one-line linker scripts that
//! resolve `-lc`, `-lm`, … to the static archives (and `-lgcc_s`, which has none, to
//! `libgcc_eh.a`). The library, tests and proc-macros link as usual.
//!
//! When an archive cannot be found (no static glibc installed) the binary is linked
//! dynamically, non-PIE; `AGENTBASH_DYNAMIC_LINK=1` asks for the ordinary dynamic PIE.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AGENTBASH_DYNAMIC_LINK");
    println!("cargo:rerun-if-env-changed=CC");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || !var("AGENTBASH_DYNAMIC_LINK").is_empty() {
        return;
    }
    // musl targets already link a static PIE with musl's own start code (rcrt1.o),
    // which `-no-pie` would break (it crashes before `main`).
    if var("CARGO_CFG_TARGET_ENV") == "musl" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    if var("CARGO_CFG_TARGET_ENV") != "gnu" || var("TARGET") != var("HOST") {
        return;
    }
    let out = PathBuf::from(var("OUT_DIR")).join("static-link");
    if let Err(e) = write_shims(&out) {
        println!("cargo:warning=linking agentbash dynamically: {e}");
        return;
    }
    println!("cargo:rustc-link-arg-bins=-static");
    println!("cargo:rustc-link-arg-bins=-L{}", out.display());
}

/// `dir/libNAME.a` for every system library rustc names, each a linker script
/// pointing at the real static archive.
fn write_shims(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let archive = |name: &str| -> Result<PathBuf, String> {
        let out = Command::new(&cc)
            .arg(format!("-print-file-name={name}"))
            .output()
            .map_err(|e| format!("{cc}: {e}"))?;
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        // Without the archive, cc echoes the bare name back.
        if p.is_absolute() && p.is_file() {
            Ok(p)
        } else {
            Err(format!("no {name} found by {cc}"))
        }
    };
    let shims = [
        ("c", "libc.a"),
        ("m", "libm.a"),
        ("pthread", "libpthread.a"),
        ("rt", "librt.a"),
        ("dl", "libdl.a"),
        ("util", "libutil.a"),
        ("gcc_s", "libgcc_eh.a"),
    ];
    for (lib, real) in shims {
        let real = archive(real)?;
        let shim = dir.join(format!("lib{lib}.a"));
        std::fs::write(&shim, format!("INPUT({})\n", real.display()))
            .map_err(|e| format!("{}: {e}", shim.display()))?;
    }
    Ok(())
}
