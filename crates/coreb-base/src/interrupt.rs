//! SIGINT and SIGTERM as a flag that long work reads between its units.
//!
//! The binary calls [`install`] once. While no work [`listen`]s, a signal ends the process
//! at once with status 128 + the signal, as without a handler: every stage but `execute`
//! commits each unit durably as it finishes (an LLM answer, a stage's directory), so there is
//! nothing to wait for. While work listens (`execute` does), the first SIGINT (Ctrl-C) or
//! SIGTERM (Slurm's preemption, `kill`, a scheduler's stop) only sets the flag: the work reads
//! [`requested`] between its units, starts nothing new, commits what finished and returns
//! [`Interrupted`], which the binary turns into exit status 130 or 143. A second signal of
//! either kind ends the process at once, for an operator who does not want to wait; what was
//! committed stays committed.
//!
//! Without [`install`] (library use, tests) the flag is never set.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// The signal that asked the process to stop, 0 while none has.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// How many pieces of work are listening ([`listen`]).
static LISTENERS: AtomicUsize = AtomicUsize::new(0);

/// Work stopped because a signal asked it to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted {
    /// `libc::SIGINT` or `libc::SIGTERM`.
    pub signal: i32,
}

impl Interrupted {
    /// The signal's name, `SIGINT` or `SIGTERM`.
    pub fn name(&self) -> &'static str {
        match self.signal {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            _ => "a signal",
        }
    }

    /// The exit status a shell reports for a process ended by this signal (130, 143).
    pub fn exit_status(&self) -> u8 {
        (128 + self.signal).clamp(0, 255) as u8
    }
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", self.name())
    }
}

impl std::error::Error for Interrupted {}

/// Route SIGINT and SIGTERM to the flag while work listens; otherwise, and on a second
/// signal, end the process with status 128 + the signal.
pub fn install() -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the action only reads and writes atomics and calls `_exit`, all
        // async-signal-safe.
        unsafe {
            signal_hook::low_level::register(signal, move || {
                let first = SIGNAL
                    .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok();
                if !first || LISTENERS.load(Ordering::SeqCst) == 0 {
                    signal_hook::low_level::exit(128 + signal);
                }
            })?;
        }
    }
    Ok(())
}

/// While the returned guard lives, the first signal only sets the flag ([`requested`]):
/// the caller promises to read it between its units and stop soon after.
pub fn listen() -> Listening {
    LISTENERS.fetch_add(1, Ordering::SeqCst);
    Listening(())
}

/// Work listening for the flag ([`listen`]).
#[derive(Debug)]
pub struct Listening(());

impl Drop for Listening {
    fn drop(&mut self) {
        LISTENERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The interruption asked for, if a signal has asked.
pub fn requested() -> Option<Interrupted> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(Interrupted { signal }),
    }
}

/// `Err(Interrupted)` once a signal has asked to stop.
pub fn check() -> Result<(), Interrupted> {
    requested().map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_the_shells() {
        assert_eq!(
            Interrupted {
                signal: libc::SIGINT
            }
            .exit_status(),
            130
        );
        assert_eq!(
            Interrupted {
                signal: libc::SIGTERM
            }
            .exit_status(),
            143
        );
        assert_eq!(
            Interrupted {
                signal: libc::SIGTERM
            }
            .to_string(),
            "interrupted by SIGTERM"
        );
    }
}
