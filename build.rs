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
//!
//! Release builds linked by lld (rustc's default linker on x86_64 Linux since 1.90) also
//! get `link/hot-symbols.txt` as lld's `--symbol-ordering-file`: the functions a run
//! executes, laid out next to each other so that start-up faults in a few 64 KiB windows
//! of code instead of ~75 (`benches/hot_symbols.py` writes the file and says why).
//! With them go two linker scripts of `INSERT` commands only (lld keeps its own layout
//! for everything else): `link/start-code.ld` puts the C runtime's start and exit code
//! and the `.iplt` stubs before `.text`, and `link/hot-data.ld` (written by
//! `benches/hot_data.py`) gathers the read-only data a run reads right after the ELF
//! headers, instead of over 15 windows of `.rodata`. `AGENTBASH_LINK_MAP=PATH` also
//! writes lld's map, which `hot_data.py` reads.
//! `AGENTBASH_NO_CODE_ORDER=1` leaves the layout to the linker.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AGENTBASH_DYNAMIC_LINK");
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-env-changed=AGENTBASH_NO_CODE_ORDER");
    println!("cargo:rerun-if-changed=link/hot-symbols.txt");
    println!("cargo:rerun-if-changed=link/start-code.ld");
    println!("cargo:rerun-if-changed=link/hot-data.ld");
    println!("cargo:rerun-if-env-changed=AGENTBASH_LINK_MAP");
    if var("CARGO_CFG_TARGET_OS") != "linux" || !var("AGENTBASH_DYNAMIC_LINK").is_empty() {
        return;
    }
    if var("PROFILE") == "release" && var("AGENTBASH_NO_CODE_ORDER").is_empty() && links_with_lld()
    {
        let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link/hot-symbols.txt");
        if order.is_file() {
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            // Names a new build no longer has are expected (see the file's header).
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
        // hot-data.ld goes before .gcc_except_table, which only an unwinding build has
        // (lld refuses to insert before a section that is not there).
        let mut scripts = vec!["link/start-code.ld"];
        if var("CARGO_CFG_PANIC") == "unwind" {
            scripts.push("link/hot-data.ld");
        }
        for script in scripts {
            let script = Path::new(&var("CARGO_MANIFEST_DIR")).join(script);
            if script.is_file() {
                println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
            }
        }
        // `benches/hot_data.py` reads where each input section of data went.
        let map = var("AGENTBASH_LINK_MAP");
        if !map.is_empty() {
            println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}");
        }
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

/// An environment variable of the build, empty when unset.
fn var(k: &str) -> String {
    std::env::var(k).unwrap_or_default()
}

/// Whether rustc links the binaries with its own lld: its default for
/// x86_64-unknown-linux-gnu since Rust 1.90, unless a linker or linker features are
/// chosen (then the choice is the user's, and GNU ld would refuse lld's options).
fn links_with_lld() -> bool {
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    if var("TARGET") != "x86_64-unknown-linux-gnu"
        || !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty()
    {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "link-self-contained"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-V").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&out.stdout);
    let mut parts = version.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 90)
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
