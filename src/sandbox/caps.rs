//! Capabilities a sandboxed command may hold: none in the host's user namespace.
//!
//! Two cases:
//! - The command runs in a user namespace of its own (the namespaces engine): whatever
//!   it holds there is the namespace's, worth nothing over the host (no device nodes,
//!   no host network, no modules, no clock). When it is root inside, it keeps the few
//!   file capabilities a root user expects of its own files (`chown`, override of
//!   permission bits, `setuid`/`setgid` to another mapped id, signalling its own
//!   processes); everything else is dropped from the bounding set, so no exec gets it
//!   back.
//! - No user namespace (the landlock engine, or a machine without user namespaces) and
//!   root: every set is emptied and root's special treatment at exec is switched off
//!   and locked (`SECBIT_NOROOT`), so execve cannot hand them back.
//!
//! The order matters (capabilities(7)): securebits and the bounding set need
//! `CAP_SETPCAP`, so they come before `capset` clears it. Runs between fork and exec:
//! raw syscalls on stack data only.

/// Capabilities root keeps inside its own user namespace (bit numbers).
const ROOT_IN_NAMESPACE: &[u32] = &[
    0, // CAP_CHOWN
    1, // CAP_DAC_OVERRIDE
    2, // CAP_DAC_READ_SEARCH
    3, // CAP_FOWNER
    4, // CAP_FSETID
    5, // CAP_KILL
    6, // CAP_SETGID
    7, // CAP_SETUID
];

/// What [`drop`] leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Nothing, and root gains nothing at exec (no user namespace).
    Nothing,
    /// The file capabilities of [`ROOT_IN_NAMESPACE`], valid in the command's own user
    /// namespace only.
    NamespaceRoot,
}

impl Keep {
    fn mask(self) -> u64 {
        match self {
            Keep::Nothing => 0,
            Keep::NamespaceRoot => ROOT_IN_NAMESPACE.iter().fold(0, |m, c| m | 1 << c),
        }
    }
}

const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

fn errno() -> i32 {
    // SAFETY: reading the thread's errno.
    unsafe { *libc::__errno_location() }
}

/// Whether this process holds `CAP_SETPCAP` in its user namespace (what every step
/// below but `capset` needs). Without it (an ordinary user outside any namespace of
/// its own) there is nothing to drop: exec gives a non-root user no capabilities, and
/// `no_new_privs` makes file capabilities and set-uid bits inert.
fn may_change_bounding_set() -> bool {
    // SAFETY: PR_CAPBSET_READ of a valid capability number only reads.
    let has = unsafe {
        libc::prctl(libc::PR_CAPBSET_READ, 8 /* CAP_SETPCAP */, 0, 0, 0)
    } == 1;
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    // SAFETY: capget fills two data structs of version 3 through valid pointers.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    has && rc == 0 && data[0].effective & (1 << 8) != 0
}

/// Drop every capability but `keep`'s, so that neither this process nor anything it
/// execs holds more. Returns the errno of the step that failed.
pub(super) fn drop(keep: Keep) -> Result<(), i32> {
    if !may_change_bounding_set() {
        // SAFETY: PR_CAP_AMBIENT takes integer arguments only.
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            )
        };
        return Ok(());
    }
    let mask = keep.mask();
    if keep == Keep::Nothing {
        let bits = SECBIT_NOROOT
            | SECBIT_NOROOT_LOCKED
            | SECBIT_NO_SETUID_FIXUP
            | SECBIT_NO_SETUID_FIXUP_LOCKED
            | SECBIT_KEEP_CAPS_LOCKED
            | SECBIT_NO_CAP_AMBIENT_RAISE
            | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        // SAFETY: PR_SET_SECUREBITS takes an integer.
        if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) } != 0 {
            return Err(errno());
        }
    }
    let mut cap: libc::c_ulong = 0;
    loop {
        if mask & (1 << cap) == 0 {
            // SAFETY: PR_CAPBSET_DROP takes a capability number.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
                match errno() {
                    // Past the kernel's last capability.
                    libc::EINVAL => break,
                    e => return Err(e),
                }
            }
        }
        cap += 1;
        if cap >= 64 {
            break;
        }
    }
    // SAFETY: PR_CAP_AMBIENT takes integer arguments only.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(errno());
    }
    let low = mask as u32;
    let high = (mask >> 32) as u32;
    let data = [
        CapData {
            effective: low,
            permitted: low,
            inheritable: 0,
        },
        CapData {
            effective: high,
            permitted: high,
            inheritable: 0,
        },
    ];
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    // SAFETY: capset reads the header and two data structs through valid pointers.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(errno());
    }
    Ok(())
}
