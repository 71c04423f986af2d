//! Tracing initialisation.
//!
//! Contract: `RUST_LOG` filters (default `info`); [`LogFormat::Text`] writes human-readable
//! lines, [`LogFormat::Json`] one JSON object per line, both on stdout. Installing a second
//! global subscriber is an error, not a panic.

use crate::args::LogFormat;

/// A global subscriber was already installed.
#[derive(Debug, thiserror::Error)]
#[error("initialise tracing: {0}")]
pub struct TracingError(String);

/// Installs the global subscriber; see the module contract.
pub fn init_tracing(format: LogFormat) -> Result<(), TracingError> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    }
    .map_err(|e| TracingError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_subscriber_is_an_error_not_a_panic() {
        // Another test of this binary may have installed one first; either way the second fails.
        let _ = init_tracing(LogFormat::Json);
        assert!(init_tracing(LogFormat::Text).is_err());
    }
}
