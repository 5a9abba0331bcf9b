//! The socket bound into the command's network namespace for a network allowlist.
//!
//! A socket belongs to the network namespace it was created in, wherever its
//! descriptor goes afterwards. So the namespace's init (a fork of agentbash, inside the
//! new user and network namespaces and holding every capability there) brings the
//! namespace's loopback up, listens on `127.0.0.1:PORT` and hands the listening
//! socket to agentbash over a unix socket pair the spawner made (`SCM_RIGHTS`), before
//! it forks the command. agentbash, in the host's namespace, accepts the command's
//! connections on that descriptor and makes its own outward ones: the namespace has no
//! other interface and no route, so the proxy is its only way out. (Joining the namespace
//! from agentbash with `setns` would need `CAP_SYS_ADMIN` over the namespace's owner,
//! which only root has.)
//!
//! [`Prepared::open_proxy_port`] runs in init, a fork of a multi-threaded program: raw
//! system calls on the stack only, no allocation, no lock.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::Prepared;
use super::child::{ChildError, ChildStep, fail};

/// `struct ifreq` with the flags member of its union (40 bytes on Linux).
#[repr(C)]
struct IfFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

const _: () = assert!(size_of::<IfFlags>() == 40);

/// Control-message space for one descriptor (`CMSG_SPACE(sizeof(int))`), aligned.
#[repr(C, align(8))]
struct FdMessage([u8; 32]);

impl Prepared {
    /// In init, inside the new network namespace: loopback up, a listening socket on
    /// `127.0.0.1:PORT` (the proxy plan's port), sent to the parent over `channel`.
    /// Init keeps no copy. A no-op without a proxy plan.
    pub fn open_proxy_port(&self, channel: libc::c_int) -> Result<(), ChildError> {
        let Some(plan) = &self.proxy else {
            return Ok(());
        };
        // SAFETY: raw system calls on stack data only.
        unsafe {
            loopback_up()?;
            let listener = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if listener < 0 {
                return Err(fail(ChildStep::Network, 1));
            }
            let result = listen_and_send(listener, plan.port, channel);
            libc::close(listener);
            result
        }
    }
}

/// SAFETY: raw system calls on stack data.
unsafe fn loopback_up() -> Result<(), ChildError> {
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(fail(ChildStep::Network, 0));
        }
        let mut req = IfFlags {
            name: [0; libc::IFNAMSIZ],
            flags: 0,
            _rest: [0; 22],
        };
        req.name[..2].copy_from_slice(b"lo");
        let mut rc = libc::ioctl(
            s,
            libc::SIOCGIFFLAGS as libc::Ioctl,
            &mut req as *mut IfFlags,
        );
        if rc == 0 {
            req.flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(s, libc::SIOCSIFFLAGS as libc::Ioctl, &req as *const IfFlags);
        }
        let error = (rc != 0).then(|| fail(ChildStep::Network, 0));
        libc::close(s);
        error.map_or(Ok(()), Err)
    }
}

/// SAFETY: `listener` is an open TCP socket, `channel` a unix socket; stack data only.
unsafe fn listen_and_send(
    listener: libc::c_int,
    port: u16,
    channel: libc::c_int,
) -> Result<(), ChildError> {
    unsafe {
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
            sin_zero: [0; 8],
        };
        if libc::bind(
            listener,
            (&addr as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
        {
            return Err(fail(ChildStep::Network, 2));
        }
        if libc::listen(listener, 1024) != 0 {
            return Err(fail(ChildStep::Network, 3));
        }
        let mut byte = [b'p'];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = FdMessage([0; 32]);
        let space = libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as usize;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), listener);
        if libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) != 1 {
            return Err(fail(ChildStep::Network, 4));
        }
        Ok(())
    }
}

/// The listening socket init sent (without waiting: init sends it before it forks the
/// command, so it is there once the command has started). Close-on-exec.
pub fn receive_listener(channel: &OwnedFd) -> std::io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = FdMessage([0; 32]);
    // SAFETY: a zeroed msghdr is valid; every pointer in it outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    // SAFETY: as above.
    let n = unsafe {
        libc::recvmsg(
            channel.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel filled `control` up to msg_controllen; the macros only walk it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n == 1
            && !cmsg.is_null()
            && (*cmsg).cmsg_level == libc::SOL_SOCKET
            && (*cmsg).cmsg_type == libc::SCM_RIGHTS
        {
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
            if fd >= 0 {
                return Ok(OwnedFd::from_raw_fd(fd));
            }
        }
    }
    Err(std::io::Error::other(
        "the namespace's init sent no listening socket",
    ))
}
