//! The build's stages, named once: [`stage_rows!`] holds one row per stage — its name (on the
//! command line, in manifests and under `artifacts/`), the stage value the engine runs, the
//! stages it reads, its configuration (its `[stages.<name>]` section of the manifest, if it
//! has one), whether it runs as shard processes, whether it asks models, and the help of its
//! subcommand. Everything else that names stages is made from these rows:
//! [`StageName`](crate::engine::stage_name::StageName) (its variants, `ALL`, `as_str`,
//! `FromStr` and the properties), the engine's table ([`crate::engine::STAGES`]), the
//! manifest's stage sections ([`crate::manifest::StagesFile`]) and the per-stage subcommands
//! (`coreb <stage> MANIFEST`, [`crate::cli::StageCommand`]).
//!
//! A module of its own at the root of the crate, below the engine and the manifest, which both
//! make their part from the rows (the engine reads the manifest's plan): it imports nothing.
//! A row names its stage's value and configuration as tokens, expanded only where they are in
//! scope: the value in the engine's table (where the stage modules are), the configuration
//! (a full path) in the manifest.

/// The rows of the build, in pipeline order, handed to the macro `$then` (one per consumer:
/// [`StageName`](crate::engine::stage_name::StageName), the engine's table, the manifest's
/// `StagesFile`). A row:
///
/// ```text
/// /// Short help (`--until`'s values).
/// Variant = name, run <the stage's value>, reads [Upstream, …],
///     config [<its configuration's type>, or nothing], shardable <bool>, asks_models <bool>,
///     about "The help of `coreb name`";
/// ```
///
/// `name` is an identifier: it is the stage's `[stages.name]` field of
/// [`StagesFile`](crate::manifest::StagesFile) and, as a string (`stringify!`), its name.
/// `config []` says the stage has no parameters (and no section in the manifest); a
/// configuration is a type of a library crate (the stage's pure part in `coreb_stages`), as
/// the manifest cannot import the engine. Adding a stage is its module (a
/// [`crate::engine::stage::Stage`]) and its row here.
///
/// The rows are read here, once; `$then` is handed each row as one group of its fields by
/// position, `{ [docs] Variant name [run] [reads] [config] shardable asks_models about }`,
/// and matches the fields it uses, leaving the rest (`$_:tt`, `$($rest:tt)*`).
macro_rules! stage_rows {
    (@hand $then:ident $(
        $(#[$doc:meta])*
        $variant:ident = $name:ident, run $run:expr, reads [$($up:ident),*],
        config [$($config:ty)?], shardable $shardable:literal, asks_models $asks:literal,
        about $about:literal;
    )*) => {
        $then! { $({
            [$(#[$doc])*] $variant $name [$run] [$($up),*] [$($config)?] $shardable $asks $about
        })* }
    };
    ($then:ident) => {
        $crate::stage_rows::stage_rows! { @hand $then
            /// Download sources.
            Fetch = fetch, run fetch::Fetch, reads [],
                config [coreb_stages::fetch::FetchConfig], shardable false, asks_models false,
                about "Download (or hash in place) the source files of a manifest";
            /// Decode problems.
            Ingest = ingest, run ingest::Ingest, reads [Fetch],
                config [coreb_stages::ingest::IngestConfig], shardable false, asks_models false,
                about "Decode LiveCodeBench JSONL into the typed `problems` table";
            /// Deduplicate problems.
            Dedup = dedup, run dedup::Dedup, reads [Ingest],
                config [coreb_stages::dedup::DedupConfig], shardable false, asks_models false,
                about "Remove exact and near-duplicate problems, also against earlier releases";
            /// Filter problems.
            Filter = filter, run filter::Filter, reads [Dedup],
                config [coreb_stages::filter::FilterConfig], shardable false, asks_models false,
                about "Keep problems with an English statement, enough text and at least one test";
            /// Counterfactual rewrite.
            Rewrite = rewrite, run rewrite::Rewrite, reads [Filter],
                config [coreb_stages::rewrite::RewriteConfig], shardable true, asks_models true,
                about "Rewrite problems counterfactually through an LLM";
            /// Distractor statements.
            Distract = distract, run ask_each::AskEach::<distract::Distract>::STAGE,
                reads [Rewrite], config [coreb_stages::distract::DistractConfig],
                shardable true, asks_models true,
                about "Write four distractor statements per problem";
            /// Canonical summaries.
            Abbreviate = abbreviate, run ask_each::AskEach::<abbreviate::Abbreviate>::STAGE,
                reads [Rewrite], config [coreb_stages::abbreviate::AbbreviateConfig],
                shardable true, asks_models true,
                about "Write a canonical 50–150-word summary per problem";
            /// Solution generation.
            Generate = generate, run ask_each::AskEach::<generate::Generate>::STAGE,
                reads [Rewrite], config [coreb_stages::generate::GenerateConfig],
                shardable true, asks_models true,
                about "Generate solutions in five languages";
            /// Sandboxed execution.
            Execute = execute, run execute::Execute, reads [Filter, Rewrite, Generate],
                config [coreb_judge::ExecuteConfig], shardable true, asks_models false,
                about "Run every solution against its tests in the sandbox";
            /// Search queries.
            Queries = queries, run ask_each::AskEach::<queries::Queries>::STAGE,
                reads [Rewrite], config [coreb_stages::queries::QueriesConfig],
                shardable true, asks_models true,
                about "Write developer-style search queries";
            /// Graded qrels.
            Qrels = qrels, run qrels::Qrels,
                reads [Rewrite, Distract, Abbreviate, Generate, Execute, Queries],
                config [coreb_data::composition::QrelsConfig], shardable false,
                asks_models false,
                about "Assign graded relevance judgements";
            /// Publish.
            Release = release, run release::Release,
                reads [Fetch, Filter, Rewrite, Distract, Abbreviate, Generate, Execute, Queries, Qrels],
                config [], shardable false, asks_models false,
                about "Publish the release directory and its MANIFEST (a published version never \
                    changes unless `--replace` is given)";
        }
    };
}
pub(crate) use stage_rows;
