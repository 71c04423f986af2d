//! Exit codes of `kinfer` (documented in `--help` and `docs/cli.md`).
//!
//! Contract: stable numbers scripts can rely on.
//! - [`SUCCESS`] 0: done.
//! - [`FAILURE`] 1: a runtime failure (the embedded cluster, a registry, I/O).
//! - [`USAGE`] 2: bad command line (clap's own code).
//! - [`INVALID_INPUT`] 3: an input manifest is unreadable, not YAML, of an unknown kind, or
//!   invalid; the message names the file, the document (1-based) and the field path.
//! - [`PENDING`] 4: `render`/`demo`/`explain` did not settle by `--timeout`; what was rendered
//!   is still printed and stderr lists what was pending.
//! - [`INPUT_ERROR`] 5: settled, but an input is in an error state (Failed, NotAvailable,
//!   ConfigValid or AuthValid False); the plan is printed and stderr lists each such input with
//!   its reason.

use crate::render::input::{InvalidInput, InvalidInputs};
use crate::render::{InputErrors, Pending};

/// Done.
pub const SUCCESS: u8 = 0;
/// A runtime failure.
pub const FAILURE: u8 = 1;
/// A usage error (clap exits with it itself; listed for the documentation).
#[allow(dead_code)]
pub const USAGE: u8 = 2;
/// Invalid input manifests.
pub const INVALID_INPUT: u8 = 3;
/// Not settled by `--timeout`.
pub const PENDING: u8 = 4;
/// Settled with an input in an error state.
pub const INPUT_ERROR: u8 = 5;

/// The text `--help` ends with.
pub const HELP: &str = "Exit codes: 0 success; 1 runtime failure; 2 usage error; 3 invalid input (file, document and field path on stderr); 4 not settled by --timeout (output still printed, pending items on stderr); 5 settled, but an input is in an error state (output printed, inputs and reasons on stderr).";

/// The exit code for an error.
pub fn code_for(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<InvalidInput>().is_some()
        || error.downcast_ref::<InvalidInputs>().is_some()
    {
        INVALID_INPUT
    } else if error.downcast_ref::<Pending>().is_some() {
        PENDING
    } else if error.downcast_ref::<InputErrors>().is_some() {
        INPUT_ERROR
    } else {
        FAILURE
    }
}
