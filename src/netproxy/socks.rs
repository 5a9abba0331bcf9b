//! The SOCKS5 side of the proxy (RFC 1928): no authentication, `CONNECT` only, with a
//! host name (`socks5h://`, the proxy resolves) or an address. `BIND` and
//! `UDP ASSOCIATE` are answered "command not supported".

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::http::Target;
use crate::sandbox::Destination;

/// Reply codes.
pub(super) const GENERAL_FAILURE: u8 = 0x01;
pub(super) const NOT_ALLOWED: u8 = 0x02;
pub(super) const HOST_UNREACHABLE: u8 = 0x04;
pub(super) const CONNECTION_REFUSED: u8 = 0x05;
const COMMAND_NOT_SUPPORTED: u8 = 0x07;
const ADDRESS_NOT_SUPPORTED: u8 = 0x08;

/// Read the greeting and the request (the version byte is already read); answer the
/// greeting. `Ok(None)` once a reply already told the client why not.
pub(super) async fn request(
    client: &mut TcpStream,
    within: Duration,
) -> std::io::Result<Option<Target>> {
    match tokio::time::timeout(within, read_request(client)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

async fn read_request(client: &mut TcpStream) -> std::io::Result<Option<Target>> {
    let methods = client.read_u8().await?;
    let mut offered = vec![0u8; usize::from(methods)];
    client.read_exact(&mut offered).await?;
    if !offered.contains(&0) {
        // "No acceptable methods": we take no credentials.
        client.write_all(&[5, 0xff]).await?;
        return Ok(None);
    }
    client.write_all(&[5, 0]).await?;
    let mut fixed = [0u8; 4];
    client.read_exact(&mut fixed).await?;
    let [version, command, _, kind] = fixed;
    if version != 5 {
        return Ok(None);
    }
    let host = match kind {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await?;
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        3 => {
            let len = client.read_u8().await?;
            let mut name = vec![0u8; usize::from(len)];
            client.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => {
            reply(client, ADDRESS_NOT_SUPPORTED).await?;
            return Ok(None);
        }
    };
    let port = client.read_u16().await?;
    if command != 1 {
        reply(client, COMMAND_NOT_SUPPORTED).await?;
        return Ok(None);
    }
    let Some(destination) = Destination::parse(&host).filter(|_| port != 0) else {
        reply(client, GENERAL_FAILURE).await?;
        return Ok(None);
    };
    Ok(Some(Target {
        host,
        destination,
        port,
    }))
}

/// Answer the request with `code` (0: succeeded); the bound address is not told.
pub(super) async fn reply(client: &mut TcpStream, code: u8) -> std::io::Result<()> {
    client.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}
