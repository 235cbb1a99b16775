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
//! A command whose work does not listen says, through [`say_when_stopped`], what a signal
//! leaves (what was kept, how to go on): the handler writes that line to stderr before it ends
//! the process.
//!
//! Without [`install`] (library use, tests) the flag is never set.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

/// The line written when SIGINT (`[0]`) or SIGTERM (`[1]`) ends the process at once, and its
/// length ([`say_when_stopped`]).
static SAY: [AtomicPtr<u8>; 2] =
    [AtomicPtr::new(std::ptr::null_mut()), AtomicPtr::new(std::ptr::null_mut())];
static SAY_LEN: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Have a signal that ends the process at once (no work listening) first write the line
/// `line(signal name)` to stderr: what the command leaves and how to go on. For the process's
/// lifetime (a later call replaces it; the text is kept until the process ends).
pub fn say_when_stopped(line: impl Fn(&str) -> String) {
    for (i, name) in ["SIGINT", "SIGTERM"].into_iter().enumerate() {
        let text: &'static mut [u8] =
            Box::leak(format!("{}\n", line(name)).into_bytes().into_boxed_slice());
        SAY_LEN[i].store(0, Ordering::SeqCst);
        SAY[i].store(text.as_mut_ptr(), Ordering::SeqCst);
        SAY_LEN[i].store(text.len(), Ordering::SeqCst);
    }
}

/// Write the line of [`say_when_stopped`] for `signal`, if any (async-signal-safe: atomics
/// and `write(2)`).
fn say(signal: i32) {
    let i = usize::from(signal != libc::SIGINT);
    let (ptr, len) = (SAY[i].load(Ordering::SeqCst), SAY_LEN[i].load(Ordering::SeqCst));
    if !ptr.is_null() && len > 0 {
        // SAFETY: `ptr` points to `len` leaked bytes that live until the process ends.
        unsafe {
            libc::write(2, ptr.cast(), len);
        }
    }
}

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
                let first =
                    SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_ok();
                if !first || LISTENERS.load(Ordering::SeqCst) == 0 {
                    say(signal);
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
        assert_eq!(Interrupted { signal: libc::SIGINT }.exit_status(), 130);
        assert_eq!(Interrupted { signal: libc::SIGTERM }.exit_status(), 143);
        assert_eq!(Interrupted { signal: libc::SIGTERM }.to_string(), "interrupted by SIGTERM");
    }
}
