//! The names of the build's stages ([`StageName`]): on the command line, in manifests and
//! under `artifacts/`. Its own module so that the stage context ([`super::context`]) and the
//! stage trait ([`super::stage`]) both name stages without importing each other.

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
    /// Every stage in pipeline order (the order of the engine's table, [`super::STAGES`]).
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

    /// Whether the stage runs as shard processes (`--shard i/N`): its row of the table says.
    pub fn shardable(self) -> bool {
        super::runner(self).shardable()
    }

    /// Whether the stage asks models (an LLM stage): its row of the table says.
    pub fn asks_models(self) -> bool {
        super::runner(self).asks_models()
    }
}

coreb_base::display_as_str!(StageName);
