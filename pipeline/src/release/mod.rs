//! The published release, in one place: making and publishing it step by step (`make`),
//! what its MANIFEST records of each stage (`facts`), a control release against the release
//! it controls (`control`), its layout (`layout`: the tables, the source problems), its gates (`gates`), its
//! regeneration kit written and read (`kit`), what publishing finds already there
//! (`publish`), its verification by rebuilding it
//! ([`verify`]: the checksums, the rebuild from the kit, the comparison), its export in the
//! published dataset's layouts (`export`), and the human validation of its rewrites
//! (`review`).
//!
//! The engine's `release` stage computes its key and calls `make::make`; `coreb verify`, `coreb
//! export` and `coreb review` parse their arguments and print.

pub(crate) mod control;
pub(crate) mod export;
pub(crate) mod facts;
pub(crate) mod gates;
pub(crate) mod kit;
pub(crate) mod layout;
pub(crate) mod make;
pub(crate) mod publish;
pub(crate) mod review;
pub mod verify;
