//! `coreb-base`: the few mechanisms every coreb crate shares, one copy each.
//!
//! - [`durable`]: writes that survive a crash — a temporary file in the target's directory,
//!   fsync'ed, renamed into place, the directory fsync'ed ([`durable::write`],
//!   [`durable::AtomicFile`]).
//! - [`hashing`]: sha256 hex digests of bytes and files.
//! - [`errors`]: an error and its causes as one line, for places that keep an error as text.
//!
//! What it must not know: anything of CoREB itself (releases, stages, models). It exists so
//! that `coreb-llm` and `coreb-stages` share these without depending on each other;
//! `coreb-stages` re-exports the modules as `stages::{durable, hashing, errors}`.
#![deny(missing_docs)]

pub mod durable;
pub mod errors;
pub mod hashing;
