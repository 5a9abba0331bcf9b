//! The syscall filter every sandboxed command gets: the calls a confined build, test or
//! script never needs and an escape always does (mounting, loading kernel code, other
//! namespaces, the key ring, io_uring's side door, the clock, the host name) fail with
//! `EPERM`, so a program that probes for them degrades instead of dying.
//!
//! Built with `seccompiler` (rust-vmm, the compiler Firecracker uses): pure Rust, so the
//! static build needs no C library, it compiles the program at run time in a few
//! microseconds, and its argument conditions take masks (needed to refuse only the
//! `CLONE_NEWUSER` bit of `unshare` and `clone`). libseccomp would add a C dependency
//! for features we do not use. The program is built once per process in the parent and
//! installed in the child with one `seccomp(2)` call on that memory: nothing is
//! allocated between fork and exec.
//!
//! Two programs are installed: the `EPERM` list, and one that answers `clone3` with
//! `ENOSYS` (its flags live in memory a filter cannot read, so it cannot be checked for
//! `CLONE_NEWUSER`; C libraries fall back to `clone`, whose flags can be). A foreign
//! architecture's calls (i386's `int 0x80` on x86_64) kill the process: the filter
//! cannot read their numbers as ours. On x86_64 the x32 numbers of every listed call are
//! refused too.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Refused outright: (name, number).
fn refused() -> Vec<(&'static str, i64)> {
    use libc::*;
    let mut calls = vec![
        ("mount", SYS_mount),
        ("umount2", SYS_umount2),
        ("pivot_root", SYS_pivot_root),
        ("move_mount", SYS_move_mount),
        ("open_tree", SYS_open_tree),
        ("fsopen", SYS_fsopen),
        ("fsconfig", SYS_fsconfig),
        ("fsmount", SYS_fsmount),
        ("fspick", SYS_fspick),
        ("mount_setattr", SYS_mount_setattr),
        ("swapon", SYS_swapon),
        ("swapoff", SYS_swapoff),
        ("reboot", SYS_reboot),
        ("kexec_load", SYS_kexec_load),
        ("kexec_file_load", SYS_kexec_file_load),
        ("init_module", SYS_init_module),
        ("finit_module", SYS_finit_module),
        ("delete_module", SYS_delete_module),
        ("bpf", SYS_bpf),
        ("perf_event_open", SYS_perf_event_open),
        ("keyctl", SYS_keyctl),
        ("add_key", SYS_add_key),
        ("request_key", SYS_request_key),
        ("open_by_handle_at", SYS_open_by_handle_at),
        ("setns", SYS_setns),
        ("io_uring_setup", SYS_io_uring_setup),
        ("io_uring_enter", SYS_io_uring_enter),
        ("io_uring_register", SYS_io_uring_register),
        ("userfaultfd", SYS_userfaultfd),
        ("settimeofday", SYS_settimeofday),
        ("clock_settime", SYS_clock_settime),
        ("clock_adjtime", SYS_clock_adjtime),
        ("adjtimex", SYS_adjtimex),
        ("sethostname", SYS_sethostname),
        ("setdomainname", SYS_setdomainname),
        ("acct", SYS_acct),
        ("quotactl", SYS_quotactl),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        ("iopl", SYS_iopl),
        ("ioperm", SYS_ioperm),
        ("uselib", SYS_uselib),
    ]);
    calls
}

/// What `agentbash sandbox check` lists: every refused call, and the conditional ones.
pub fn described() -> Vec<String> {
    let mut out: Vec<String> = refused()
        .into_iter()
        .map(|(name, _)| name.to_string())
        .collect();
    out.push("unshare/clone with CLONE_NEWUSER".into());
    out.push("ioctl TIOCSTI/TIOCLINUX (typing into a terminal)".into());
    out.push("clone3 (ENOSYS: the C library falls back to clone)".into());
    out
}

#[cfg(target_arch = "x86_64")]
const ARCH: Option<TargetArch> = Some(TargetArch::x86_64);
#[cfg(target_arch = "aarch64")]
const ARCH: Option<TargetArch> = Some(TargetArch::aarch64);
#[cfg(target_arch = "riscv64")]
const ARCH: Option<TargetArch> = Some(TargetArch::riscv64);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
const ARCH: Option<TargetArch> = None;

/// x32 calls on x86_64 carry this bit in their number.
#[cfg(target_arch = "x86_64")]
const X32: Option<i64> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32: Option<i64> = None;

/// The two programs, in the order they are installed; `None` on an architecture
/// seccompiler does not target (the sandbox then says the filter is missing).
pub fn programs() -> Option<&'static [BpfProgram; 2]> {
    static PROGRAMS: OnceLock<Option<[BpfProgram; 2]>> = OnceLock::new();
    PROGRAMS.get_or_init(|| build().ok()).as_ref()
}

fn masked(arg: u8, mask: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(vec![SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(mask),
        mask,
    )?])
}

fn equal(arg: u8, value: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(vec![SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        value,
    )?])
}

/// `ioctl` requests that type into a terminal (`TIOCSTI`) or reach the console
/// (`TIOCLINUX`): the command's own terminal may be the user's.
// The requests' type differs between targets (u64 on some, u32 on others).
#[allow(clippy::unnecessary_cast)]
fn typing_ioctls() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    Ok(vec![
        equal(1, libc::TIOCSTI as u64)?,
        equal(1, libc::TIOCLINUX as u64)?,
    ])
}

fn build() -> Result<[BpfProgram; 2], String> {
    let arch = ARCH.ok_or("no seccomp compiler for this architecture")?;
    let err = |e: seccompiler::BackendError| e.to_string();
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (_, nr) in refused() {
        rules.insert(nr, Vec::new());
    }
    let newuser = libc::CLONE_NEWUSER as u64;
    rules.insert(libc::SYS_unshare, vec![masked(0, newuser).map_err(err)?]);
    // clone's flags are its first argument on every architecture we target.
    rules.insert(libc::SYS_clone, vec![masked(0, newuser).map_err(err)?]);
    // The request is an int: compare its 32 bits only (a 64-bit compare was bypassed
    // with the high bits set, CVE-2019-10063).
    rules.insert(libc::SYS_ioctl, typing_ioctls().map_err(err)?);
    if let Some(bit) = X32 {
        let x32: Vec<(i64, Vec<SeccompRule>)> =
            rules.iter().map(|(nr, r)| (nr | bit, r.clone())).collect();
        rules.extend(x32);
        // x32's own ioctl number (its ABI differs from x86_64's there).
        rules.insert(514 | bit, typing_ioctls().map_err(err)?);
    }
    let eperm = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let mut clone3 = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    if let Some(bit) = X32 {
        clone3.insert(libc::SYS_clone3 | bit, Vec::new());
    }
    let enosys = SeccompFilter::new(
        clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let eperm: BpfProgram = eperm
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let enosys: BpfProgram = enosys
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    Ok([eperm, enosys])
}

/// Install `programs` on the calling thread. Runs between fork and exec: no allocation.
/// `no_new_privs` must already be set (or the caller hold `CAP_SYS_ADMIN`).
pub(super) fn install(programs: &[BpfProgram; 2]) -> Result<(), i32> {
    for program in programs {
        let fprog = libc::sock_fprog {
            len: program.len() as u16,
            filter: program.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: the kernel copies the program out of `fprog` during the call; both
        // live on our stack or in the parent-built program for its duration.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &fprog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            // SAFETY: reading the thread's errno.
            return Err(unsafe { *libc::__errno_location() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_build_and_list_what_they_refuse() {
        let programs = programs().expect("this architecture has a compiler");
        assert!(programs.iter().all(|p| !p.is_empty()));
        let listed = described();
        for name in ["mount", "setns", "bpf", "sethostname", "io_uring_setup"] {
            assert!(listed.iter().any(|l| l == name), "{name}: {listed:?}");
        }
    }
}
