//! Resident memory of a process, from `/proc/<pid>/status` (Linux).
//!
//! `VmRSS` is the current resident set; `VmHWM` the kernel's high-water mark of it, so the
//! peak is exact however rarely we sample.

use std::path::PathBuf;

/// One reading, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rss {
    /// `VmRSS`.
    pub current_kib: u64,
    /// `VmHWM`.
    pub peak_kib: u64,
}

impl Rss {
    /// Current resident set, MiB.
    pub fn current_mib(self) -> f64 {
        kib_to_mib(self.current_kib)
    }

    /// Peak resident set, MiB.
    pub fn peak_mib(self) -> f64 {
        kib_to_mib(self.peak_kib)
    }
}

/// KiB to MiB.
#[allow(clippy::cast_precision_loss)] // KiB counts of a process fit f64 exactly
pub fn kib_to_mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Parses the `VmRSS` and `VmHWM` lines of a `/proc/<pid>/status` text; `None` when either is
/// missing (a kernel thread, or a process that already exited).
pub fn parse_status(text: &str) -> Option<Rss> {
    let field = |name: &str| kinfer_state::metrics::proc_status_kib(text, name);
    Some(Rss {
        current_kib: field("VmRSS:")?,
        peak_kib: field("VmHWM:")?,
    })
}

/// Reads the memory of process `pid`; `None` when it cannot be read.
pub fn read(pid: u32) -> Option<Rss> {
    let path = PathBuf::from(format!("/proc/{pid}/status"));
    parse_status(&std::fs::read_to_string(path).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rss_and_high_water_mark() {
        let text = "Name:\tzerfoo-operator\nVmPeak:\t  300000 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        let r = parse_status(text).unwrap_or_default();
        assert_eq!((r.current_kib, r.peak_kib), (10240, 20480));
        assert!((r.current_mib() - 10.0).abs() < f64::EPSILON);
        assert!((r.peak_mib() - 20.0).abs() < f64::EPSILON);
    }

    #[test]
    fn missing_fields_are_none() {
        assert_eq!(parse_status("Name:\tkthreadd\n"), None);
        assert_eq!(parse_status("VmRSS:\tlots kB\nVmHWM:\t1 kB\n"), None);
    }

    #[test]
    fn reads_this_process() {
        let me = read(std::process::id()).unwrap_or_default();
        assert!(
            me.current_kib > 0 && me.peak_kib >= me.current_kib,
            "{me:?}"
        );
    }
}
