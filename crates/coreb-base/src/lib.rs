//! `coreb-base`: the few mechanisms every coreb crate shares, one copy each.
//!
//! - [`durable`]: writes that survive a crash — a temporary file in the target's directory,
//!   fsync'ed, renamed into place, the directory fsync'ed ([`durable::write`],
//!   [`durable::AtomicFile`]).
//! - [`hashing`]: sha256 hex digests of bytes and files.
//! - [`bound`]: what held a run's memory ([`bound::MemoryBound`]), as the sandbox reports it
//!   and the verdicts table records it.
//! - [`counts`]: field-by-field `+=` for mergeable stats structs ([`add_assign_fields!`]).
//! - [`names`]: `Display` as a value's name for the enums written as names
//!   ([`display_as_str!`]).
//! - [`errors`]: an error and its causes as one line, for places that keep an error as text.
//! - [`interrupt`]: SIGINT and SIGTERM as a flag that long work reads between its units, so
//!   that it starts nothing new, commits what finished and stops ([`interrupt::Interrupted`]).
//! - [`minhash`]: what the two MinHash-LSH deduplicators share (normalisation, parameters,
//!   the union-find).
//! - [`seeded`]: the one seeded generator (SplitMix64) whose draws releases and results
//!   publish.
//! - [`report`]: what a library says while it works ([`report::Report`]: status lines, results,
//!   progress meters), rendered by its caller; libraries never print.
//! - [`jsonl`]: JSON Lines read a line at a time (a bad line named by file and line) and
//!   written.
//! - [`shard`]: which of `N` shards an id falls in (xxh3 of the id), for every process that
//!   splits work by id.
//!
//! What it must not know: anything of CoREB itself (releases, stages, models). Every other
//! coreb crate uses these paths directly (`coreb_base::durable`, …).
#![deny(missing_docs)]

pub mod bound;
pub mod counts;
pub mod durable;
pub mod errors;
pub mod hashing;
pub mod interrupt;
pub mod jsonl;
pub mod minhash;
pub mod names;
pub mod report;
pub mod seeded;
pub mod shard;
