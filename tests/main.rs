//! Integration tests across stages; they run the real `coreb` binary or call stages through
//! the engine. Each module is one area:
//!
//! - `support`: the `coreb` binary and the test venv's Python, the loopback HTTP server, and
//!   what several modules share: problem and file builders, output assertions (`stderr_has`,
//!   `refused`, `failed_naming`), tree hashes.
//! - `ingest`: ingest, dedup and filter on the shared LiveCodeBench rows.
//! - `fetch`: downloads from a local HTTP server: resume, retries, checksums.
//! - `execute`: the sandboxed judge: five languages, hostile programs, verdict rules (exact
//!   integers, per-language time limits), multi-MB tests, the toolchain preflight, a release's
//!   sandbox settings refused, `coreb judge`. (The sandbox's own hostile tests are in
//!   `crates/coreb-sandbox/tests`.)
//! - `llm`: the LLM gateway, response store and LLM stages against a fault-injecting server.
//! - `live`: live builds (issue #22): early stop with the cause, reruns that ask nothing; the opt-in real-model smoke test.
//! - `month` (issue #13): `bench/month` at N = 6: generated LCB rows, the simulated endpoint with faults, a live build checked against the planted truth.
//! - `recheck` (issue #12): rewritten tests re-checked against a reference solution: `rewrite`
//!   against a loopback endpoint asks for the reference, `execute` runs it in the sandbox and
//!   rejects a bijected or model-rewritten test it fails.
//! - `interrupt` (issue "A real month survives its operator"): the sample's `execute` stopped
//!   part-way by SIGINT, SIGTERM and `kill -9`; the rerun judges only what was not committed.
//! - `operate` (issue "A real month survives its operator"): `build --check` and the preflight,
//!   exit codes, `--jobs 0`, a waiting build naming the lock's holder, `coreb plan --out` paths.
//! - `refuse` (issue 60): exit codes as the README's table says; one check per kind of input
//!   (a run against a release, a store, a release's files against its MANIFEST, a releases dir,
//!   a window) driven through every command taking it; dates that exist, windows that overlap
//!   no release, `plan --out` and a recorded review not overwritten, an export into its input.
//! - `regeneration` (issue 48): results know their release (`eval --run`, `--allow-partial`,
//!   `compare`, the leaderboard), audits and `programs` read the build that made the release, and
//!   the help texts, `store stats`, `export` and `trec-eval` on a release's BEIR qrels.
//! - `publish` (issues #47, #48): a published release is immutable unless `--replace`d;
//!   `verify --checksums` and `coreb check` name a damaged file.
//! - `verify_kit` (issue 48): `coreb verify RELEASE --sources DIR` from anywhere: a copy of the
//!   sample (and its kit folder in `coreb export`'s output) rebuilt from its regeneration kit
//!   byte for byte; hostile and damaged kits refused, the entry named, nothing written outside;
//!   (issue 62) another JDK patch release recorded verifies (exit 0, the versions named) unless
//!   `--strict`, a changed qrels row fails naming it.
//! - `release`: the sample end to end: byte-identical rebuilds, `--jobs`, `kill -9`, `verify`, gates, Python readers.
//! - `review` (issue #50): `coreb review`: the sample's review page in headless Chromium
//!   (three reviewers, answers kept over a reload, exported), `coreb review report` against
//!   scikit-learn, statsmodels and krippendorff, byte-identical pages, refused files, hostile
//!   text shown as text; the card's Human validation section.
//! - `control` (issue #50): the sample's control release (no rewrite) rebuilds byte-identical,
//!   names its release, and `coreb compare` pairs BM25 on the two per query.
//! - `eval`: `coreb eval`: BM25 on CoSQA, release folders, reports, dense retrieval via a local server.
//! - `eval_protocol`: the paper's protocol: prompts per task/side, cache keys, duplicates, `/rerank`
//!   and `/score`, listwise reranking against a reference, `coreb compare` and CIs against numpy/scipy.
//! - `corpus`: `coreb corpus` on CoSQA plus planted duplicates and release copies; `coreb audit`;
//!   (issue #35) the near-duplicate decision split into task processes, its Slurm recipe on the
//!   single-node Slurm, `kill -9` of band tasks.
//! - `audit`: `coreb audit <release> model` against a local endpoint (pass@1 drop per window) and `rewrite --tests`.
//! - `house` (issue 59): a stage is named once (its row, its module, its subcommand; no other
//!   list of stage names), and no two sibling modules of any crate import each other.
//! - `layout` (issue #33): the README's crate table and architecture picture against `cargo
//!   metadata`.
//! - `leaderboard`: `coreb eval --record` and `coreb leaderboard`: three releases, three retrievers, the
//!   site driven in headless Chromium from `file://` against the results store and `--json`
//!   (issue 57: the overall score weighted by queries, the category filter).
//! - `fidelity` (issue #12): the committed sample's code documents have no comments; its card,
//!   MANIFEST and store say the content was written by hand.
//! - `batch` (issue #16): the OpenAI Batch API transport against a fake Batch API: statuses, error
//!   lines, an expired batch; a build killed while its batch is in flight resumes the same batch.
//! - `series` (issue #32): the sample composed as the published CoREB series, against the
//!   authors' own dataset maker (PyPI `coreb` 0.1.0) on the same build; the search cap.
//! - `scaleout` (issue #16): the sample as 3 shard processes per stage through the Slurm recipe (shell fallback) vs 1 process; merges refusing missing and stale shards.
//! - `trec_eval`: `coreb trec-eval` against trec_eval's conformance outputs; bad input.
//! - `validity` (issue #11): one run through four evaluation paths, `--keep-self`, `coreb check`
//!   on the sample and on planted defects.
//! - `zero_glue` (issue #15): the sample through `datasets`, BEIR and MTEB with no glue (MTEB's
//!   nDCG@10 = `coreb eval --run` on its predictions); `coreb export --layout hf-coreb` read as the
//!   published dataset; `scripts/setup`; no test file refers outside the repository.
//! - `mteb` (issue 57): `coreb export --layout mteb` of the sample run by MTEB's own six
//!   CoREB(v1) task classes; `coreb eval` on each task folder equals MTEB's scores; the
//!   reranker's training records; the `[purpose]` gate through real builds (a test release
//!   sharing problems with its training release refused, a disjoint one published).
//! - `workspace` (issue #51): `coreb init` makes a workspace elsewhere; there the binary alone
//!   builds the sample byte for byte, plans the next month, evaluates and exports.

mod support;

mod audit;
mod batch;
mod control;
mod corpus;
mod eval;
mod eval_protocol;
mod execute;
mod fetch;
mod fidelity;
mod house;
mod ingest;
mod interrupt;
mod layout;
mod leaderboard;
mod live;
mod llm;
mod month;
mod mteb;
mod operate;
mod publish;
mod recheck;
mod refuse;
mod regeneration;
mod release;
mod review;
mod scaleout;
mod series;
mod trec_eval;
mod validity;
mod verify_kit;
mod workspace;
mod zero_glue;
