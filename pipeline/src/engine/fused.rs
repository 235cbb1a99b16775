//! What `fetch` hands `ingest` when the two run in one pass over local sources
//! ([`super::fetch`]): `ingest`'s table, decoded while `fetch` hashed the files, waits in the
//! stage context ([`super::context::StageContext::put_fused_ingest`]) for `ingest`'s turn.
//!
//! Its own module, below the context, `fetch` and `ingest`, so that the context holds the
//! hand-off typed without importing `ingest` (which imports the context); it imports none of
//! them.

use std::time::Instant;

use coreb_stages::ingest::IngestStats;

use crate::artifacts::StageWriter;

/// `ingest`'s work done in `fetch`'s pass: its table written into a new directory of the
/// artifact store, not yet committed, what it counted, and when the pass started. `ingest`
/// never runs as shard processes, so what it wrote ahead is always the whole stage.
pub(super) struct FusedIngest {
    /// Where the table was written (taken by `ingest`'s output, which commits it).
    pub(super) writer: Option<StageWriter>,
    /// What `ingest` counted.
    pub(super) stats: IngestStats,
    /// When the pass started: both stages ran from then, `ingest` until its table was written.
    pub(super) started: Instant,
}
