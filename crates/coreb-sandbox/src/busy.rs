//! How many runs may use the CPU at once, and runs that give their place up while they wait.
//!
//! A judge that runs `jobs` programs at once on `jobs` cores leaves a core idle whenever one
//! of them waits — a program that sleeps, or blocks on nothing, until its wall-clock limit.
//! [`BusySlots`] lets more runs be alive than there are cores while at most `n` of them are
//! busy: [`Sandbox::run_sharing`](crate::Sandbox::run_sharing) takes a slot before the run
//! starts, watches the CPU time of the run's processes while it runs, and gives the slot back
//! as soon as the run has been idle for a whole window ([`WINDOW`]: at most [`IDLE_SHARE`] of
//! one core, and none of its processes runnable when looked at: a run starved of CPU by
//! others is not idle), or when it ends. Nothing about the run itself changes: its limits, its
//! processes, its outcome are those of [`Sandbox::run`](crate::Sandbox::run).
//!
//! A run that wakes up after giving its slot back competes for the CPU with the busy runs,
//! so at most `n` plus the waiting runs compete for `n` cores; the caller bounds that by the
//! number of threads it runs with. The watch reads `/proc` only (`stat` and `children` of
//! the run's processes, every [`WINDOW`]); when it cannot read them, the run keeps its slot.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The length of the window over which a run must have been idle to give its slot back. A
/// run is looked at first after one window (its start-up), so the earliest a run gives its
/// slot back is after two.
pub const WINDOW: Duration = Duration::from_millis(250);

/// The share of one core that a run may use over a [`WINDOW`] and still count as idle.
pub const IDLE_SHARE: f64 = 0.1;

/// At most `n` busy runs at once (a counting semaphore). Share one between every thread
/// that runs programs.
#[derive(Debug)]
pub struct BusySlots {
    free: Mutex<usize>,
    freed: Condvar,
    capacity: usize,
}

impl BusySlots {
    /// `n` slots (at least one).
    pub fn new(n: usize) -> BusySlots {
        let n = n.max(1);
        BusySlots { free: Mutex::new(n), freed: Condvar::new(), capacity: n }
    }

    /// How many runs may be busy at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Wait for a free slot and take it.
    pub(crate) fn take(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(PoisonError::into_inner);
        }
        *free -= 1;
        Slot { slots: self, held: true }
    }
}

/// A slot taken from [`BusySlots`]: given back once, when the run goes idle or ends.
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    slots: &'a BusySlots,
    held: bool,
}

impl Slot<'_> {
    fn give_back(&mut self) {
        if std::mem::take(&mut self.held) {
            *self.slots.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            self.slots.freed.notify_one();
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Watches one run's CPU time and gives its slot back once the run is idle.
#[derive(Debug)]
pub(crate) struct IdleWatch<'a> {
    slot: Slot<'a>,
    /// The host pid of the run's init: the run is it and its descendants.
    init: libc::pid_t,
    next: Instant,
    last_ticks: Option<u64>,
    idle_ticks: u64,
}

impl<'a> IdleWatch<'a> {
    pub(crate) fn new(slot: Slot<'a>, init: libc::pid_t, start: Instant) -> IdleWatch<'a> {
        let per_tick_ms = 1000.0 / crate::sys::clock_ticks_per_second() as f64;
        let idle_ticks = (WINDOW.as_millis() as f64 * IDLE_SHARE / per_tick_ms).floor() as u64;
        IdleWatch { slot, init, next: start + WINDOW, last_ticks: None, idle_ticks }
    }

    /// When the poll loop should wake for the next look (none once the slot is back).
    pub(crate) fn wake_at(&self) -> Option<Instant> {
        self.slot.held.then_some(self.next)
    }

    /// Look at the run if a window has passed: give the slot back when it was idle over it.
    pub(crate) fn look(&mut self, now: Instant) {
        if !self.slot.held || now < self.next {
            return;
        }
        let tree = tree_cpu(self.init);
        let ticks = tree.map(|t| t.ticks);
        if let (Some(before), Some(TreeCpu { ticks: now_ticks, runnable: false })) =
            (self.last_ticks, tree)
            && now_ticks.saturating_sub(before) <= self.idle_ticks
        {
            self.slot.give_back();
            return;
        }
        self.last_ticks = ticks;
        self.next = now + WINDOW;
    }

    /// Whether the run gave its slot back before it ended.
    pub(crate) fn gave_back(&self) -> bool {
        !self.slot.held
    }
}

/// The most processes a look walks (a run's process limit is far lower; a bound all the same).
const MAX_PROCESSES: usize = 4096;

/// What a look at a run's processes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TreeCpu {
    /// CPU time (user + system, clock ticks) of every live process of the run, with what
    /// their reaped children used.
    ticks: u64,
    /// Whether a thread of theirs was running or waiting for a CPU (state `R`).
    runnable: bool,
}

/// [`TreeCpu`] of `root` and every live descendant; `None` when `root` cannot be read.
fn tree_cpu(root: libc::pid_t) -> Option<TreeCpu> {
    let mut total = TreeCpu { ticks: 0, runnable: false };
    let mut queue = vec![root];
    let mut seen = 0usize;
    while let Some(pid) = queue.pop() {
        seen += 1;
        if seen > MAX_PROCESSES {
            break;
        }
        // A process that ended between two reads is in its parent's reaped figures.
        let Some(process) =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().as_deref().and_then(stat_cpu)
        else {
            if pid == root {
                return None;
            }
            continue;
        };
        total.ticks += process.ticks;
        // The process's line gives its leader's state only: each thread's is its own.
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path();
            if !total.runnable {
                total.runnable = std::fs::read_to_string(path.join("stat"))
                    .ok()
                    .as_deref()
                    .and_then(stat_cpu)
                    .is_some_and(|t| t.runnable);
            }
            if let Ok(text) = std::fs::read_to_string(path.join("children")) {
                queue.extend(
                    text.split_ascii_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()),
                );
            }
        }
    }
    Some(total)
}

/// The state and CPU fields of a `/proc/<pid>/stat` line: utime + stime + cutime + cstime
/// (the command name may hold spaces and parentheses: the fields start after the last `)`).
fn stat_cpu(stat: &str) -> Option<TreeCpu> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state (field 3) … utime (14), stime (15), cutime (16), cstime (17).
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let field = |n: usize| -> Option<u64> {
        fields.get(n - 3)?.parse::<i64>().ok().map(|v| v.max(0) as u64)
    };
    let ticks = field(14)? + field(15)? + field(16)? + field(17)?;
    Some(TreeCpu { ticks, runnable: fields.first() == Some(&"R") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_name() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 123 4096 100 18446744073709551615";
        assert_eq!(stat_cpu(line), Some(TreeCpu { ticks: 7 + 3 + 2 + 1, runnable: false }));
        assert_eq!(
            stat_cpu(&line.replace(") S 1", ") R 1")),
            Some(TreeCpu { ticks: 13, runnable: true })
        );
        assert_eq!(stat_cpu("4242 (x) S 1"), None);
        assert_eq!(stat_cpu("garbage"), None);
    }

    #[test]
    fn a_sleeping_tree_is_idle_and_a_spinning_thread_is_seen() {
        let mut sleeper = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        // Until it has started and gone to sleep (a loaded machine may take a while).
        let pid = sleeper.id() as libc::pid_t;
        let mut tree = tree_cpu(pid).unwrap();
        for _ in 0..200 {
            if !tree.runnable {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            tree = tree_cpu(pid).unwrap();
        }
        assert!(!tree.runnable && tree.ticks <= 5, "{tree:?}");
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        // This process: the thread running this test is runnable, whatever its leader does;
        // the child is found below it.
        let me = std::process::id() as libc::pid_t;
        let mut child =
            std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        // What the tree counts beyond this process's own ticks is the child's: 10 ticks are
        // 100 ms on an idle core, longer where other work shares the cores.
        let own = || stat_cpu(&std::fs::read_to_string("/proc/self/stat").unwrap()).unwrap().ticks;
        let mut with_child = tree_cpu(me).unwrap();
        for _ in 0..400 {
            if with_child.ticks.saturating_sub(own()) >= 10 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            with_child = tree_cpu(me).unwrap();
        }
        let mine = own();
        assert!(with_child.runnable);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            with_child.ticks.saturating_sub(mine) >= 10,
            "the spinning child's CPU time was not counted: {with_child:?}, this process {mine}"
        );
    }

    #[test]
    fn slots_are_given_back_once_whatever_happens() {
        let slots = BusySlots::new(1);
        let mut a = slots.take();
        a.give_back();
        a.give_back();
        let b = slots.take();
        drop(a);
        assert_eq!(*slots.free.lock().unwrap(), 0, "a slot given back twice");
        drop(b);
        assert_eq!(*slots.free.lock().unwrap(), 1);
    }
}
