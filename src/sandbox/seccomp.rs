//! The syscall filter every sandboxed command gets: the calls a confined build, test or
//! script never needs and an escape always does (mounting, loading kernel code, other
//! namespaces, the key ring, io_uring's side door, the clock, the host name) fail with
//! `EPERM`, so a program that probes for them degrades instead of dying.
//!
//! The program is generated here, not by a library. seccompiler (rust-vmm, the compiler
//! Firecracker uses) was the first choice: pure Rust, no C library to link statically.
//! But it emits one comparison per syscall in a row, has one action per program (so
//! `clone3`'s `ENOSYS` needed a second program) and cannot test a range of numbers (so
//! the x32 numbers doubled the list), and the kernel emulates a new filter once for
//! every syscall number when it is installed (to cache the calls it always allows): that
//! linear chain cost 0.34 ms of every sandboxed run (`perf record`, 5% of a run's CPU).
//! libseccomp builds balanced trees but is a C dependency. What is needed is small: a
//! sorted list searched as a binary tree, a range test, four kinds of leaf — about a
//! hundred instructions, each checked by the tests below against a reference of what
//! the filter must answer for every number.
//!
//! What it answers:
//! - a foreign architecture's call (i386's `int 0x80` on x86_64): the process is
//!   killed (the numbers would not be ours to read);
//! - any x32 call (x86_64 numbers with bit 30 set): `EPERM`;
//! - the [`refused`] calls: `EPERM`;
//! - `unshare` and `clone` with `CLONE_NEWUSER`: `EPERM` (other flags pass);
//! - `clone3`: `ENOSYS` (its flags are in memory a filter cannot read; C libraries fall
//!   back to `clone`, whose flags can be checked);
//! - `ioctl` `TIOCSTI` and `TIOCLINUX` (typing into a terminal; the request is compared
//!   as 32 bits, since a 64-bit compare was bypassed with the high bits set,
//!   CVE-2019-10063): `EPERM`;
//! - everything else: allowed.
//!
//! It is built once per process in the parent and installed in the child with one
//! `seccomp(2)` call on that memory: nothing is allocated between fork and exec.

use std::sync::OnceLock;

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
    if X32.is_some() {
        out.push("every x32 call".into());
    }
    out
}

#[cfg(target_arch = "x86_64")]
const ARCH: Option<u32> = Some(0xC000_003E); // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const ARCH: Option<u32> = Some(0xC000_00B7); // AUDIT_ARCH_AARCH64
#[cfg(target_arch = "riscv64")]
const ARCH: Option<u32> = Some(0xC000_00F3); // AUDIT_ARCH_RISCV64
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
const ARCH: Option<u32> = None;

/// x32 calls on x86_64 carry this bit in their number.
#[cfg(target_arch = "x86_64")]
const X32: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32: Option<u32> = None;

// Offsets in `struct seccomp_data` (little-endian: an argument's low 32 bits first).
const NR: u32 = 0;
const ARCH_OFFSET: u32 = 4;
const ARG0: u32 = 16;
const ARG1: u32 = 24;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

const fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// What the filter does with one syscall number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    Refuse,
    NoSys,
    /// Refuse when argument 0 has `CLONE_NEWUSER`.
    NoNewUser,
    /// Refuse the terminal-typing `ioctl` requests (argument 1).
    NoTyping,
}

fn leaves() -> Vec<(u32, Leaf)> {
    let mut v: Vec<(u32, Leaf)> = refused()
        .into_iter()
        .map(|(_, nr)| (nr as u32, Leaf::Refuse))
        .collect();
    v.push((libc::SYS_clone3 as u32, Leaf::NoSys));
    v.push((libc::SYS_unshare as u32, Leaf::NoNewUser));
    v.push((libc::SYS_clone as u32, Leaf::NoNewUser));
    v.push((libc::SYS_ioctl as u32, Leaf::NoTyping));
    v.sort_unstable_by_key(|&(nr, _)| nr);
    v.dedup_by_key(|&mut (nr, _)| nr);
    v
}

/// The instructions of one leaf's action, each path ending in a `ret`.
// The ioctl requests' type differs between targets (u64 on some, u32 on others).
#[allow(clippy::unnecessary_cast)]
fn action(leaf: Leaf) -> Vec<libc::sock_filter> {
    match leaf {
        Leaf::Refuse => vec![insn(RET, 0, 0, errno(libc::EPERM))],
        Leaf::NoSys => vec![insn(RET, 0, 0, errno(libc::ENOSYS))],
        Leaf::NoNewUser => vec![
            insn(LD_W_ABS, 0, 0, ARG0),
            insn(JSET, 0, 1, libc::CLONE_NEWUSER as u32),
            insn(RET, 0, 0, errno(libc::EPERM)),
            insn(RET, 0, 0, ALLOW),
        ],
        Leaf::NoTyping => vec![
            insn(LD_W_ABS, 0, 0, ARG1),
            insn(JEQ, 2, 0, libc::TIOCSTI as u32),
            insn(JEQ, 1, 0, libc::TIOCLINUX as u32),
            insn(RET, 0, 0, ALLOW),
            insn(RET, 0, 0, errno(libc::EPERM)),
        ],
    }
}

/// A binary search over `entries` (sorted), the number in the accumulator: every path
/// ends in a `ret`. Errors when a jump would not fit BPF's 8-bit offsets.
fn search(entries: &[(u32, Leaf)]) -> Result<Vec<libc::sock_filter>, String> {
    match entries {
        [] => Ok(vec![insn(RET, 0, 0, ALLOW)]),
        [(nr, leaf)] => {
            let body = action(*leaf);
            let skip = u8::try_from(body.len()).map_err(|_| "a leaf too long")?;
            let mut code = vec![insn(JEQ, 0, skip, *nr)];
            code.extend(body);
            code.push(insn(RET, 0, 0, ALLOW));
            Ok(code)
        }
        _ => {
            let mid = entries.len() / 2;
            let left = search(&entries[..mid])?;
            let right = search(&entries[mid..])?;
            let over = u8::try_from(left.len())
                .map_err(|_| "a subtree too long for an 8-bit jump".to_string())?;
            let mut code = vec![insn(JGE, over, 0, entries[mid].0)];
            code.extend(left);
            code.extend(right);
            Ok(code)
        }
    }
}

fn build() -> Result<Vec<libc::sock_filter>, String> {
    let arch = ARCH.ok_or("no syscall filter for this architecture")?;
    let mut code = vec![
        insn(LD_W_ABS, 0, 0, ARCH_OFFSET),
        insn(JEQ, 1, 0, arch),
        insn(RET, 0, 0, KILL),
        insn(LD_W_ABS, 0, 0, NR),
    ];
    if let Some(bit) = X32 {
        code.push(insn(JGE, 0, 1, bit));
        code.push(insn(RET, 0, 0, errno(libc::EPERM)));
    }
    code.extend(search(&leaves())?);
    if code.len() > usize::from(u16::MAX) {
        return Err("the filter is too long".into());
    }
    Ok(code)
}

/// The program, built once; `None` on an architecture without one (the sandbox then
/// says the filter is missing).
pub fn program() -> Option<&'static [libc::sock_filter]> {
    static PROGRAM: OnceLock<Option<Vec<libc::sock_filter>>> = OnceLock::new();
    PROGRAM.get_or_init(|| build().ok()).as_deref()
}

/// Install `program` on the calling thread. Runs between fork and exec: no allocation.
/// `no_new_privs` must already be set (or the caller hold `CAP_SYS_ADMIN`).
pub(super) fn install(program: &[libc::sock_filter]) -> Result<(), i32> {
    let fprog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies the program out of `fprog` during the call; both live
    // on our stack or in the parent-built program for its duration.
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel would answer: a tiny interpreter for the instructions we emit.
    fn run(program: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 2]) -> u32 {
        let mut data = [0u8; 40];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        data[16..24].copy_from_slice(&args[0].to_le_bytes());
        data[24..32].copy_from_slice(&args[1].to_le_bytes());
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = program[pc];
            match i.code {
                LD_W_ABS => {
                    let at = i.k as usize;
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
                    pc += 1;
                }
                JEQ | JGE | JSET => {
                    let taken = match i.code {
                        JEQ => acc == i.k,
                        JGE => acc >= i.k,
                        _ => acc & i.k != 0,
                    };
                    pc += 1 + usize::from(if taken { i.jt } else { i.jf });
                }
                RET => return i.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    /// What the filter must answer, straight from the lists.
    fn expected(nr: u32, args: [u64; 2]) -> u32 {
        if X32.is_some_and(|bit| nr & bit != 0) {
            return errno(libc::EPERM);
        }
        if refused().iter().any(|&(_, n)| n as u32 == nr) {
            return errno(libc::EPERM);
        }
        let newuser = args[0] as u32 & libc::CLONE_NEWUSER as u32 != 0;
        match i64::from(nr) {
            n if n == libc::SYS_clone3 => errno(libc::ENOSYS),
            n if (n == libc::SYS_unshare || n == libc::SYS_clone) && newuser => errno(libc::EPERM),
            #[allow(clippy::unnecessary_cast)]
            n if n == libc::SYS_ioctl
                && (args[1] as u32 == libc::TIOCSTI as u32
                    || args[1] as u32 == libc::TIOCLINUX as u32) =>
            {
                errno(libc::EPERM)
            }
            _ => ALLOW,
        }
    }

    #[test]
    #[allow(clippy::unnecessary_cast)]
    fn the_program_answers_every_number_as_the_lists_say() {
        let program = program().expect("this architecture has a filter");
        let arch = ARCH.expect("arch");
        let argsets: [[u64; 2]; 5] = [
            [0, 0],
            [libc::CLONE_NEWUSER as u64, 0],
            [libc::CLONE_NEWNS as u64 | libc::SIGCHLD as u64, 0],
            [0, libc::TIOCSTI as u64],
            // The high half set: still the same 32-bit request.
            [0, (1u64 << 32) | libc::TIOCLINUX as u64],
        ];
        for nr in (0..1024u32).chain([0x4000_0000, 0x4000_0000 + 165, u32::MAX]) {
            for args in argsets {
                assert_eq!(
                    run(program, arch, nr, args),
                    expected(nr, args),
                    "syscall {nr} with {args:x?}"
                );
            }
        }
        // Another architecture's call is killed.
        assert_eq!(run(program, 0x4000_0003, 1, [0, 0]), KILL);
        assert!(program.len() < 200, "{} instructions", program.len());
    }

    #[test]
    fn the_list_is_described() {
        let listed = described();
        for name in ["mount", "setns", "bpf", "sethostname", "io_uring_setup"] {
            assert!(listed.iter().any(|l| l == name), "{name}: {listed:?}");
        }
    }
}
