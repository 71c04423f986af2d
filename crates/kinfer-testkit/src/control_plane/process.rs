//! The control plane's processes: started with their output in log files of the run directory,
//! and stopped by a watchdog whenever the process that started them ends, however it ends.
//!
//! The watchdog is a small `sh` whose standard input is a pipe only this process holds (Rust
//! opens pipes close-on-exec, so no other child inherits it). Each started process's pid is
//! written to it; when the pipe closes (an orderly [`Processes::stop`], a normal exit, a panic,
//! or a SIGKILL of the test process: the kernel closes the descriptor in every case) the
//! watchdog sends SIGTERM to every pid, SIGKILL to those left after ten seconds, and removes
//! the run directory. It ignores SIGINT, SIGTERM and SIGHUP, so a Ctrl-C to the terminal's
//! process group cannot kill it before it has cleaned up. No `unsafe` (no `prctl` in a
//! `pre_exec`), no orphaned etcd or API server.
//!
//! May: spawn and signal processes, read and write files in the run directory. May not: talk
//! to the API server (that is [`super`]'s readiness check).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

use crate::Error;

/// Sends TERM then KILL to every pid read from standard input once it closes, then removes the
/// run directory (`$1`).
const WATCHDOG: &str = r#"trap '' INT TERM HUP
# Alive: neither gone nor a zombie (an orphan's zombie stays where PID 1 does not reap).
alive() {
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    case "$s" in *") Z "* | *") X "*) return 1 ;; esac
}
pids=""
while read -r pid; do pids="$pids $pid"; done
for p in $pids; do kill -TERM "$p" 2>/dev/null; done
i=0
for p in $pids; do
    while alive "$p" && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
done
for p in $pids; do kill -KILL "$p" 2>/dev/null; done
rm -rf "$1"
"#;

/// How much of a process's log an error quotes.
const LOG_TAIL_BYTES: u64 = 4096;

/// The processes of one control plane, and the watchdog that outlives nothing of them.
#[derive(Debug)]
pub struct Processes {
    dir: PathBuf,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    watchdog: Option<(Child, ChildStdin)>,
    children: Vec<(String, Child)>,
}

impl Processes {
    /// A watchdog for the run directory `dir` (which it removes once everything has stopped).
    pub fn new(dir: &Path) -> Result<Self, Error> {
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("kinfer-control-plane-watchdog")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::ControlPlane(format!("starting the watchdog (sh): {e}")))?;
        let stdin = watchdog
            .stdin
            .take()
            .ok_or_else(|| Error::ControlPlane("the watchdog has no standard input".to_owned()))?;
        Ok(Self {
            dir: dir.to_owned(),
            inner: Mutex::new(Inner {
                watchdog: Some((watchdog, stdin)),
                children: Vec::new(),
            }),
        })
    }

    /// Starts `binary` with `args`, its output going to `<dir>/<name>.log`, and hands its pid to
    /// the watchdog before anything else can happen.
    pub fn spawn(&self, name: &str, binary: &Path, args: &[String]) -> Result<(), Error> {
        let log = File::create(self.log_path(name))?;
        let mut inner = self.lock();
        let Some((_, stdin)) = inner.watchdog.as_mut() else {
            return Err(Error::ControlPlane(
                "the control plane was stopped".to_owned(),
            ));
        };
        let child = Command::new(binary)
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| Error::ControlPlane(format!("starting {}: {e}", binary.display())))?;
        if let Err(e) = writeln!(stdin, "{}", child.id()).and_then(|()| stdin.flush()) {
            let mut child = child;
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::ControlPlane(format!("the watchdog is gone: {e}")));
        }
        inner.children.push((name.to_owned(), child));
        Ok(())
    }

    /// The pids of the processes started so far.
    pub fn pids(&self) -> Vec<u32> {
        self.lock().children.iter().map(|(_, c)| c.id()).collect()
    }

    /// The first process that has exited, with its status and the end of its log.
    pub fn exited(&self) -> Option<String> {
        let mut inner = self.lock();
        for (name, child) in &mut inner.children {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(format!(
                    "{name} exited ({status}); the end of its log:\n{}",
                    self.log_tail(name)
                ));
            }
        }
        None
    }

    /// The last few KiB of a process's log.
    pub fn log_tail(&self, name: &str) -> String {
        let Ok(mut f) = File::open(self.log_path(name)) else {
            return String::new();
        };
        let len = f.metadata().map_or(0, |m| m.len());
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)));
        let mut bytes = Vec::new();
        let _ = f.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Where a process's output goes.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    /// Stops every process and waits until the watchdog has killed them and removed the run
    /// directory. Idempotent.
    pub fn stop(&self) {
        let watchdog = self.lock().watchdog.take();
        if let Some((mut watchdog, stdin)) = watchdog {
            drop(stdin);
            let _ = watchdog.wait();
        }
        for (_, child) in &mut self.lock().children {
            let _ = child.wait();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A loopback port free at the time of the call (the kernel's choice for port 0). Another
/// process may take it before the server binds it; the caller reports that as a failed start.
pub fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn stop_kills_every_process_and_removes_the_run_directory() {
        let dir = std::env::temp_dir().join(format!("kinfer-process-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let processes = Processes::new(&dir).unwrap();
        processes
            .spawn("sleeper", Path::new("sleep"), &["600".to_owned()])
            .unwrap();
        assert!(processes.exited().is_none());
        processes.stop();
        assert!(!dir.exists(), "the watchdog removes the run directory");
        let mut inner = processes.lock();
        let (_, child) = &mut inner.children[0];
        let status = child.try_wait().unwrap().expect("stopped");
        assert_eq!(status.signal(), Some(15), "stopped by SIGTERM: {status}");
    }
}
