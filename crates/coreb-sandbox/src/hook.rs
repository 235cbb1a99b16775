//! The hook a re-executed init starts from: run before `main` in every binary that links
//! this crate, it decodes the run's plan ([`crate::plan`]) and becomes the run's init
//! ([`crate::sys`]). Apart from [`crate::sys`], the only module with `unsafe`: the hook is a
//! static in `.init_array`. It sits above both so that neither calls back into the other:
//! `plan` encodes what `sys` defines, `sys` starts the re-execution, and this module joins
//! them.

use std::ffi::{c_char, c_int};
use std::fs::File;
use std::os::fd::{FromRawFd, RawFd};

/// Run from `.init_array` of every binary that links this crate, before `main`: when the
/// process is a run's init started by [`crate::sys`]'s re-exec (`argv` is exactly [`crate::sys::INIT_ARGV0`] and
/// a descriptor, the environment empty), read the plan, become init and never return;
/// otherwise return at once.
extern "C" fn init_hook(argc: c_int, argv: *const *const c_char, envp: *const *const c_char) {
    // SAFETY: glibc passes `main`'s argc, argv and envp to `.init_array` functions: argv
    // holds argc strings then NULL, envp is NULL-terminated.
    unsafe {
        if argc != 2
            || argv.is_null()
            || envp.is_null()
            || !(*envp).is_null()
            || std::ffi::CStr::from_ptr(*argv) != crate::sys::INIT_ARGV0
        {
            return;
        }
        let Some(fd) = std::ffi::CStr::from_ptr(*argv.add(1))
            .to_str()
            .ok()
            .and_then(|s| s.parse::<RawFd>().ok())
        else {
            libc::_exit(125)
        };
        // A process of its own now, single-threaded: reading and allocating are fine. The
        // judge blocked every signal around the clone; the handlers are the defaults now.
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        let mut bytes = Vec::new();
        let read = std::io::Read::read_to_end(&mut File::from_raw_fd(fd), &mut bytes);
        let mut plan = match read.ok().and_then(|_| crate::plan::decode(&bytes)) {
            Some(plan) => plan,
            // The judge went away before sending the whole plan.
            None => libc::_exit(125),
        };
        match plan.init() {
            Some(init) => crate::sys::init_main(&init),
            None => libc::_exit(125),
        }
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT_HOOK: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = init_hook;

/// Keeps [`INIT_HOOK`] in every binary that starts runs (its object is linked with
/// `Sandbox::run`'s caller).
pub(crate) fn init_hook_linked() -> usize {
    std::hint::black_box(&INIT_HOOK) as *const _ as usize
}
