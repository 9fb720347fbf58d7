//! Shared by the workspace's test binaries, and only by them (it is only ever a
//! `[dev-dependencies]` entry): the rule for a server-backed test whose server is missing, free
//! ports, a minimal HTTP client, and a child process stopped when the test ends.
//!
//! The server launchers are not here: the CLI starts them at run time too
//! (`conform --backend postgres|cassandra|kafka`, `isolation --postgres`), so they stay in the
//! implementation crates behind their features (`loadbearing_impls::harness`,
//! `loadbearing_impls_kafka::harness`).

use std::fmt::Display;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::sync::OnceLock;
use std::time::Duration;

/// Is the test run in CI (`CI=true` or `CI=1`), where nothing may be skipped?
pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false)
}

/// A test cannot run because `reason` (its server is unavailable). In CI that fails the test;
/// elsewhere it prints `skipped: <test>: <reason>` straight to the process's stderr (libtest
/// captures a passing test's `eprintln!`, and a skip must be seen), with a banner the first
/// time in a test binary, and the test returns.
pub fn skip_or_fail(test: &str, reason: &dyn Display) {
    if in_ci() {
        panic!("CI=true and {test} cannot run (nothing may be skipped in CI): {reason}");
    }
    let mut err = std::io::stderr().lock();
    static BANNER: OnceLock<()> = OnceLock::new();
    BANNER.get_or_init(|| {
        let _ = writeln!(
            err,
            "\n==================== SKIPPED ====================\n\
             skipped: {reason}\n\
             (the tests of this binary that need it pass without running; CI=true fails instead)\n\
             ================================================="
        );
    });
    let _ = writeln!(err, "skipped: {test}: {reason}");
}

/// The server `started`, or `None` after [`skip_or_fail`].
pub fn or_skip<T, E: Display>(test: &str, started: Result<T, E>) -> Option<T> {
    match started {
        Ok(server) => Some(server),
        Err(reason) => {
            skip_or_fail(test, &reason);
            None
        }
    }
}

/// A port of 127.0.0.1 that nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One HTTP/1.0 request: the status code and the body. A connection reset (the explorer's
/// HTTP server drops a connection now and then under load) is retried a few times.
pub fn http(port: u16, method: &str, path: &str) -> (u16, String) {
    let mut attempt = 0;
    loop {
        match try_http(port, method, path) {
            Ok(response) => return response,
            Err(e) if attempt < 5 && e.kind() == std::io::ErrorKind::ConnectionReset => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(50 * attempt));
            }
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }
}

fn try_http(port: u16, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    Ok((status, body.to_string()))
}

/// A child process killed (and reaped) when the guard is dropped, so a failing test leaves
/// nothing running.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
