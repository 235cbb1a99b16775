//! The build's stages by name: their order, their names on the command line, in manifests
//! and under `artifacts/`, and which of them run as shard processes.

use clap::ValueEnum;

/// Which stage a build stops after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum StageName {
    /// Download sources.
    Fetch,
    /// Decode problems.
    Ingest,
    /// Deduplicate problems.
    Dedup,
    /// Filter problems.
    Filter,
    /// Counterfactual rewrite.
    Rewrite,
    /// Distractor statements.
    Distract,
    /// Canonical summaries.
    Abbreviate,
    /// Solution generation.
    Generate,
    /// Sandboxed execution.
    Execute,
    /// Search queries.
    Queries,
    /// Graded qrels.
    Qrels,
    /// Publish.
    Release,
}

impl StageName {
    /// Every stage in pipeline order.
    pub const ALL: [StageName; 12] = [
        StageName::Fetch,
        StageName::Ingest,
        StageName::Dedup,
        StageName::Filter,
        StageName::Rewrite,
        StageName::Distract,
        StageName::Abbreviate,
        StageName::Generate,
        StageName::Execute,
        StageName::Queries,
        StageName::Qrels,
        StageName::Release,
    ];

    /// The stage's name as used on the command line, in manifests and under `artifacts/`.
    pub fn as_str(self) -> &'static str {
        match self {
            StageName::Fetch => "fetch",
            StageName::Ingest => "ingest",
            StageName::Dedup => "dedup",
            StageName::Filter => "filter",
            StageName::Rewrite => "rewrite",
            StageName::Distract => "distract",
            StageName::Abbreviate => "abbreviate",
            StageName::Generate => "generate",
            StageName::Execute => "execute",
            StageName::Queries => "queries",
            StageName::Qrels => "qrels",
            StageName::Release => "release",
        }
    }
}

impl std::fmt::Display for StageName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl StageName {
    /// Whether the stage runs as shard processes (`--shard i/N`).
    pub fn shardable(self) -> bool {
        matches!(self, StageName::Rewrite | StageName::Distract | StageName::Abbreviate | StageName::Generate | StageName::Execute | StageName::Queries)
    }
}
