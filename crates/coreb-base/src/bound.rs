//! What held the memory of a run: the sandbox reports it ([`MemoryBound`]), the verdicts
//! table records it. Both name this one type, so that the data layer need not depend on the
//! sandbox nor the sandbox on the data layer.

use serde::{Deserialize, Serialize};

/// What held the memory of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum MemoryBound {
    /// A cgroup v2 of its own: every page of every process (shared memory and tmpfs files
    /// included), swap off, processes counted.
    CgroupV2,
    /// A cgroup v1 memory (and pids) group of its own: the same, on hybrid hosts.
    CgroupV1,
    /// No cgroup: RLIMIT_DATA and RLIMIT_AS per process, times the process cap; shared
    /// memory between processes is bounded only per process.
    Rlimit,
}

impl MemoryBound {
    /// `cgroup_v2`, `cgroup_v1` or `rlimit`: the verdicts table's values.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryBound::CgroupV2 => "cgroup_v2",
            MemoryBound::CgroupV1 => "cgroup_v1",
            MemoryBound::Rlimit => "rlimit",
        }
    }
}

crate::display_as_str!(MemoryBound);
