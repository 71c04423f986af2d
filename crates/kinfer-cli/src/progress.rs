//! Progress on stderr.
//!
//! Contract: long-running commands (`render`, `demo`, `explain`) report each step on stderr as
//! `kinfer: [elapsed] message`, so a user sees what is happening when a step takes more than a
//! second; waits also report once a second. `--quiet` silences all of it. stdout only ever
//! carries the command's result, so it can be piped.

use std::time::{Duration, Instant};

/// A stderr progress reporter.
#[derive(Debug, Clone)]
pub struct Progress {
    quiet: bool,
    start: Instant,
}

impl Progress {
    /// A reporter that prints unless `quiet`.
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            start: Instant::now(),
        }
    }

    /// Reports one step.
    pub fn note(&self, message: &str) {
        if !self.quiet {
            eprintln!("kinfer: [{}] {message}", human(self.start.elapsed()));
        }
    }

    /// Reports a warning (also silenced by `--quiet`).
    pub fn warn(&self, message: &str) {
        if !self.quiet {
            eprintln!("kinfer: warning: {message}");
        }
    }
}

/// `0.4s`, `12.3s`, `2m03s`.
pub fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 60 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}.{}s", secs, d.subsec_millis() / 100)
    }
}

/// Parses `30s`, `2m`, `1500ms` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "s"), |i| s.split_at(i));
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 30s, 2m, 500ms)"))?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("{s:?}: unit must be ms, s or m")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_mins(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5"), Ok(Duration::from_secs(5)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(human(Duration::from_millis(1234)), "1.2s");
        assert_eq!(human(Duration::from_secs(123)), "2m03s");
    }
}
