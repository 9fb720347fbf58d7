//! Shared by the tests: a free port, a minimal HTTP client, the explorer as a child process
//! that is stopped when the test ends, and the servers behind the backend tests.

#![allow(dead_code)]

pub mod servers;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port of 127.0.0.1 that nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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

/// Runs of whitespace as one space, to compare aligned text.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `loadbearing explore CONFIG` on a free port, killed on drop.
pub struct Explorer {
    pub port: u16,
    /// What the command printed before serving: the URLs.
    pub announced: String,
    child: Child,
}

impl Explorer {
    /// Starts on a free port; another test may take the port first, so a taken one is retried.
    pub fn start(config: &str) -> Explorer {
        Explorer::start_with(config, &[])
    }

    /// Starts with extra arguments (`--set NAME=VALUE`).
    pub fn start_with(config: &str, extra: &[&str]) -> Explorer {
        for _ in 0..5 {
            if let Some(explorer) = Explorer::try_start(config, extra) {
                return explorer;
            }
        }
        panic!("explore {config}: no free port in five tries");
    }

    fn try_start(config: &str, extra: &[&str]) -> Option<Explorer> {
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_loadbearing"))
            .args(["explore", config, "--port", &port.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut announced = String::new();
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let mut stderr = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
                let _ = child.wait();
                if stderr.contains("cannot listen") {
                    return None;
                }
                panic!("explore {config} ended early:\n{announced}\n{stderr}");
            }
            announced.push_str(&line);
            if line.starts_with("Ctrl-C") {
                break;
            }
        }
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "explore {config} never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Explorer {
            port,
            announced,
            child,
        })
    }

    /// The URL printed for the shortest counterexample, if any.
    pub fn counterexample_url(&self) -> Option<String> {
        self.announced
            .lines()
            .find(|l| l.starts_with("the shortest counterexample"))
            .and_then(|l| l.split_whitespace().last())
            .map(str::to_string)
    }
}

impl Drop for Explorer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
