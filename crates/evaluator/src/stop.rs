//! Stopping a run from outside: a host that cannot kill the process (the Python API, where
//! Ctrl-C raises `KeyboardInterrupt` in the interpreter instead of ending the process) asks
//! the running sweep to stop with [`request_stop`]. The runner checks between cells and before
//! each question, and returns [`Interrupted`]; every cell finished before that is already in
//! `cells/` (written atomically), so running the same config again resumes there. The
//! command line needs none of this: Ctrl-C ends the process, with the same outcome.
//!
//! One flag per process: a stop request stops every run of the process that is in progress.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// The error a run returns when it stopped on [`request_stop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "interrupted: the cells finished so far are kept in cells/; run the same config \
             again to resume",
        )
    }
}

impl std::error::Error for Interrupted {}

/// Asks runs in progress to stop at the next question or cell.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Clears a stop request (before starting a run).
pub fn clear_stop() {
    STOP.store(false, Ordering::SeqCst);
}

/// [`Interrupted`] when a stop was requested.
///
/// # Errors
/// [`Interrupted`].
pub(crate) fn check() -> anyhow::Result<()> {
    check_flag(&STOP)
}

/// [`Interrupted`] when `flag` is set.
fn check_flag(flag: &AtomicBool) -> anyhow::Result<()> {
    if flag.load(Ordering::Relaxed) {
        return Err(Interrupted.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a flag of its own: the process-wide one would stop the other tests' runs.
    #[test]
    fn a_set_flag_is_an_interruption() {
        let flag = AtomicBool::new(false);
        assert!(check_flag(&flag).is_ok());
        flag.store(true, Ordering::SeqCst);
        let e = check_flag(&flag).unwrap_err();
        assert!(e.downcast_ref::<Interrupted>().is_some());
        assert!(e
            .to_string()
            .contains("run the same config again to resume"));
    }
}
