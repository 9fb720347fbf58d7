//! A throwaway PostgreSQL cluster: `initdb` + `pg_ctl` from Debian's `postgresql` package (or
//! `$LOADBEARING_PG_BIN`), run as the `postgres` user when the tests run as root (CI does), on
//! a free loopback port. Removed by its guardian when the test process exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::harness::{
    free_port, fresh_dir, is_root, kill9_and_wait, spawn_guardian, tail, SetupError,
};

/// Why the throwaway cluster could not be had (or crashed and restarted).
#[derive(Debug, thiserror::Error)]
pub enum PgServerError {
    #[error("LOADBEARING_PG_BIN={} holds no initdb", .0.display())]
    NoInitdbIn(PathBuf),
    #[error(
        "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb, no pg_config; \
         install Debian's `postgresql` package or set LOADBEARING_PG_BIN)"
    )]
    NotInstalled,
    #[error("running as root but cannot chown the cluster folder to the `postgres` user")]
    Chown,
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot run {}: {source}", tool.display())]
    Run {
        tool: PathBuf,
        source: std::io::Error,
    },
    /// `output`: the tool's stdout and stderr.
    #[error("initdb failed: {output}")]
    Initdb { output: String },
    /// `output`: the tool's stdout and stderr; `log`: the server log's last lines.
    #[error("pg_ctl start failed: {output}\n{log}")]
    PgCtlStart { output: String, log: String },
    #[error("no postmaster.pid: {0}")]
    NoPidFile(#[source] std::io::Error),
    #[error("unreadable postmaster.pid")]
    BadPidFile,
}

/// A finished tool's stdout then stderr, as its error shows them.
fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub struct PgServer {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

/// The folder holding `initdb` and `pg_ctl`.
pub fn find_bin() -> Result<PathBuf, PgServerError> {
    if let Ok(dir) = std::env::var("LOADBEARING_PG_BIN") {
        let dir = PathBuf::from(dir);
        if !dir.join("initdb").exists() {
            return Err(PgServerError::NoInitdbIn(dir));
        }
        return Ok(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    if let Ok(o) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        if dir.join("initdb").exists() {
            return Ok(dir);
        }
    }
    Err(PgServerError::NotInstalled)
}

impl PgServer {
    /// initdb a new cluster and start it.
    pub fn start() -> Result<PgServer, PgServerError> {
        let bin = find_bin()?;
        let as_postgres = is_root();
        let dir = fresh_dir("loadbearing-pg")?;
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                return Err(PgServerError::Chown);
            }
        }
        let data = dir.join("data");
        let server = PgServer {
            dir,
            bin,
            port: free_port()?,
            as_postgres,
        };
        let stop = format!(
            "{} {}/pg_ctl -D {} stop -m immediate >/dev/null 2>&1; rm -rf {}",
            if as_postgres {
                "runuser -u postgres --"
            } else {
                ""
            },
            server.bin.display(),
            data.display(),
            server.dir.display()
        );
        spawn_guardian(&stop)?;
        let out = server.run(
            "initdb",
            &[
                "-D",
                &data.display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        if !out.status.success() {
            return Err(PgServerError::Initdb {
                output: printed(&out),
            });
        }
        server.pg_ctl_start()?;
        Ok(server)
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<Output, PgServerError> {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args)
            .current_dir(&self.dir)
            .output()
            .map_err(|source| PgServerError::Run { tool: exe, source })
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    fn pg_ctl_start(&self) -> Result<(), PgServerError> {
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "-l",
                &self.log().display().to_string(),
                "-w",
                "-t",
                "60",
                "-o",
                &opts,
                "start",
            ],
        )?;
        if !out.status.success() {
            return Err(PgServerError::PgCtlStart {
                output: printed(&out),
                log: tail(&self.log(), 20),
            });
        }
        Ok(())
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A libpq-style connection string for the `postgres` database.
    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres connect_timeout=5",
            self.port
        )
    }

    /// The postmaster's pid, from `postmaster.pid`.
    pub fn postmaster_pid(&self) -> Result<u32, PgServerError> {
        let text = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .map_err(PgServerError::NoPidFile)?;
        text.lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or(PgServerError::BadPidFile)
    }

    /// Freeze the server (`SIGSTOP` to the postmaster and every backend) or thaw it
    /// (`SIGCONT`): a pause, during which connections stay open and nothing answers.
    pub fn pause(&self, paused: bool) -> Result<(), PgServerError> {
        let pm = self.postmaster_pid()?;
        crate::harness::pause_process(pm, paused)?;
        for backend in crate::harness::children_of(pm) {
            // A backend may exit between the listing and the signal: nothing left to pause.
            let _ = crate::harness::pause_process(backend, paused);
        }
        Ok(())
    }

    /// Crash the server: `kill -9` the postmaster and every backend, by pid.
    pub fn kill9(&self) -> Result<(), PgServerError> {
        let pm = self.postmaster_pid()?;
        let mut pids = vec![pm];
        pids.extend(crate::harness::children_of(pm));
        kill9_and_wait(&pids, Duration::from_secs(20))?;
        // The dead postmaster may linger as a zombie until its reaper collects it, and a
        // zombie still answers `kill -0`: PostgreSQL would then refuse to start ("lock file
        // postmaster.pid already exists"). It is dead, so its lock files go.
        // The same holds for the socket's lock file.
        let _ = std::fs::remove_file(self.data().join("postmaster.pid"));
        let _ = std::fs::remove_file(self.dir.join(format!(".s.PGSQL.{}.lock", self.port)));
        Ok(())
    }

    /// Start the server again on the same data folder and port (crash recovery runs).
    pub fn restart(&self) -> Result<(), PgServerError> {
        self.pg_ctl_start()
    }

    /// Stop the server and remove its folder.
    pub fn stop(&self) {
        let _ = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "stop",
                "-m",
                "immediate",
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl crate::servers::RunningServer for PgServer {
    fn address(&self) -> String {
        self.conn_str()
    }
    fn stop(&self) {
        PgServer::stop(self)
    }
}
