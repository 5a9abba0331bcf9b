//! Readiness by port: the port accepts a connection *and* the listener is a socket
//! one of the job's own processes holds. A listener someone else already had on that
//! port (the job then fails with "Address already in use") never makes it ready.

use std::collections::HashMap;

/// Inodes of the sockets listening on TCP `port`, as the network namespace of `pid`
/// sees them (a sandboxed job may have a namespace of its own).
fn listening_inodes(pid: i32, port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_ascii_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (Some(local), Some(st), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let lport = local
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if *st == "0A"
                && lport == Some(port)
                && let Ok(i) = inode.parse::<u64>()
                && i != 0
            {
                out.push(i);
            }
        }
    }
    out
}

/// The live descendants of `root` (itself excluded).
pub fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for pid in rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat[i + 2..].split_ascii_whitespace().nth(1)?.parse().ok());
            if let Some(ppid) = ppid {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            out.push(c);
            stack.push(c);
        }
    }
    out
}

/// Whether one of `pids` holds a socket listening on `port`.
pub fn owns_listener(pids: &[i32], port: u16) -> bool {
    let Some(&first) = pids.first() else {
        return false;
    };
    let inodes = listening_inodes(first, port);
    if inodes.is_empty() {
        return false;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    pids.iter().any(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|rd| {
                rd.flatten().any(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| wanted.iter().any(|w| l.as_os_str() == w.as_str()))
                })
            })
            .unwrap_or(false)
    })
}

/// Whether `port` on the loopback accepts a connection now.
pub fn accepts(port: u16) -> bool {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
    let limit = std::time::Duration::from_millis(200);
    [
        SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
    ]
    .iter()
    .any(|a| TcpStream::connect_timeout(a, limit).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_of_this_process_is_found_and_another_port_is_not() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let me = std::process::id() as i32;
        assert!(owns_listener(&[me], port));
        assert!(accepts(port));
        drop(l);
        assert!(!owns_listener(&[me], port));
    }
}
