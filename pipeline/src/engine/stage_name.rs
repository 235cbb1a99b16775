//! The build's stages, named once: [`stage_rows!`] holds one row per stage — its name (on the
//! command line, in manifests and under `artifacts/`), the stage value the engine runs, the
//! stages it reads, whether it runs as shard processes, whether it asks models, and the help of
//! its subcommand. Everything else that names stages is made from these rows: [`StageName`]
//! (its variants, [`StageName::ALL`], [`StageName::as_str`], [`FromStr`](std::str::FromStr)
//! and the properties), the engine's table ([`super::STAGES`]) and the per-stage subcommands
//! (`coreb <stage> MANIFEST`, [`crate::cli::StageCommand`]).
//!
//! Its own module so that the stage context ([`super::context`]) and the stage trait
//! ([`super::stage`]) both name stages without importing each other; it imports no other
//! module of the engine (the rows name each stage's value as tokens, which only the engine's
//! table, where the stage modules are in scope, expands).

/// The rows of the build, in pipeline order, handed to the macro `$then` (one per consumer:
/// [`StageName`] here, the engine's table in [`super`]). A row:
///
/// ```text
/// /// Short help (`--until`'s values).
/// Variant = "name", run <the stage's value>, reads [Upstream, …], shardable <bool>, asks_models <bool>,
///     about "The help of `coreb name`";
/// ```
///
/// Adding a stage is its module (a [`super::stage::Stage`]) and its row here.
macro_rules! stage_rows {
    ($then:ident) => {
        $then! {
            /// Download sources.
            Fetch = "fetch", run fetch::Fetch, reads [], shardable false, asks_models false,
                about "Download (or hash in place) the source files of a manifest";
            /// Decode problems.
            Ingest = "ingest", run ingest::Ingest, reads [Fetch], shardable false,
                asks_models false,
                about "Decode LiveCodeBench JSONL into the typed `problems` table";
            /// Deduplicate problems.
            Dedup = "dedup", run dedup::Dedup, reads [Ingest], shardable false, asks_models false,
                about "Remove exact and near-duplicate problems, also against earlier releases";
            /// Filter problems.
            Filter = "filter", run filter::Filter, reads [Dedup], shardable false,
                asks_models false,
                about "Keep problems with an English statement, enough text and at least one test";
            /// Counterfactual rewrite.
            Rewrite = "rewrite", run rewrite::Rewrite, reads [Filter], shardable true,
                asks_models true,
                about "Rewrite problems counterfactually through an LLM";
            /// Distractor statements.
            Distract = "distract", run ask_each::AskEach::<distract::Distract>::STAGE,
                reads [Rewrite], shardable true, asks_models true,
                about "Write four distractor statements per problem";
            /// Canonical summaries.
            Abbreviate = "abbreviate", run ask_each::AskEach::<abbreviate::Abbreviate>::STAGE,
                reads [Rewrite], shardable true, asks_models true,
                about "Write a canonical 50–150-word summary per problem";
            /// Solution generation.
            Generate = "generate", run ask_each::AskEach::<generate::Generate>::STAGE,
                reads [Rewrite], shardable true, asks_models true,
                about "Generate solutions in five languages";
            /// Sandboxed execution.
            Execute = "execute", run execute::Execute, reads [Filter, Rewrite, Generate],
                shardable true, asks_models false,
                about "Run every solution against its tests in the sandbox";
            /// Search queries.
            Queries = "queries", run ask_each::AskEach::<queries::Queries>::STAGE,
                reads [Rewrite], shardable true, asks_models true,
                about "Write developer-style search queries";
            /// Graded qrels.
            Qrels = "qrels", run qrels::Qrels,
                reads [Rewrite, Distract, Abbreviate, Generate, Execute, Queries],
                shardable false, asks_models false,
                about "Assign graded relevance judgements";
            /// Publish.
            Release = "release", run release::Release,
                reads [Fetch, Filter, Rewrite, Distract, Abbreviate, Generate, Execute, Queries, Qrels],
                shardable false, asks_models false,
                about "Publish the release directory and its MANIFEST (a published version never \
                    changes unless `--replace` is given)";
        }
    };
}
pub(crate) use stage_rows;

/// Makes [`StageName`] and its properties from the rows of [`stage_rows!`].
macro_rules! stage_names {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, run $run:expr, reads [$($up:ident),*],
        shardable $shardable:literal, asks_models $asks:literal, about $about:literal;
    )*) => {
        /// A stage of the build (which stage a build stops after, which a command runs).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
        pub enum StageName {
            $( $(#[$doc])* $variant, )*
        }

        /// How many stages the build has.
        const COUNT: usize = [$($name),*].len();

        impl StageName {
            /// Every stage in pipeline order (the order of the rows).
            pub const ALL: [StageName; COUNT] = [$(StageName::$variant),*];

            /// The stage's name as used on the command line, in manifests and under
            /// `artifacts/`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(StageName::$variant => $name,)*
                }
            }

            /// The stages whose records it reads (each runs, or is found unchanged, before it);
            /// reading any other is an error ([`super::stage::Upstream`]).
            pub(crate) const fn reads(self) -> &'static [StageName] {
                match self {
                    $(StageName::$variant => &[$(StageName::$up),*],)*
                }
            }

            /// Whether the stage runs as shard processes (`--shard i/N`), each on the items
            /// whose id hash falls in its shard.
            pub(crate) const fn shardable(self) -> bool {
                match self {
                    $(StageName::$variant => $shardable,)*
                }
            }

            /// Whether the stage asks models (an LLM stage: `llm.min_kept_share` applies, the
            /// preflight asks its endpoint).
            pub(crate) const fn asks_models(self) -> bool {
                match self {
                    $(StageName::$variant => $asks,)*
                }
            }

            /// The help of its subcommand (`coreb <stage> --help`).
            pub(crate) const fn about(self) -> &'static str {
                match self {
                    $(StageName::$variant => $about,)*
                }
            }
        }
    };
}

stage_rows!(stage_names);

impl std::str::FromStr for StageName {
    type Err = String;

    fn from_str(s: &str) -> Result<StageName, String> {
        StageName::ALL.into_iter().find(|stage| stage.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = StageName::ALL.into_iter().map(StageName::as_str).collect();
            format!("`{s}` is not a stage; one of: {}", names.join(", "))
        })
    }
}

coreb_base::display_as_str!(StageName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_each_stage_reads_only_earlier_ones() {
        for stage in StageName::ALL {
            assert_eq!(stage.as_str().parse::<StageName>(), Ok(stage));
            assert_eq!(<StageName as clap::ValueEnum>::from_str(stage.as_str(), false), Ok(stage));
            for up in stage.reads() {
                assert!(up < &stage, "`{stage}` reads `{up}`, which runs after it");
            }
        }
        let err = "publish".parse::<StageName>().unwrap_err();
        assert!(err.contains("`publish` is not a stage; one of: fetch, ingest"), "{err}");
    }
}
