//! The command line: every command's arguments (clap derive, doc comments are the help text),
//! one module of them as uv keeps its own; the commands (`crate::commands`) take theirs from
//! here, and this module imports none of them. The single-stage commands are made from the
//! stage table (`StageCommand`).

use crate::corpus::dedup::DedupStep;
use crate::engine::stage_name::StageName;
use crate::shard::ShardSpec;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Build, verify and evaluate CoREB releases: contamination-limited, graded-relevance
/// benchmarks for code retrieval and reranking.
#[derive(Debug, Parser)]
#[command(name = "coreb", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `coreb --help` lists the commands in these groups, as users think of them (every
/// subcommand is in exactly one: a test checks it); [`STAGE_COMMANDS`] stands for the stage
/// commands not named in a group, in the order of the stage table ([`command_groups`]).
const COMMAND_GROUPS: &[(&str, &[&str])] = &[
    ("Build a release and its stages", &["init", "build", "plan", STAGE_COMMANDS]),
    ("Publish and check", &[StageName::Release.as_str(), "export", "check", "verify"]),
    ("Evaluate and compare", &["eval", "compare", "leaderboard", "trec-eval"]),
    ("Curate and audit", &["corpus", "merge", "audit", "review"]),
    ("Operate", &["store", "programs", "judge"]),
];

/// In [`COMMAND_GROUPS`]: every stage command that no group names.
const STAGE_COMMANDS: &str = "<stages>";

/// [`COMMAND_GROUPS`] with [`STAGE_COMMANDS`] spelt out.
fn command_groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let named = |name: &str| COMMAND_GROUPS.iter().any(|(_, g)| g.contains(&name));
    COMMAND_GROUPS
        .iter()
        .map(|(group, names)| {
            let names = names
                .iter()
                .flat_map(|name| match *name == STAGE_COMMANDS {
                    true => StageName::ALL
                        .into_iter()
                        .map(StageName::as_str)
                        .filter(|s| !named(s))
                        .collect(),
                    false => vec![*name],
                })
                .collect();
            (*group, names)
        })
        .collect()
}

/// What `coreb` exits with, as `coreb --help` ends and the README's table says (a test holds
/// the README to it).
const EXIT_CODES: &[(&str, &str)] = &[
    ("0", "done"),
    ("1", "the work failed: a stage, a gate, a check, the preflight, a damaged release"),
    (
        "2",
        "the command was wrong: a flag or its value, an input that is not there, a manifest that cannot be read or parsed",
    ),
    (
        "130, 143",
        "stopped by SIGINT, SIGTERM: the work done is kept, the message says how to go on",
    ),
];

/// The `coreb` command with its help grouped by `COMMAND_GROUPS` instead of clap's flat
/// list of subcommands.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let about: std::collections::BTreeMap<String, String> = cmd
        .get_subcommands()
        .map(|s| {
            (s.get_name().to_owned(), s.get_about().map(|a| a.to_string()).unwrap_or_default())
        })
        .collect();
    let width = about.keys().map(String::len).max().unwrap_or(0);
    let mut listing = String::new();
    for (group, names) in command_groups() {
        listing.push_str(&format!("{group}:\n"));
        for name in names {
            let text = about.get(name).map(String::as_str).unwrap_or("");
            listing.push_str(&format!("  {name:width$}  {text}\n"));
        }
        listing.push('\n');
    }
    let listing = listing.replace('{', "{{").replace('}', "}}");
    let mut exits = String::from("Exit codes:\n");
    for (code, means) in EXIT_CODES {
        exits.push_str(&format!("  {code:8}  {means}\n"));
    }
    cmd.after_help(exits).help_template(format!("{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}Options:\n{{options}}{{after-help}}"))
}

/// The subcommands of `coreb`.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Make a benchmark workspace in a new directory: the sample (manifest, problems, response
    /// store), prompts, a month template, releases/, a README and schedules.
    Init(InitArgs),
    /// Run the stages of a manifest in order, skipping those whose inputs are unchanged.
    #[command(after_help = BUILD_EXAMPLES)]
    Build(BuildArgs),
    /// The single-stage commands, one per row of the stage table (`coreb <stage> MANIFEST`).
    #[command(flatten)]
    Stage(StageCommand),
    /// Rebuild a published release and compare every file, in two layers: the data (exit 1
    /// on a difference, named by file, row and field) and the provenance (the toolchain
    /// versions: named, exit 0 unless `--strict`).
    #[command(after_help = VERIFY_EXAMPLES)]
    Verify(VerifyArgs),
    /// Check a release's validity from its files alone: ids, judgements, self-retrieval,
    /// BEIR-vs-Parquet equivalence, texts (a table, or `--json`; exit 1 on a failed check).
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Evaluate a release or a BEIR folder with a built-in baseline or a run file.
    #[command(after_help = EVAL_EXAMPLES)]
    Eval(Box<coreb_eval::run::EvalOptions>),
    /// Write every release of a directory as one Hugging Face dataset folder in the
    /// published CoREB layout (8 configs × `release_<version>` splits, its column and subtask
    /// names, a dataset card and LICENSE).
    #[command(after_help = EXPORT_EXAMPLES)]
    Export(ExportArgs),
    /// Compare two systems on the same release, per task and subtask: paired difference with
    /// its bootstrap interval, Wilcoxon signed-rank and randomisation p-values.
    Compare(CompareArgs),
    /// Write the leaderboard: a static site (one HTML page and its data) of the results
    /// recorded by `coreb eval --record` across releases, with a release-window control and a
    /// training-cutoff toggle; `--json` prints its numbers.
    Leaderboard(LeaderboardArgs),
    /// trec_eval-compatible evaluation of a run against qrels.
    #[command(name = "trec-eval", disable_help_flag = true, after_help = TREC_EVAL_EXAMPLES)]
    TrecEval(TrecEvalArgs),
    /// Judge one solution file against the tests of one problem.
    #[command(after_help = JUDGE_EXAMPLES)]
    Judge(JudgeArgs),
    /// Contamination audits of a release.
    Audit(AuditArgs),
    /// Human validation of the rewrites: a review page of a sample, and the report of the
    /// reviewers' answers (`coreb review report`).
    Review(ReviewArgs),
    /// Curate text–code training pairs from the sources of a corpus manifest, decontaminated
    /// against every published release.
    Corpus(CorpusArgs),
    /// Combine the parts written by shard processes (`coreb corpus <manifest> --shard i/N`,
    /// `coreb generate <manifest> --shard i/N` …) into the stage's output; refuses while a
    /// part is missing or was made from another plan.
    Merge(MergeArgs),
    /// Write the manifest of a month's release: window after the latest release, sources
    /// pinned by sha256, models and prompts as before.
    Plan(PlanArgs),
    /// Inspect, export, import or prune an LLM response store.
    Store(StoreArgs),
    /// Write the programs the judge compiles and runs for a build's solutions (a LeetCode
    /// solution inside its language's I/O driver), to run or read them outside coreb.
    Programs(ProgramsArgs),
}

const BUILD_EXAMPLES: &str = "Examples:
  coreb build manifests/sample.toml                  build the bundled sample offline (releases/sample/v202503)
  coreb build manifests/sample.toml --until execute  stop after the sandboxed judge
  coreb build manifests/v202504.toml --publish-dir /tmp/v202504  a dry run: publish elsewhere
  coreb build manifests/sample.toml --show-plan      print the resolved plan, run nothing
A missing toolchain stops the build before any stage: `scripts/setup` installs them.";

const EVAL_EXAMPLES: &str = "Examples:
  coreb eval releases/sample/v202503                          BM25 on every task, per subtask and language
  coreb eval releases/sample/v202503 --run my.run.trec --k 10 score a TREC run (all tasks in one file)
  coreb eval releases/sample/v202503/text2code --json         one BEIR folder, JSON on stdout
  coreb eval releases/sample/v202503 --retriever embed:text-embedding-3-small --out results/
                                                              dense retrieval through an OpenAI-compatible endpoint";

const TREC_EVAL_EXAMPLES: &str = "Examples:
  coreb trec-eval qrels.trec run.trec                          trec_eval's default measures
  coreb trec-eval -q -m ndcg_cut.10 -m recall.10 qrels.trec run.trec   per query, chosen measures
  coreb trec-eval -c -l 2 -m all_trec qrels.trec run.trec       every measure, relevance >= 2, all qrels queries";

const CHECK_EXAMPLES: &str = "Examples:
  coreb check releases/sample/v202503          every validity check, as a table (exit 1 on a failure)
  coreb check releases/v202504 --json           the same as JSON
  coreb check /tmp/v202504 --releases-dir releases   a copy, checked against the published releases";

const VERIFY_EXAMPLES: &str = "Examples:
  coreb verify --checksums v202503              every file against its MANIFEST (no rebuild)
  coreb verify v202503 --sources ~/downloads    rebuilt from its kit, sources found by sha256
  coreb verify v202503 --strict                 the same, and byte identity asked for
Exit codes: 0 every data file identical (only the recorded toolchain versions may differ, named:
`toolchain: java `java`: 17.0.15 in the release, 17.0.19 here`); 1 a data file, a verdict or a
field of the MANIFEST differs (named with its first differing row and field), a damaged or
refused kit, or with --strict any difference; 2 usage.";

const JUDGE_EXAMPLES: &str = "Examples:
  coreb judge problems.jsonl solution.py --lang python               first problem of the file
  coreb judge problems.jsonl Main.java --lang java --problem-id abc388_a --json
The problem file is LiveCodeBench JSONL (public and private tests); the solution runs in the sandbox.";

const EXPORT_EXAMPLES: &str = "Examples:
  coreb export --layout hf-coreb releases/sample /tmp/coreb-hf
      then: load_dataset(\"/tmp/coreb-hf\", \"code_corpus\", split=\"release_v2503\")
  coreb export releases /tmp/coreb-hf && huggingface-cli upload <you>/coreb /tmp/coreb-hf --repo-type dataset
  coreb export --layout mteb releases/sample/v202503 /tmp/coreb-mteb
      then: mteb.evaluate(model, coreb_mteb.mteb_tasks(\"/tmp/coreb-mteb/v202503\"))";

/// Arguments of `coreb build`.
#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// The build manifest (TOML).
    pub(crate) manifest: PathBuf,
    /// Stop after this stage.
    #[arg(long, value_enum)]
    pub(crate) until: Option<StageName>,
    /// Worker threads (default, and 0: every core). Outputs do not depend on it.
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// Print the resolved plan and exit without running anything.
    #[arg(long)]
    pub(crate) show_plan: bool,
    /// Run the preflight checks alone (directories writable, the API key of a live build,
    /// the endpoint's settings, the judge's toolchains, the composition) and print the
    /// stages the build would run; exit 0 when it could run, 1 naming every problem.
    #[arg(long, conflicts_with = "show_plan")]
    pub(crate) check: bool,
    /// No status lines or progress on stderr (errors are still printed).
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// Print one JSON summary object per stage on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Keep build artifacts here instead of the manifest's `output_dir`.
    #[arg(long)]
    pub(crate) output_dir: Option<PathBuf>,
    /// Publish the release here instead of `<releases_dir>/<version>` (a dry run; the release
    /// and its MANIFEST are the same bytes either way).
    #[arg(long)]
    pub(crate) publish_dir: Option<PathBuf>,
    /// Replace the release if this version is already published with other content (else
    /// the build refuses: published releases are immutable).
    #[arg(long)]
    pub(crate) replace: bool,
}

/// A single-stage command, `coreb <stage> MANIFEST …`: the stages it needs, then itself. Its
/// subcommands are made from the stage table ([`StageName::ALL`]): each takes
/// [`PlainStageArgs`], a stage that runs as shard processes also `--shard` ([`ShardArg`]),
/// and `release` also `--replace` ([`ReplaceArg`]).
#[derive(Debug)]
pub(crate) struct StageCommand {
    /// The stage.
    pub(crate) stage: StageName,
    /// The manifest, threads, output.
    pub(crate) common: PlainStageArgs,
    /// `--shard I/N` (only for a stage that runs as shard processes).
    pub(crate) shard: Option<ShardSpec>,
    /// `--replace` (only for `release`).
    pub(crate) replace: bool,
}

impl StageCommand {
    /// The subcommand of `stage`: its help from its row, its arguments from its properties.
    fn subcommand(stage: StageName) -> clap::Command {
        let cmd = PlainStageArgs::augment_args(clap::Command::new(stage.as_str()));
        let cmd = match stage.shardable() {
            true => ShardArg::augment_args(cmd),
            false => cmd,
        };
        let cmd = match stage == StageName::Release {
            true => ReplaceArg::augment_args(cmd),
            false => cmd,
        };
        // After the arguments: each `augment_args` sets the help of its own struct.
        cmd.about(stage.about()).long_about(None)
    }
}

impl clap::FromArgMatches for StageCommand {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, mut sub)) = matches.remove_subcommand() else {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingSubcommand,
                "a stage is required",
            ));
        };
        let stage: StageName = name
            .parse()
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidSubcommand, e))?;
        let common = PlainStageArgs::from_arg_matches_mut(&mut sub)?;
        let shard = match stage.shardable() {
            true => ShardArg::from_arg_matches_mut(&mut sub)?.shard,
            false => None,
        };
        let replace = match stage == StageName::Release {
            true => ReplaceArg::from_arg_matches_mut(&mut sub)?.replace,
            false => false,
        };
        Ok(StageCommand { stage, common, shard, replace })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for StageCommand {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        StageName::ALL.into_iter().fold(cmd, |cmd, stage| cmd.subcommand(Self::subcommand(stage)))
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        name.parse::<StageName>().is_ok()
    }
}

/// `--replace` of `coreb release`.
#[derive(Debug, Args)]
struct ReplaceArg {
    /// Replace the release if this version is already published with other content (else
    /// `release` refuses: published releases are immutable); the new MANIFEST records the
    /// sha256 of the MANIFEST it replaced.
    #[arg(long)]
    pub(crate) replace: bool,
}

/// `--shard` of the stage commands that run as shard processes.
#[derive(Debug, Args)]
struct ShardArg {
    /// Run as shard process `I` of `N` (`0/4` … `3/4`): the stages before this one run as
    /// usual (one process at a time, under a lock on the artifact store), then this stage
    /// handles the problems
    /// (solutions, for `execute`) whose id hash falls in shard `I`, into
    /// `<output_dir>/artifacts/parts/<stage>/`. `coreb merge <stage> <manifest>`, or any
    /// later stage or build, combines the parts once all `N` are complete.
    #[arg(long, value_name = "I/N", value_parser = ShardSpec::parse)]
    pub(crate) shard: Option<ShardSpec>,
}

/// What every stage command takes (`fetch` … `release`); a stage that runs as shard
/// processes adds `--shard`.
#[derive(Debug, Args)]
pub(crate) struct PlainStageArgs {
    /// The build manifest (TOML).
    pub(crate) manifest: PathBuf,
    /// Worker threads (default, and 0: every core). Outputs do not depend on it.
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// Print one JSON summary object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// No status lines or progress on stderr (errors are still printed).
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// Keep build artifacts here instead of the manifest's `output_dir`.
    #[arg(long)]
    pub(crate) output_dir: Option<PathBuf>,
}

/// Arguments of `coreb review`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct ReviewArgs {
    /// `report`: merge reviewers' answer files.
    #[command(subcommand)]
    pub(crate) command: Option<ReviewCommand>,
    /// The release directory.
    #[arg(required = true)]
    pub(crate) release: Option<PathBuf>,
    /// How many problems to draw (stratified by platform and difficulty).
    #[arg(long, required = true)]
    pub(crate) sample: Option<usize>,
    /// The seed of the draw.
    #[arg(long, required = true)]
    pub(crate) seed: Option<u64>,
    /// Write the page here (`DIR/index.html`).
    #[arg(long, required = true)]
    pub(crate) out: Option<PathBuf>,
    /// The build directory holding the release's artifacts (default: the `output_dir` of the
    /// build manifest embedded in the release).
    #[arg(long)]
    pub(crate) build_dir: Option<PathBuf>,
}

/// The subcommands of `coreb review`.
#[derive(Debug, Subcommand)]
pub(crate) enum ReviewCommand {
    /// Merge reviewers' answer files: shares of "yes" with Wilson intervals, Cohen's and
    /// Fleiss' κ, Krippendorff's α, the problems they disagree on.
    Report(ReviewReportArgs),
}

/// Arguments of `coreb review report`.
#[derive(Debug, Args)]
pub(crate) struct ReviewReportArgs {
    /// The release directory.
    pub(crate) release: PathBuf,
    /// The answer files (JSONL, exported by the review page).
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Write `review.json` and `review.md` here (default: `<release>/../reviews/<version>/`,
    /// where the `[gates] review` gate reads it).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Record the review in the release: re-publish its card (`README.md`) with a "Human
    /// validation" section and the card's entry in `MANIFEST.json`; the data files are not
    /// touched.
    #[arg(long)]
    pub(crate) record: bool,
}

/// Arguments of `coreb verify`.
#[derive(Debug, Args)]
#[command(
    after_help = "The release folder (as downloaded, anywhere) is checked against its MANIFEST first; then its kit \
        (`regeneration/`: the LLM answers, the build manifest, the prompts) is copied into a temporary directory, \
        the answers imported into a response store there, the sources put beside it, and the release rebuilt \
        offline (every LLM answer replayed from the kit, no endpoint) and compared file by file; a differing \
        Parquet table is named with its first differing row and column. Nothing is written outside the temporary \
        directory. Exit 0 verified, 1 on any difference or a damaged or hostile kit.\n\n\
        Examples:\n  coreb verify v202503 --sources ~/downloads       # sources found by sha256 in ~/downloads\n  \
        coreb verify v202503                             # sources downloaded from their pinned URLs\n  \
        coreb verify v202503 --checksums                 # the files against the MANIFEST, no rebuild\n  \
        coreb verify coreb-hf/regeneration/v202503 --sources ~/downloads   # a release in `coreb export`'s output"
)]
pub(crate) struct VerifyArgs {
    /// The release folder (`releases/v202504`, or a copy anywhere), or the kit folder of a
    /// release in `coreb export`'s output (`<export>/regeneration/<version>`).
    pub(crate) release: PathBuf,
    /// A folder holding the release's source files, found by sha256 among its files (any
    /// names, subfolders too). A source not there is downloaded from its pinned URL. Without
    /// it, sources with a URL are downloaded (sha256 checked), and a local source is looked for
    /// where the release's build manifest names it (the checkout that built it).
    #[arg(long, value_name = "DIR")]
    pub(crate) sources: Option<PathBuf>,
    /// Apply the sandbox settings and the compile/run commands that the release's embedded
    /// build manifest (or its kit's `build.toml`) sets in `[stages.execute]` (refused by
    /// default: a downloaded release could weaken the sandbox or choose what the judge runs).
    #[arg(long)]
    pub(crate) trust_release_sandbox: bool,
    /// Only check every file against the sha256 its MANIFEST lists (no rebuild): names each
    /// damaged, missing or extra file.
    #[arg(long, conflicts_with = "sources")]
    pub(crate) checksums: bool,
    /// Ask for byte identity: fail (exit 1) when the rebuild's provenance differs too (the
    /// versions of coreb and the toolchains it records), not only its data.
    #[arg(long, conflicts_with = "checksums")]
    pub(crate) strict: bool,
}

/// Arguments of `coreb leaderboard`.
#[derive(Debug, Args)]
pub(crate) struct LeaderboardArgs {
    /// Where the releases are (each a directory with its `MANIFEST.json`).
    #[arg(long, default_value = "releases")]
    pub(crate) releases_dir: PathBuf,
    /// The results store (default: `<releases-dir>/results`).
    #[arg(long)]
    pub(crate) results: Option<PathBuf>,
    /// Write the site here: `index.html` and `data.js` (default: `build/leaderboard`; with
    /// `--json`, only when given).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// A model audit report (`model.json` of `coreb audit <release> model --out DIR`) whose
    /// pass@1 drop the releases table shows; repeatable. Reports under
    /// `<releases-dir>/audits/` are shown without it.
    #[arg(long = "audit", value_name = "MODEL_JSON")]
    pub(crate) audits: Vec<PathBuf>,
    /// Print the leaderboard's data and its numbers in the window as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
    /// First release month of the window, `YYYY-MM` (default: the first release's).
    #[arg(long)]
    pub(crate) from: Option<String>,
    /// Last release month of the window, `YYYY-MM` (default: the last release's).
    #[arg(long)]
    pub(crate) to: Option<String>,
    /// Average each model only over the releases whose contest window starts after its
    /// declared training cutoff.
    #[arg(long)]
    pub(crate) after_cutoff: bool,
    /// The metric of the table (`ndcg@10`, `map@10`, `recall@10`, `p@10`, `mrr@10`,
    /// `r_cap@10`, other cut-offs recorded, `hn_intrusion`).
    #[arg(long)]
    pub(crate) metric: Option<String>,
    /// Only the models of this category (as recorded with `coreb eval --record --category`;
    /// `unknown`: those recorded without one), ranked among themselves.
    #[arg(long, value_parser = ["code", "general", "closed", "unknown"])]
    pub(crate) category: Option<String>,
}

/// The layout `coreb export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportLayout {
    /// The published CoREB dataset's (`hq-bench/coreb`): 8 configs × `release_<version>` splits.
    HfCoreb,
    /// MTEB's six CoREB(v1) tasks per release (`<out>/<version>/CorebT2CRetrieval/` …), in the
    /// layout MTEB's retrieval loader reads from a local folder.
    Mteb,
    /// One training release as a reranker's training records (instruction, query, document,
    /// yes/no; one hard and one easy negative per positive); a test release is refused.
    RerankerTrain,
}

/// Arguments of `coreb export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The layout to write.
    #[arg(long, value_enum, default_value = "hf-coreb")]
    pub(crate) layout: ExportLayout,
    /// A release (a directory with a MANIFEST.json), or the directory whose releases (its
    /// subdirectories with one) are exported.
    pub(crate) releases_dir: PathBuf,
    /// The dataset folder to write (an earlier export there is replaced).
    pub(crate) out: PathBuf,
    /// `mteb`: candidates per reranking query (the published lists hold 17).
    #[arg(long, default_value_t = 17)]
    pub(crate) candidates: usize,
    /// `mteb`, `reranker-train`: seed of the negatives drawn (and of the reranking lists'
    /// order).
    #[arg(long, default_value_t = 20_250_101)]
    pub(crate) seed: u64,
    /// `mteb`: let `CorebC2CRetrieval` rank a query's own document, as the published dataset
    /// does (MTEB then gives `coreb eval --keep-self`'s number, not CoREB's).
    #[arg(long)]
    pub(crate) keep_self: bool,
    /// `mteb`: keep the reranking queries that have no hard negative (left out by default, as
    /// the published text2code reranking task leaves them out).
    #[arg(long)]
    pub(crate) all_queries: bool,
}

/// Arguments of `coreb check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The release directory (`releases/<version>`).
    pub(crate) release: PathBuf,
    /// Where the other releases are, whose ids this one must not reuse (default: the
    /// release's parent directory).
    #[arg(long)]
    pub(crate) releases_dir: Option<PathBuf>,
    /// Print the results as one JSON object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `coreb compare`.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// System A: a results file (`results.json` of `coreb eval --out`, or its `--json`
    /// output) or a TREC run file (then `--release` is needed).
    pub(crate) a: PathBuf,
    /// System B, like A.
    pub(crate) b: PathBuf,
    /// The release (or BEIR folder) run files are evaluated on.
    #[arg(long)]
    pub(crate) release: Option<PathBuf>,
    /// The measure compared: `ndcg@10`, `map@5`, `recall@10`, `p@1`, `mrr@10`, `r_cap@10`.
    #[arg(long, default_value = "ndcg@10")]
    pub(crate) metric: String,
    /// Bootstrap resamples of the interval of the difference.
    #[arg(long, default_value_t = 1000)]
    pub(crate) resamples: usize,
    /// Seed of the bootstrap and the randomisation test.
    #[arg(long, default_value_t = 20_250_101)]
    pub(crate) seed: u64,
    /// Print JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `coreb trec-eval`; the flags are trec_eval's own.
#[derive(Debug, Args)]
pub(crate) struct TrecEvalArgs {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub(crate) help: Option<bool>,
    /// Also print the measures of every query.
    #[arg(short = 'q')]
    pub(crate) per_query: bool,
    /// Average over every query of the qrels, not only those in the run.
    #[arg(short = 'c')]
    pub(crate) complete: bool,
    /// Use at most this many retrieved documents per query.
    #[arg(short = 'M')]
    pub(crate) max_retrieved: Option<usize>,
    /// Lowest relevance level that counts as relevant for binary measures.
    #[arg(short = 'l', default_value_t = 1)]
    pub(crate) level: i64,
    /// A measure or measure group, with optional parameters (`ndcg_cut.5,10`, `all_trec`).
    #[arg(short = 'm')]
    pub(crate) measures: Vec<String>,
    /// The qrels file.
    pub(crate) qrels: PathBuf,
    /// The run file.
    pub(crate) run: PathBuf,
}

/// A language CoREB generates solutions in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LangArg {
    /// Python 3.
    Python,
    /// C++17.
    Cpp,
    /// Java 17.
    Java,
    /// Go.
    Go,
    /// Ruby.
    Ruby,
}

/// Arguments of `coreb judge`.
#[derive(Debug, Args)]
pub(crate) struct JudgeArgs {
    /// A JSONL file in LiveCodeBench layout; the first row (or the one `--problem-id` names) is judged.
    pub(crate) problem: PathBuf,
    /// The solution's source file.
    pub(crate) solution: PathBuf,
    /// The solution's language.
    #[arg(long, value_enum)]
    pub(crate) lang: LangArg,
    /// The `question_id` of the problem to judge, when the file holds several.
    #[arg(long)]
    pub(crate) problem_id: Option<String>,
    /// Print the verdicts as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `coreb audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// The release directory.
    pub(crate) release: PathBuf,
    /// Which audit.
    #[command(subcommand)]
    pub(crate) audit: AuditKind,
    /// Write `<audit>.json` and `<audit>.md` here (default: print the Markdown only).
    #[arg(long, global = true)]
    pub(crate) out: Option<PathBuf>,
    /// Print the JSON report on stdout.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

/// The audits of `coreb audit`.
#[derive(Debug, Subcommand)]
pub(crate) enum AuditKind {
    /// Exact hash hits and long n-gram overlap of a text/code corpus (JSONL or Parquet)
    /// against the release, per item, worst offenders first.
    Overlap(coreb_curation::audit::overlap::OverlapOptions),
    /// How far each rewritten statement moved from its original (n-gram overlap between the
    /// release's `full` texts and `problems.parquet` statements); with `--tests`, how the
    /// tests were carried over (from the build's rewrite artifact).
    Rewrite(RewriteArgs),
    /// pass@1 of a model endpoint on the original problems against the rewritten ones, per
    /// contest month: the drop is the contamination signal.
    Model(ModelAuditArgs),
}

/// Arguments of `coreb audit <release> rewrite`.
#[derive(Debug, Args)]
pub(crate) struct RewriteArgs {
    /// What the audit measures.
    #[command(flatten)]
    pub(crate) options: coreb_curation::audit::rewrite::RewriteOptions,
    /// The build directory holding `artifacts/rewrite` (implies `--tests`; default: the
    /// `output_dir` of the build manifest embedded in the release).
    #[arg(long)]
    pub(crate) build_dir: Option<PathBuf>,
}

/// Arguments of `coreb audit <release> model`: the audit's options, and how the command finds
/// and checks the build the release was made from.
#[derive(Debug, Args)]
#[command(
    mut_arg("concurrency", |a| a.default_value("8")),
    mut_arg("timeout_secs", |a| a.default_value("300")),
    mut_arg("store", |a| a.default_value(".coreb-cache/audit-responses"))
)]
pub(crate) struct ModelAuditArgs {
    /// What the audit asks, of which endpoint, and how.
    #[command(flatten)]
    pub(crate) options: coreb_curation::audit::model::ModelOptions,
    /// The build directory holding `artifacts/rewrite` (default: the `output_dir` of the
    /// build manifest embedded in the release).
    #[arg(long)]
    pub(crate) build_dir: Option<PathBuf>,
    /// Apply the sandbox settings and the compile/run commands that the release's embedded
    /// build manifest sets in `[stages.execute]` (refused by default).
    #[arg(long)]
    pub(crate) trust_release_sandbox: bool,
}

/// Arguments of `coreb corpus`.
#[derive(Debug, Args)]
pub(crate) struct CorpusArgs {
    /// The corpus manifest (TOML).
    pub(crate) manifest: PathBuf,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run as shard process `I` of `N` (`0/4` … `3/4`): parse the lines that start in the
    /// `I`-th of `N` byte ranges of the plain JSONL sources (counting the others) and the pairs
    /// of other sources whose id hash falls in shard `I`, and write their sketches and records to
    /// `<output>/parts/`; then `coreb merge corpus <manifest>` curates the output.
    #[arg(long, value_name = "I/N", value_parser = ShardSpec::parse)]
    pub(crate) shard: Option<ShardSpec>,
    /// Decide the near-duplicates in `T` band-range tasks run as separate processes (an exact
    /// step, `T` band tasks, a clustering step; see `--dedup-step`) instead of in this
    /// process, so that no process holds every sketch. The output is the same for every `T`.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u32).range(1..), conflicts_with_all = ["shard", "dedup_step"])]
    pub(crate) dedup_tasks: Option<u32>,
    /// Run one step of the split near-duplicate decision over the complete shard parts in
    /// `<output>/parts/` (for a scheduler; `coreb merge corpus` then uses its result):
    /// `exact`, then `bands` once per `--task I/T`, then `clusters`.
    #[arg(long, value_enum, conflicts_with = "shard")]
    pub(crate) dedup_step: Option<DedupStep>,
    /// With `--dedup-step bands`: task `I` of `T` (the bands are split into `T` ranges).
    #[arg(long, value_name = "I/T", value_parser = ShardSpec::parse, requires = "dedup_step")]
    pub(crate) task: Option<ShardSpec>,
}

/// What `coreb merge` combines: the parts of `coreb corpus --shard i/N`, or of a build stage
/// that runs as shard processes (`coreb generate --shard i/N` …, [`StageName::shardable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MergeStage {
    /// `coreb corpus --shard i/N`.
    Corpus,
    /// `coreb <stage> --shard i/N`.
    Build(StageName),
}

impl MergeStage {
    /// Parse `corpus` or the name of a shardable stage.
    pub(crate) fn parse(s: &str) -> Result<MergeStage, String> {
        if s == "corpus" {
            return Ok(MergeStage::Corpus);
        }
        match s.parse::<StageName>() {
            Ok(stage) if stage.shardable() => Ok(MergeStage::Build(stage)),
            _ => {
                let names: Vec<&str> = std::iter::once("corpus")
                    .chain(
                        StageName::ALL
                            .into_iter()
                            .filter(|st| st.shardable())
                            .map(StageName::as_str),
                    )
                    .collect();
                Err(format!("`{s}` has no shard processes to merge; one of: {}", names.join(", ")))
            }
        }
    }

    /// The build stage, for all but `corpus`.
    pub(crate) fn build_stage(self) -> Option<StageName> {
        match self {
            MergeStage::Corpus => None,
            MergeStage::Build(stage) => Some(stage),
        }
    }
}

/// Arguments of `coreb merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The stage whose parts to combine: `corpus`, or a stage that runs as shard processes
    /// (one whose command takes `--shard`).
    #[arg(value_parser = MergeStage::parse)]
    pub(crate) stage: MergeStage,
    /// The manifest the shard processes ran.
    pub(crate) manifest: PathBuf,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Build stages: the `--output-dir` the shard processes were given.
    #[arg(long)]
    pub(crate) output_dir: Option<PathBuf>,
    /// Build stages: worker threads (default: all cores). Outputs do not depend on it.
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// `corpus`: decide the near-duplicates in `T` band-range tasks run as separate
    /// processes (see `coreb corpus --dedup-tasks`); the output is the same for every `T`.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) dedup_tasks: Option<u32>,
}

/// Arguments of `coreb init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The workspace to make: a new or empty directory (a non-empty one is refused).
    pub(crate) dir: PathBuf,
}

/// Arguments of `coreb plan`.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// The month to release, `YYYY-MM`.
    pub(crate) month: String,
    /// Where published releases are.
    #[arg(long, default_value = "releases")]
    pub(crate) releases_dir: PathBuf,
    /// Start from this manifest instead of the latest release's build manifest.
    #[arg(long)]
    pub(crate) from: Option<PathBuf>,
    /// Where to write the new manifest (default: `manifests/v<YYYYMM>.toml`).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Add a source, `NAME=URL` (e.g. a new `test7.jsonl`); repeatable.
    #[arg(long = "source", value_name = "NAME=URL")]
    pub(crate) sources: Vec<String>,
    /// Do not download sources to pin their sha256 (leave pins as they are).
    #[arg(long)]
    pub(crate) no_pin: bool,
    /// Overwrite the file `--out` names (an existing file is otherwise refused).
    #[arg(long)]
    pub(crate) force: bool,
    /// Write a window that overlaps a published release's (a control release, a rebuild);
    /// otherwise refused, as its problems would be in both.
    #[arg(long)]
    pub(crate) allow_overlap: bool,
}

/// Arguments of `coreb programs`.
#[derive(Debug, Args)]
pub(crate) struct ProgramsArgs {
    /// The build manifest; its `rewrite` and `generate` stages must have run.
    pub(crate) manifest: PathBuf,
    /// The build directory whose artifacts are read, as `coreb build --output-dir` was given
    /// (default: the manifest's `output_dir`). Only read: nothing is created there.
    #[arg(long, visible_alias = "build-dir")]
    pub(crate) output_dir: Option<PathBuf>,
    /// Where to write `<solution id>/<source file>` and `index.jsonl` (one line per program:
    /// solution_id, problem_id, language, file, main_class).
    #[arg(long)]
    pub(crate) out: PathBuf,
}

/// An LLM stage by its name (`rewrite`, `rewrite_tests`, `generate` …).
fn llm_stage(name: &str) -> Result<coreb_llm::LlmStage, String> {
    coreb_llm::LlmStage::ALL.into_iter().find(|s| s.as_str() == name).ok_or_else(|| {
        format!(
            "not an LLM stage: `{name}` (one of {})",
            coreb_llm::LlmStage::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        )
    })
}

/// Arguments of `coreb store`.
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// What to do with the store.
    #[command(subcommand)]
    pub(crate) command: StoreCommand,
}

/// The subcommands of `coreb store`.
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Count entries per stage, model and finish reason; list invalid files.
    Stats {
        /// The store directory.
        store: PathBuf,
        /// Print the statistics as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write every entry, sorted by key, to one JSONL file.
    Export {
        /// The store directory.
        store: PathBuf,
        /// The JSONL file to write.
        out: PathBuf,
    },
    /// Add the entries of a JSONL export (or of hand-written entries) to a store.
    Import {
        /// The store directory.
        store: PathBuf,
        /// The JSONL file to read.
        input: PathBuf,
        /// Replace entries stored with different content (otherwise they are conflicts).
        #[arg(long)]
        overwrite: bool,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Remove the entries a stage could not use (rejected answers, recorded with their
    /// reason; cut or filtered ones), so that a rerun asks them again. Answers in use stay.
    Prune {
        /// The store directory.
        store: PathBuf,
        /// Only entries first asked by this LLM stage (`rewrite`, `rewrite_tests`, `generate` …).
        #[arg(long, value_parser = llm_stage)]
        stage: Option<coreb_llm::LlmStage>,
        /// Only entries rejected for this reason kind (`schema`, `not_json`, `no_code`,
        /// `truncated`, `content_filter` … as in `rejections.jsonl` and `coreb store stats`).
        #[arg(long)]
        reason: Option<String>,
        /// List what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write the store of a manifest from authored answers (the bundled sample's content).
    #[command(hide = true)]
    Author {
        /// The build manifest whose store is written.
        manifest: PathBuf,
        /// The directory of authored `<question_id>.json` files.
        authored: PathBuf,
    },
}

#[cfg(test)]
mod help_tests {
    use super::*;

    #[test]
    fn every_command_is_in_exactly_one_group_and_help_lists_them_by_group() {
        use clap::CommandFactory;
        let names: Vec<String> =
            Cli::command().get_subcommands().map(|s| s.get_name().to_owned()).collect();
        let groups = command_groups();
        for name in &names {
            let n = groups.iter().filter(|(_, g)| g.contains(&name.as_str())).count();
            assert_eq!(n, 1, "`{name}` is in {n} groups of COMMAND_GROUPS");
        }
        for (group, g) in &groups {
            for name in g {
                assert!(
                    names.iter().any(|n| n == name),
                    "group `{group}` lists `{name}`, which is not a command"
                );
            }
        }
        let help = command().render_help().to_string();
        let mut at = 0;
        for (group, g) in &groups {
            let pos = help
                .find(&format!("{group}:"))
                .unwrap_or_else(|| panic!("no `{group}:` in\n{help}"));
            assert!(pos >= at, "groups out of order in\n{help}");
            at = pos;
            let section = &help[pos..];
            let end = section.find("\n\n").unwrap_or(section.len());
            for name in g {
                assert!(
                    section[..end].lines().any(|l| l.trim_start().starts_with(&format!("{name} "))),
                    "`{name}` not under `{group}`:\n{help}"
                );
            }
        }
        assert!(help.contains("Options:") && help.contains("--help"), "{help}");
        // The exit codes end the help, as the README's one table has them.
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
        )
        .unwrap();
        for (code, means) in EXIT_CODES {
            assert!(help.contains(&format!("  {code:8}  {means}\n")), "{code}: {help}");
            assert!(
                readme.contains(&format!("| {code} | {means} |")),
                "README.md has no row `| {code} | {means} |`"
            );
        }
    }
}
