//! A throwaway [Toxiproxy](https://github.com/Shopify/toxiproxy) server: a TCP proxy between
//! our clients and a real server whose faults (a reset, a stall, a cut) are switched on and off
//! through its HTTP API while traffic flows. `.ci/setup.d/12-toxiproxy.sh` installs it; the
//! binary is `LOADBEARING_TOXIPROXY`, else `toxiproxy-server` on the PATH.
//!
//! The API is spoken with a few lines of HTTP/1.1 over a `TcpStream` (JSON bodies, one request
//! per connection): five calls on loopback do not justify an HTTP client crate and its TLS stack.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, spawn_guardian, SetupError};

#[derive(Debug, thiserror::Error)]
pub enum ToxiproxyError {
    #[error("no Toxiproxy server: set LOADBEARING_TOXIPROXY or put toxiproxy-server on the PATH (.ci/setup.d/12-toxiproxy.sh installs it)")]
    NotInstalled,
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot start {}: {source}", bin.display())]
    Spawn {
        bin: PathBuf,
        source: std::io::Error,
    },
    #[error("Toxiproxy did not answer on 127.0.0.1:{port} within 20 s")]
    NoAnswer { port: u16 },
    #[error("Toxiproxy API {method} {path}: {reason}")]
    Api {
        method: &'static str,
        path: String,
        reason: String,
    },
}

/// The server's binary, or why there is none.
pub fn find_bin() -> Result<PathBuf, ToxiproxyError> {
    if let Some(bin) = std::env::var_os("LOADBEARING_TOXIPROXY").map(PathBuf::from) {
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(ToxiproxyError::NotInstalled)
        };
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("toxiproxy-server"))
        .find(|p| p.is_file())
        .ok_or(ToxiproxyError::NotInstalled)
}

/// A running Toxiproxy server on a free loopback port, killed when dropped (and, should this
/// process die first, by a guardian).
pub struct Toxiproxy {
    port: u16,
    child: Child,
}

/// A fault Toxiproxy applies to a proxy's traffic (its "toxics", in our words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toxic {
    /// Every connection is reset (TCP RST) as data arrives: a connection reset mid-statement.
    ResetPeer,
    /// No data passes in either direction, and nothing is closed, until the toxic is removed: a
    /// stalled network.
    Stall,
    /// Each chunk of data is held this many milliseconds before it passes.
    Latency { millis: u32 },
}

impl Toxic {
    fn body(self, name: &str) -> String {
        let (kind, attributes) = match self {
            Toxic::ResetPeer => ("reset_peer", r#"{"timeout":0}"#.to_string()),
            Toxic::Stall => ("timeout", r#"{"timeout":0}"#.to_string()),
            Toxic::Latency { millis } => {
                ("latency", format!(r#"{{"latency":{millis},"jitter":0}}"#))
            }
        };
        format!(
            r#"{{"name":"{name}","type":"{kind}","stream":"downstream","toxicity":1.0,"attributes":{attributes}}}"#
        )
    }
}

impl Toxiproxy {
    pub fn start() -> Result<Toxiproxy, ToxiproxyError> {
        let bin = find_bin()?;
        let port = free_port()?;
        let child = Command::new(&bin)
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| ToxiproxyError::Spawn {
                bin: bin.clone(),
                source,
            })?;
        spawn_guardian(&format!("kill -9 {} 2>/dev/null", child.id()))?;
        let server = Toxiproxy { port, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.request("GET", "/version", "").is_err() {
            if Instant::now() > deadline {
                return Err(ToxiproxyError::NoAnswer { port });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    /// One API call: the response body of a 2xx answer.
    fn request(
        &self,
        method: &'static str,
        path: &str,
        body: &str,
    ) -> Result<String, ToxiproxyError> {
        let api = |reason: String| ToxiproxyError::Api {
            method,
            path: path.to_string(),
            reason,
        };
        let mut stream =
            TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| api(e.to_string()))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| api(e.to_string()))?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .map_err(|e| api(e.to_string()))?;
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .map_err(|e| api(e.to_string()))?;
        let status: u16 = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| api(format!("not an HTTP answer: {response:.80}")))?;
        let body = response
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        if (200..300).contains(&status) {
            Ok(body)
        } else {
            Err(api(format!("HTTP {status}: {}", body.trim())))
        }
    }

    /// A new proxy to `upstream` (`127.0.0.1:5432`), listening on a free loopback port.
    pub fn proxy(&self, name: &str, upstream: &str) -> Result<Proxy<'_>, ToxiproxyError> {
        self.proxy_at(name, free_port()?, upstream)
    }

    /// A handle to the proxy made earlier as `name`, listening on `listen`.
    pub fn existing(&self, name: &str, listen: u16) -> Proxy<'_> {
        Proxy {
            server: self,
            name: name.to_string(),
            listen,
        }
    }

    /// A new proxy to `upstream` listening on `127.0.0.1:{listen}`: for a server that must be
    /// told the proxy's address before it starts (a Kafka broker advertises it).
    pub fn proxy_at(
        &self,
        name: &str,
        listen: u16,
        upstream: &str,
    ) -> Result<Proxy<'_>, ToxiproxyError> {
        self.request(
            "POST",
            "/proxies",
            &format!(
                r#"{{"name":"{name}","listen":"127.0.0.1:{listen}","upstream":"{upstream}","enabled":true}}"#
            ),
        )?;
        Ok(Proxy {
            server: self,
            name: name.to_string(),
            listen,
        })
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One proxy of a [`Toxiproxy`] server.
pub struct Proxy<'t> {
    server: &'t Toxiproxy,
    name: String,
    listen: u16,
}

impl Proxy<'_> {
    /// The port clients connect to instead of the server's.
    pub fn port(&self) -> u16 {
        self.listen
    }

    /// Starts `toxic` on the traffic from the server to the clients.
    pub fn add(&self, toxic: Toxic) -> Result<(), ToxiproxyError> {
        self.server
            .request(
                "POST",
                &format!("/proxies/{}/toxics", self.name),
                &toxic.body("fault"),
            )
            .map(|_| ())
    }

    /// Ends the toxic [`Proxy::add`] started.
    pub fn remove(&self) -> Result<(), ToxiproxyError> {
        self.server
            .request(
                "DELETE",
                &format!("/proxies/{}/toxics/fault", self.name),
                "",
            )
            .map(|_| ())
    }

    /// Cuts the proxy (every connection closed, new ones refused) or restores it.
    pub fn set_enabled(&self, enabled: bool) -> Result<(), ToxiproxyError> {
        self.server
            .request(
                "POST",
                &format!("/proxies/{}", self.name),
                &format!(r#"{{"enabled":{enabled}}}"#),
            )
            .map(|_| ())
    }
}
