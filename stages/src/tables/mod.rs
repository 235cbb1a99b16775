//! Parquet tables exchanged between stages. Every Parquet call of the project lives under
//! this module, one file per table.

pub mod problems;
pub mod release;

pub use problems::{ProblemReader, ProblemWriter, TableError, problems_schema};
