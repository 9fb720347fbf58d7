//! Throwaway servers: nothing to start by hand.
//!
//! They live in the library, not in the dev-only test-support crate, because the CLI starts them
//! at run time too (`conform --backend postgres|cassandra`, `isolation --postgres`). Each
//! database's launcher lives beside its store (`servers/<database>/launcher.rs`), compiled only
//! with its feature; what they share is here, needs no client crate and is always built (the
//! Kafka broker's launcher uses it as well).
//!
//! Each server lives in a fresh folder under the temp dir, listens on a free loopback port, and
//! is watched by a *guardian*: a tiny detached shell that waits for the test process to exit
//! (however it exits) and then kills the server and removes its folder. So a server shared by
//! the tests of one binary outlives each test but never the binary.

pub mod toxiproxy;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Why a throwaway server's surroundings (its port, folder or guardian) could not be had, or
/// why it would not die.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("no free port: {0}")]
    NoFreePort(#[source] std::io::Error),
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the guardian (setsid sh): {0}")]
    Guardian(#[source] std::io::Error),
    #[error("processes {pids:?} still alive after kill -9")]
    StillAlive { pids: Vec<u32> },
    #[error("kill {signal} {pid}: {detail}")]
    Signal {
        pid: u32,
        signal: &'static str,
        detail: String,
    },
}

/// A free TCP port on 127.0.0.1 (bound and released; good enough for a test server).
pub fn free_port() -> Result<u16, SetupError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(SetupError::NoFreePort)
}

/// Whether this process runs as root (CI does): a server then runs as its own user, or is
/// told it may run as root.
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A new empty folder under the temp dir.
pub fn fresh_dir(prefix: &str) -> Result<PathBuf, SetupError> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
    create_dir(&dir)?;
    Ok(dir)
}

/// `mkdir -p`, the error naming the folder.
pub fn create_dir(dir: &Path) -> Result<(), SetupError> {
    std::fs::create_dir_all(dir).map_err(|source| SetupError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// Start the guardian: once this process is gone, run `cleanup` (a shell snippet).
pub fn spawn_guardian(cleanup: &str) -> Result<(), SetupError> {
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {cleanup}",
        pid = std::process::id()
    );
    Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(|_| ())
        .map_err(SetupError::Guardian)
}

/// The direct children of `pid`, from /proc.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    // pid (comm) state ppid …: comm may hold spaces, so split after the ')'.
                    let rest = &s[s.rfind(')')? + 2..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

pub fn alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped) is as good as dead here.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.rfind(')').and_then(|i| s[i + 2..].chars().next()) != Some('Z'),
        Err(_) => false,
    }
}

/// `kill -9` these processes (by id) and wait until they are gone.
pub fn kill9_and_wait(pids: &[u32], timeout: Duration) -> Result<(), SetupError> {
    for pid in pids {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let deadline = Instant::now() + timeout;
    while pids.iter().any(|p| alive(*p)) {
        if Instant::now() > deadline {
            return Err(SetupError::StillAlive {
                pids: pids.to_vec(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Freeze process `pid` (`SIGSTOP`) or thaw it (`SIGCONT`): a pause, during which its
/// connections stay open and nothing answers (a stop-the-world stall, as a long GC is).
pub fn pause_process(pid: u32, paused: bool) -> Result<(), SetupError> {
    let signal = if paused { "-STOP" } else { "-CONT" };
    let failed = |detail: String| SetupError::Signal {
        pid,
        signal,
        detail,
    };
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .map_err(|e| failed(e.to_string()))?;
    if status.success() {
        Ok(())
    } else {
        Err(failed(status.to_string()))
    }
}

/// The last lines of a log file, for error messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
