//! `coreb export --layout mteb`: each release as the six datasets of MTEB's benchmark
//! `CoREB(v1)` (`CorebT2CRetrieval` … `CorebC2TReranking`, [`coreb_eval::mteb::TASKS`]), in the
//! layout MTEB's retrieval loader reads from a local folder:
//! `<out>/<version>/<MTEB task>/` with `corpus.jsonl`, `queries.jsonl`, `qrels/test.jsonl`
//! (the configs `corpus`, `queries`, `default`, split `test`, declared by the folder's
//! `README.md`), for a reranking task `top_ranked/test.jsonl` (config `top_ranked`: each
//! query's fixed candidates), `qrels/test.tsv` (the same judgements, for BEIR and `coreb
//! eval`) and `mteb_task.json` (the task, its main score and prompt). The release's
//! `MANIFEST.json` is copied to `<out>/<version>/`, so results on a task folder name the
//! release.
//!
//! What MTEB's evaluation of these folders means is CoREB's: the qrels MTEB reads count a
//! positive (relevance 2) alone — a hard negative is listed with score 0 where it is a
//! candidate, never with 1, which MTEB's pytrec_eval (relevance level 1) would count — and a
//! code2code query's own document is never ranked for it (not a candidate of its reranking
//! list; in the retrieval task, a `top_ranked` list of every document but its own, unless
//! [`MtebOptions::keep_self`]).
//!
//! The reranking lists follow what MTEB's descriptive statistics of the published
//! `mteb/coreb-*` datasets show: [`MtebOptions::candidates`] (17) per query, the positives, the
//! hard negatives, then easy negatives (documents of other problems) taken in turn from one
//! seeded shuffle of the corpus, so that every document is a candidate about equally often (the
//! published lists cover 1,735 of 1,744 code2code documents); queries without a hard negative
//! are left out, as the published text2code reranking task leaves out 57 of 1,123 queries,
//! those whose every document is a positive. docs/releases.md gives each choice and its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use coreb_base::seeded::{SplitMix64, fmix64};
use coreb_base::shard::id_hash;
use coreb_eval::mteb::{MtebTask, Protocol, TASK_FILE, TASKS, TaskFile};

use super::{ExportError, Judged, judged, releases_by_version};

/// The choices of an MTEB export that the published datasets do not settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MtebOptions {
    /// Candidates per reranking query (the published lists: 17).
    pub(crate) candidates: usize,
    /// Seed of the easy negatives' draw and of each list's order.
    pub(crate) seed: u64,
    /// Keep a code2code query's own document rankable in `CorebC2CRetrieval` (the published
    /// dataset's shape: MTEB then scores it as `coreb eval --keep-self` does).
    pub(crate) keep_self: bool,
    /// Keep reranking queries that have no hard negative.
    pub(crate) all_queries: bool,
}

impl Default for MtebOptions {
    fn default() -> Self {
        MtebOptions { candidates: 17, seed: 20_250_101, keep_self: false, all_queries: false }
    }
}

/// What one task folder holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MtebFolder {
    /// MTEB's task name.
    pub(crate) task: &'static str,
    /// Documents.
    pub(crate) docs: usize,
    /// Queries.
    pub(crate) queries: usize,
    /// Positives (relevance 2).
    pub(crate) positives: usize,
    /// Candidates over every list (reranking, or code2code retrieval without its own
    /// documents).
    pub(crate) candidates: usize,
    /// Queries of the release's task left out.
    pub(crate) left_out: usize,
}

/// One release exported.
#[derive(Debug, Clone)]
pub(crate) struct MtebRelease {
    /// Its version (`<out>/<version>/`).
    pub(crate) version: String,
    /// Its six task folders, in [`TASKS`] order.
    pub(crate) folders: Vec<MtebFolder>,
}

#[derive(Deserialize)]
struct DocKeys {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    problem_id: Option<String>,
}

#[derive(Deserialize)]
struct QueryKeys {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    source_problem_id: Option<String>,
    #[serde(default)]
    source_doc_id: Option<String>,
}

#[derive(Serialize)]
struct QrelRow<'a> {
    #[serde(rename = "query-id")]
    query: &'a str,
    #[serde(rename = "corpus-id")]
    doc: &'a str,
    score: i64,
}

#[derive(Serialize)]
struct TopRankedRow<'a> {
    #[serde(rename = "query-id")]
    query: &'a str,
    #[serde(rename = "corpus-ids")]
    docs: &'a [String],
}

/// A release's task: its BEIR folder's lines (kept as written) and its graded judgements.
struct Source {
    docs: Vec<(DocKeys, String)>,
    queries: Vec<(QueryKeys, String)>,
    /// Query → (positives, hard negatives), each in id order.
    judged: Judged,
}

fn read_source(release: &Path, task: &str) -> Result<Source, ExportError> {
    let folder = release.join(task);
    let lines = |file: &str| -> Result<Vec<(String, u64)>, ExportError> {
        let path = folder.join(file);
        if !path.is_file() {
            return Err(ExportError::MissingFile {
                release: release.to_owned(),
                file: format!("{task}/{file}"),
            });
        }
        coreb_base::jsonl::lines(&path)
            .and_then(|ls| ls.map(|l| l.map(|l| (l.text, l.number))).collect())
            .map_err(|e| ExportError::Manifest { path: path.clone(), reason: e.to_string() })
    };
    fn parse<T: serde::de::DeserializeOwned>(
        path: PathBuf,
    ) -> impl Fn((String, u64)) -> Result<(T, String), ExportError> {
        move |(text, number)| {
            serde_json::from_str(&text).map(|keys| (keys, text)).map_err(|e| {
                ExportError::Manifest { path: path.clone(), reason: format!("line {number}: {e}") }
            })
        }
    }
    let docs = lines("corpus.jsonl")?
        .into_iter()
        .map(parse(folder.join("corpus.jsonl")))
        .collect::<Result<Vec<(DocKeys, String)>, _>>()?;
    let queries = lines("queries.jsonl")?
        .into_iter()
        .map(parse(folder.join("queries.jsonl")))
        .collect::<Result<Vec<(QueryKeys, String)>, _>>()?;
    Ok(Source { docs, queries, judged: judged(release, task)? })
}

/// A stream seeded by the export's seed and `key`.
pub(super) fn stream(seed: u64, key: &str) -> SplitMix64 {
    SplitMix64::new(fmix64(seed ^ id_hash(key)))
}

/// `items` in a seeded order (Fisher–Yates).
fn shuffle<T>(items: &mut [T], rng: &mut SplitMix64) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.index(i + 1));
    }
}

/// The lines (as written) of the rows `keep` takes.
fn kept_lines<K>(rows: &[(K, String)], keep: impl Fn(&K) -> bool) -> Vec<String> {
    rows.iter().filter(|(k, _)| keep(k)).map(|(_, l)| l.clone()).collect()
}

/// A task folder's files, written under `dir`.
struct Written {
    docs: Vec<String>,
    queries: Vec<String>,
    /// (query, doc, score) in query order.
    qrels: Vec<(String, String, i64)>,
    top_ranked: Option<Vec<(String, Vec<String>)>>,
}

/// The retrieval task of `source`: its corpus, its judged queries and their positives; for
/// code2code, unless `keep_self`, each query's list of every document but its own.
fn retrieval(source: &Source, code2code: bool, keep_self: bool) -> Written {
    let queries: Vec<&(QueryKeys, String)> = source
        .queries
        .iter()
        .filter(|(q, _)| source.judged.get(&q.id).is_some_and(|(p, _)| !p.is_empty()))
        .collect();
    let qrels = queries
        .iter()
        .flat_map(|(q, _)| source.judged[&q.id].0.iter().map(|d| (q.id.clone(), d.clone(), 2)))
        .collect();
    let top_ranked = (code2code && !keep_self).then(|| {
        queries
            .iter()
            .map(|(q, _)| {
                let docs = source
                    .docs
                    .iter()
                    .filter(|(d, _)| Some(&d.id) != q.source_doc_id.as_ref())
                    .map(|(d, _)| d.id.clone())
                    .collect();
                (q.id.clone(), docs)
            })
            .collect()
    });
    Written {
        docs: source.docs.iter().map(|(_, l)| l.clone()).collect(),
        queries: queries.iter().map(|(_, l)| l.clone()).collect(),
        qrels,
        top_ranked,
    }
}

/// The reranking task of `source` (see the module's documentation), and how many of its
/// queries were left out.
fn reranking(source: &Source, task: &MtebTask, opts: &MtebOptions) -> (Written, usize) {
    let problem_of: BTreeMap<&str, Option<&str>> =
        source.docs.iter().map(|(d, _)| (d.id.as_str(), d.problem_id.as_deref())).collect();
    // One seeded order of the corpus; easy negatives are taken from it in turn.
    let mut pool: Vec<&str> = source.docs.iter().map(|(d, _)| d.id.as_str()).collect();
    shuffle(&mut pool, &mut stream(opts.seed, task.name));
    let mut cursor = 0usize;
    let (mut lists, mut left_out) = (Vec::new(), 0);
    for (q, _) in &source.queries {
        let Some((pos, neg)) = source.judged.get(&q.id) else {
            continue;
        };
        let room = opts.candidates.saturating_sub(pos.len());
        if pos.is_empty() || room == 0 || (neg.is_empty() && !opts.all_queries) {
            left_out += 1;
            continue;
        }
        let mut rng = stream(opts.seed, &q.id);
        let mut hard = neg.clone();
        if hard.len() > room {
            shuffle(&mut hard, &mut rng);
            hard.truncate(room);
            hard.sort();
        }
        let mut list: Vec<String> = pos.iter().chain(&hard).cloned().collect();
        let mut taken: BTreeSet<&str> = pos.iter().chain(&hard).map(String::as_str).collect();
        let own = q.source_doc_id.as_deref();
        let problem = q.source_problem_id.as_deref();
        let mut looked = 0;
        while list.len() < opts.candidates && looked < pool.len() {
            let doc = pool[cursor % pool.len()];
            cursor += 1;
            looked += 1;
            let same_problem =
                problem.is_some() && problem_of.get(doc).copied().flatten() == problem;
            if Some(doc) != own && !same_problem && taken.insert(doc) {
                list.push(doc.to_owned());
            }
        }
        shuffle(&mut list, &mut rng);
        lists.push((q, pos, list));
    }
    let used: BTreeSet<&str> =
        lists.iter().flat_map(|(_, _, l)| l.iter().map(String::as_str)).collect();
    let keep: BTreeSet<&str> = lists.iter().map(|(q, _, _)| q.id.as_str()).collect();
    let qrels = lists
        .iter()
        .flat_map(|(q, pos, list)| {
            list.iter().map(|d| {
                let score = if pos.binary_search(d).is_ok() { 2 } else { 0 };
                (q.id.clone(), d.clone(), score)
            })
        })
        .collect();
    let written = Written {
        docs: kept_lines(&source.docs, |d| used.contains(d.id.as_str())),
        queries: kept_lines(&source.queries, |q| keep.contains(q.id.as_str())),
        qrels,
        top_ranked: Some(lists.into_iter().map(|(q, _, l)| (q.id.clone(), l)).collect()),
    };
    (written, left_out)
}

/// The dataset card of a task folder: the configs MTEB's loader asks for, and what it holds.
fn folder_card(task: &MtebTask, version: &str, w: &Written, opts: &MtebOptions) -> String {
    let mut s = String::from("---\nconfigs:\n");
    let mut config = |name: &str, path: &str, default: bool| {
        let _ = write!(
            s,
            "- config_name: {name}\n{}  data_files:\n  - split: test\n    path: {path}\n",
            if default { "  default: true\n" } else { "" }
        );
    };
    config("corpus", "corpus.jsonl", false);
    config("queries", "queries.jsonl", false);
    config("default", "qrels/test.jsonl", true);
    if w.top_ranked.is_some() {
        config("top_ranked", "top_ranked/test.jsonl", false);
    }
    let _ = write!(
        s,
        "---\n\n# `{}` of CoREB release `{version}`\n\n\
         MTEB's task `{}` ({}, main score `{}`), made by `coreb export --layout mteb` from the release's \
         {} task: {} documents, {} queries, {} judgements. Prompt: \"{}\"\n\n\
         The qrels (`qrels/test.jsonl`, config `default`; `qrels/test.tsv` for BEIR) count a positive \
         (score 2) alone, as CoREB does.",
        task.name,
        task.name,
        task.kind(),
        task.main_score(),
        task.coreb_task,
        w.docs.len(),
        w.queries.len(),
        w.qrels.len(),
        task.prompt
    );
    match (task.protocol, &w.top_ranked) {
        (Protocol::Reranking, _) => {
            let _ = write!(
                s,
                " Each query ranks its {} candidates of `top_ranked/test.jsonl` (config `top_ranked`): its \
                 positives, its hard negatives (score 0), and documents of other problems drawn with seed {}; \
                 the corpus holds the documents some list names.",
                opts.candidates, opts.seed
            );
        }
        (Protocol::Retrieval, Some(_)) => s.push_str(
            " A code query's own document is never ranked for it: `top_ranked/test.jsonl` lists every \
             document but the query's own.",
        ),
        (Protocol::Retrieval, None) => {}
    }
    let _ = write!(
        s,
        "\n\n```python\nimport mteb\ntask = mteb.get_task(\"{}\")\n\
         task.metadata = task.metadata.model_copy(update={{\"dataset\": {{\"path\": \"<this folder>\", \"revision\": \"{version}\"}}}})\n```\n\n\
         (`scripts/coreb_mteb.py` of the coreb repository does this for every task of an export.)\n",
        task.name
    );
    s
}

fn jsonl_text<T: Serialize>(rows: impl IntoIterator<Item = T>) -> String {
    let mut s = String::new();
    for r in rows {
        s.push_str(&serde_json::to_string(&r).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// Write one task folder.
fn write_folder(
    dir: &Path,
    task: &MtebTask,
    version: &str,
    w: &Written,
    opts: &MtebOptions,
) -> Result<(), ExportError> {
    let write = |rel: &str, text: &str| -> Result<(), ExportError> {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|source| ExportError::Io { path: parent.to_owned(), source })?;
        }
        std::fs::write(&path, text).map_err(|source| ExportError::Io { path, source })
    };
    let lines = |ls: &[String]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    write("corpus.jsonl", &lines(&w.docs))?;
    write("queries.jsonl", &lines(&w.queries))?;
    write(
        "qrels/test.jsonl",
        &jsonl_text(w.qrels.iter().map(|(q, d, s)| QrelRow { query: q, doc: d, score: *s })),
    )?;
    let mut tsv = String::from("query-id\tcorpus-id\tscore\n");
    for (q, d, score) in &w.qrels {
        let _ = writeln!(tsv, "{q}\t{d}\t{score}");
    }
    write("qrels/test.tsv", &tsv)?;
    if let Some(lists) = &w.top_ranked {
        write(
            "top_ranked/test.jsonl",
            &jsonl_text(lists.iter().map(|(q, docs)| TopRankedRow { query: q, docs })),
        )?;
    }
    let reranking = task.protocol == Protocol::Reranking;
    let file = TaskFile {
        task: task.name.to_owned(),
        kind: task.kind().to_owned(),
        coreb_task: task.coreb_task.to_owned(),
        main_score: task.main_score().to_owned(),
        prompt: task.prompt.to_owned(),
        release: version.to_owned(),
        candidates: reranking.then_some(opts.candidates),
        seed: reranking.then_some(opts.seed),
    };
    let json = serde_json::to_string_pretty(&file).unwrap_or_default();
    write(TASK_FILE, &format!("{json}\n"))?;
    write("README.md", &folder_card(task, version, w, opts))
}

/// The card of the whole export.
fn export_card(releases: &[MtebRelease], opts: &MtebOptions) -> String {
    let mut s = String::from(
        "# CoREB releases as MTEB's CoREB(v1) tasks\n\n\
         Written by `coreb export --layout mteb`: per release (`<version>/`), the six tasks of MTEB's \
         benchmark `CoREB(v1)` under MTEB's names, each a folder MTEB's retrieval loader reads \
         (configs `corpus`, `queries`, `default`, and `top_ranked` for the reranking tasks; split `test`).\n\n\
         ```python\nimport mteb, sys\nsys.path.insert(0, \"<coreb>/scripts\")\nfrom coreb_mteb import mteb_tasks\n\
         results = mteb.evaluate(model, mteb_tasks(\"<this folder>/<version>\"))\n```\n\n",
    );
    let _ = writeln!(
        s,
        "Reranking lists: {} candidates, seed {}; queries without a hard negative {}; \
         `CorebC2CRetrieval` {}.\n",
        opts.candidates,
        opts.seed,
        if opts.all_queries { "kept" } else { "left out" },
        if opts.keep_self {
            "ranks a query's own document (the published shape)"
        } else {
            "never ranks a query's own document"
        }
    );
    s.push_str("| release | task | documents | queries | positives | candidates | queries left out |\n|---|---|---:|---:|---:|---:|---:|\n");
    for r in releases {
        for f in &r.folders {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.version, f.task, f.docs, f.queries, f.positives, f.candidates, f.left_out
            );
        }
    }
    s
}

/// Export every release of `releases_dir` (or the release it is) to `out` as MTEB's six
/// CoREB(v1) tasks per release; `out` is written beside itself, then renamed into place (an
/// empty directory or an earlier export is replaced, anything else refused).
pub(crate) fn export_mteb(
    releases_dir: &Path,
    out: &Path,
    opts: &MtebOptions,
) -> Result<Vec<MtebRelease>, ExportError> {
    // A list of one would hold a positive alone (the command refuses it as a usage error).
    let opts = &MtebOptions { candidates: opts.candidates.max(2), ..opts.clone() };
    let found = releases_by_version(releases_dir)?;
    let tmp = super::staging_dir(out)?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ExportError::Io { path, source }
    };
    let mut exported = Vec::new();
    for f in &found {
        let base = tmp.join(&f.version);
        std::fs::create_dir_all(&base).map_err(io(&base))?;
        std::fs::copy(f.dir.join("MANIFEST.json"), base.join("MANIFEST.json"))
            .map_err(io(&f.dir.join("MANIFEST.json")))?;
        let mut sources = BTreeMap::new();
        for t in ["text2code", "code2code", "code2text"] {
            sources.insert(t, read_source(&f.dir, t)?);
        }
        let mut folders = Vec::new();
        for task in &TASKS {
            let source = &sources[task.coreb_task];
            let (written, left_out) = match task.protocol {
                Protocol::Retrieval => {
                    let w = retrieval(source, task.coreb_task == "code2code", opts.keep_self);
                    let left = source.queries.len() - w.queries.len();
                    (w, left)
                }
                Protocol::Reranking => reranking(source, task, opts),
            };
            write_folder(&base.join(task.name), task, &f.version, &written, opts)?;
            folders.push(MtebFolder {
                task: task.name,
                docs: written.docs.len(),
                queries: written.queries.len(),
                positives: written.qrels.iter().filter(|(_, _, s)| *s > 0).count(),
                candidates: written
                    .top_ranked
                    .as_ref()
                    .map_or(0, |l| l.iter().map(|(_, d)| d.len()).sum()),
                left_out,
            });
        }
        exported.push(MtebRelease { version: f.version.clone(), folders });
    }
    std::fs::write(tmp.join("README.md"), export_card(&exported, opts))
        .map_err(io(&tmp.join("README.md")))?;
    super::publish(&tmp, out, "mteb")?;
    Ok(exported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Source {
        // Two problems, five documents each; q1 (problem a) has two positives and one hard
        // negative; q2 (problem b) has every document of its problem as a positive and no
        // hard negative; q3 is a code query whose own document is a0.
        let docs = ["a", "b"]
            .iter()
            .flat_map(|p| {
                (0..5).map(move |i| {
                    let id = format!("{p}{i}");
                    (
                        DocKeys { id: id.clone(), problem_id: Some((*p).to_owned()) },
                        format!("{{\"_id\":\"{id}\"}}"),
                    )
                })
            })
            .collect();
        let query = |id: &str, problem: &str, own: Option<&str>| {
            (
                QueryKeys {
                    id: id.into(),
                    source_problem_id: Some(problem.into()),
                    source_doc_id: own.map(Into::into),
                },
                format!("{{\"_id\":\"{id}\"}}"),
            )
        };
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        Source {
            docs,
            queries: vec![
                query("q1", "a", None),
                query("q2", "b", None),
                query("q3", "a", Some("a0")),
            ],
            judged: [
                ("q1".to_owned(), (owned(&["a0", "a1"]), owned(&["a2"]))),
                ("q2".to_owned(), (owned(&["b0", "b1", "b2", "b3", "b4"]), vec![])),
                ("q3".to_owned(), (owned(&["a1"]), owned(&["a3"]))),
            ]
            .into(),
        }
    }

    #[test]
    fn reranking_lists_hold_positives_hard_and_easy_negatives_never_the_own_document() {
        let opts = MtebOptions { candidates: 6, ..MtebOptions::default() };
        let task = &TASKS[4];
        let (w, left_out) = reranking(&source(), task, &opts);
        assert_eq!(left_out, 1, "q2 has no hard negative");
        let lists: BTreeMap<_, _> = w.top_ranked.clone().unwrap().into_iter().collect();
        assert_eq!(lists.keys().collect::<Vec<_>>(), ["q1", "q3"]);
        for (q, list) in &lists {
            assert_eq!(list.len(), 6, "{q}: {list:?}");
            let set: BTreeSet<_> = list.iter().collect();
            assert_eq!(set.len(), 6, "{q}: no document twice");
            // The rest are easy negatives: documents of the other problem.
            let easy = list.iter().filter(|d| d.starts_with('b')).count();
            assert_eq!(easy, 6 - if q == "q1" { 3 } else { 2 }, "{q}: {list:?}");
        }
        assert!(!lists["q3"].contains(&"a0".to_owned()), "own document");
        let scores: Vec<_> = w
            .qrels
            .iter()
            .filter(|(q, _, _)| q == "q1")
            .map(|(_, d, s)| (d.as_str(), *s))
            .filter(|(_, s)| *s > 0)
            .collect();
        let mut positives: Vec<&str> = scores.iter().map(|(d, _)| *d).collect();
        positives.sort_unstable();
        assert_eq!(positives, ["a0", "a1"]);
        // The hard negative a2 is a candidate of q1 with score 0, not 1.
        assert!(w.qrels.contains(&("q1".into(), "a2".into(), 0)));
        // Seeded: the same lists again; another seed, another draw.
        assert_eq!(reranking(&source(), task, &opts).0.top_ranked, w.top_ranked);
        let other = MtebOptions { seed: 7, ..opts.clone() };
        assert_ne!(reranking(&source(), task, &other).0.top_ranked, w.top_ranked);
        // Every candidate is in the corpus; the corpus holds nothing else.
        let docs: BTreeSet<String> = lists.values().flatten().cloned().collect();
        assert_eq!(w.docs.len(), docs.len());
        let all = MtebOptions { all_queries: true, ..opts };
        assert_eq!(reranking(&source(), task, &all).1, 0);
    }

    #[test]
    fn code2code_retrieval_lists_every_document_but_the_querys_own() {
        let w = retrieval(&source(), true, false);
        let lists: BTreeMap<_, _> = w.top_ranked.unwrap().into_iter().collect();
        assert_eq!(lists["q3"].len(), 9);
        assert!(!lists["q3"].contains(&"a0".to_owned()));
        assert_eq!(lists["q1"].len(), 10);
        assert!(w.qrels.iter().all(|(_, _, s)| *s == 2));
        assert!(retrieval(&source(), true, true).top_ranked.is_none());
        assert!(retrieval(&source(), false, false).top_ranked.is_none());
    }
}
