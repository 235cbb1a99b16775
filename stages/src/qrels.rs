//! `qrels`: graded relevance judgements for the three CoREB tasks (DESIGN §1.5).
//!
//! Relevance 2 = true positive, 1 = hard negative from the same problem, 0 = everything else
//! (not listed). At most `max_hard_negatives` hard negatives per query, sampled with a seeded
//! generator keyed by the query, so a query's sample never depends on the order or number of
//! other queries.
//!
//! - text-to-code: subtasks `canonical` (the summary), `full` (title + rewritten statement) and
//!   `search` (each generated query), each with language constraint `any` and per language;
//!   positives are the passing solutions (of that language); hard negatives in priority order:
//!   failed solutions of the problem in the same language, then any failed solution of the
//!   problem, then passing solutions of the problem that are not positives.
//! - code-to-text: a passing solution → the problem's `full` or `canonical` text; hard
//!   negatives are the problem's distractor statements.
//! - code-to-code: a passing solution → passing solutions of the same problem in another
//!   language (`cross_lang`) or by another model (`cross_model`); hard negatives as for
//!   text-to-code, relative to the positives' languages. The query's own document is never
//!   judged.
//!
//! Pure: it assigns ids and judgements; the release stage writes the tables.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::problem::ProblemId;
use crate::solution::{Language, SolutionId};

/// `[stages.qrels]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QrelsConfig {
    /// Seed of the hard-negative sampling (recorded in the release MANIFEST).
    pub seed: u64,
    /// Hard negatives per query at most.
    pub max_hard_negatives: usize,
}

impl Default for QrelsConfig {
    fn default() -> Self {
        QrelsConfig { seed: 20_250_101, max_hard_negatives: 3 }
    }
}

/// The texts of one problem that queries and the text corpus are made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemTexts {
    /// The problem.
    pub problem_id: ProblemId,
    /// Rewritten title.
    pub title: String,
    /// Rewritten statement.
    pub statement: String,
    /// Canonical 50–150-word summary.
    pub canonical: String,
    /// Distractor statements (hard rewrites).
    pub distractors: Vec<String>,
    /// Developer-style search queries.
    pub search_queries: Vec<String>,
}

impl ProblemTexts {
    /// The `full` text: title and statement.
    pub fn full(&self) -> String {
        format!("{}\n\n{}", self.title, self.statement)
    }
}

/// A solution with its execution result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedSolution {
    /// The solution.
    pub id: SolutionId,
    /// Its problem.
    pub problem_id: ProblemId,
    /// The model that wrote it.
    pub model: String,
    /// Its language.
    pub language: Language,
    /// The code.
    pub code: String,
    /// Did it pass every test?
    pub passed: bool,
}

/// The three tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Text query → code.
    Text2Code,
    /// Code query → code.
    Code2Code,
    /// Code query → text.
    Code2Text,
}

impl Task {
    /// All tasks in release order.
    pub const ALL: [Task; 3] = [Task::Text2Code, Task::Code2Code, Task::Code2Text];

    /// `text2code`, `code2code`, `code2text`.
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Text2Code => "text2code",
            Task::Code2Code => "code2code",
            Task::Code2Text => "code2text",
        }
    }
}

/// A document id (`code_<version>_<n:05>` or `text_<version>_<n:05>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DocId(pub String);

/// A query id (`q_<subtask>_<n:04>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueryId(pub String);

/// A relevance grade: 2 positive, 1 hard negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Relevance(pub u8);

/// A document of the code corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeDoc {
    /// Its id.
    pub code_id: DocId,
    /// The code.
    pub code: String,
    /// Its language.
    pub language: Language,
    /// The model that wrote it.
    pub model: String,
    /// Its problem.
    pub problem_id: ProblemId,
    /// The solution it comes from.
    pub solution_id: SolutionId,
    /// Did it pass every test?
    pub passed: bool,
}

/// What a text document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextKind {
    /// Title + rewritten statement.
    Full,
    /// The canonical summary.
    Canonical,
    /// A distractor statement.
    Distractor,
}

/// A document of the text corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDoc {
    /// Its id.
    pub text_id: DocId,
    /// The text.
    pub text: String,
    /// What it is.
    pub kind: TextKind,
    /// The problem it describes (or imitates, for a distractor).
    pub problem_id: ProblemId,
}

/// A query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    /// Its id.
    pub query_id: QueryId,
    /// The query text (or code).
    pub query: String,
    /// The task.
    pub task: Task,
    /// `canonical`, `full`, `search`, `cross_lang`, `cross_model`.
    pub subtask: String,
    /// `any` or a language the relevant documents are in.
    pub language_constraint: String,
    /// The problem the query comes from.
    pub source_problem_id: ProblemId,
    /// For code queries: the code document the query is (never judged for itself).
    pub source_doc_id: Option<DocId>,
    /// Number of relevance-2 documents.
    pub num_relevant_docs: usize,
}

/// One judgement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Qrel {
    /// The query.
    pub query_id: QueryId,
    /// The document.
    pub doc_id: DocId,
    /// 2 or 1.
    pub relevance: Relevance,
}

/// Queries and judgements of one task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSet {
    /// Queries, in id order.
    pub queries: Vec<Query>,
    /// Judgements, grouped by query in query order, positives first.
    pub qrels: Vec<Qrel>,
}

/// Counts of one qrels run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QrelsStats {
    /// Problems in.
    pub problems: u64,
    /// Code documents.
    pub code_docs: u64,
    /// Text documents.
    pub text_docs: u64,
    /// Queries per task and subtask.
    pub queries: BTreeMap<String, u64>,
    /// Queries skipped because they had no positive document.
    pub skipped_without_positive: u64,
    /// Queries with at least one hard negative.
    pub with_hard_negatives: u64,
}

/// The result of [`qrels`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QrelsOutput {
    /// Every solution, passing or not.
    pub code_corpus: Vec<CodeDoc>,
    /// Full texts, canonical texts and distractors.
    pub text_corpus: Vec<TextDoc>,
    /// Per task.
    pub tasks: BTreeMap<Task, TaskSet>,
    /// Counts.
    pub stats: QrelsStats,
}

/// A small deterministic generator (splitmix64): its output is part of published releases,
/// so it must never change with a dependency upgrade.
struct SplitMix(u64);

impl SplitMix {
    fn for_key(seed: u64, key: &str) -> Self {
        SplitMix(xxh3_64(format!("{seed}:{key}").as_bytes()))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `k` items of `items`, chosen uniformly, in their original order.
    fn sample<T: Clone>(&mut self, items: &[T], k: usize) -> Vec<T> {
        if items.len() <= k {
            return items.to_vec();
        }
        let mut idx: Vec<usize> = (0..items.len()).collect();
        for i in 0..k {
            let j = i + (self.next() % (idx.len() - i) as u64) as usize;
            idx.swap(i, j);
        }
        let mut chosen = idx[..k].to_vec();
        chosen.sort_unstable();
        chosen.into_iter().map(|i| items[i].clone()).collect()
    }
}

/// Hard negatives from priority tiers: fill from the first tier, then the next, sampling
/// within the tier that overflows.
fn pick_tiers(rng: &mut SplitMix, tiers: &[Vec<usize>], max: usize) -> Vec<usize> {
    let mut picked: Vec<usize> = Vec::new();
    for tier in tiers {
        let room = max - picked.len();
        if room == 0 {
            break;
        }
        let fresh: Vec<usize> = tier.iter().copied().filter(|d| !picked.contains(d)).collect();
        picked.extend(rng.sample(&fresh, room));
    }
    picked
}

/// Does a candidate document differ from the query in the way a code2code subtask asks?
type Differs<'a> = Box<dyn Fn(usize) -> bool + 'a>;

struct Builder<'a> {
    config: &'a QrelsConfig,
    sets: BTreeMap<Task, TaskSet>,
    counters: BTreeMap<(Task, String), usize>,
    stats: QrelsStats,
}

impl Builder<'_> {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        task: Task,
        subtask: &str,
        constraint: &str,
        text: String,
        problem: &ProblemId,
        source_doc: Option<DocId>,
        positives: Vec<DocId>,
        negatives: Vec<DocId>,
    ) {
        if positives.is_empty() {
            self.stats.skipped_without_positive += 1;
            return;
        }
        let n = self.counters.entry((task, subtask.to_owned())).or_insert(0);
        *n += 1;
        let query_id = QueryId(format!("q_{subtask}_{n:04}"));
        *self.stats.queries.entry(format!("{}/{subtask}", task.as_str())).or_insert(0) += 1;
        if !negatives.is_empty() {
            self.stats.with_hard_negatives += 1;
        }
        let set = self.sets.entry(task).or_default();
        for (docs, rel) in [(&positives, 2u8), (&negatives, 1u8)] {
            for d in docs {
                set.qrels.push(Qrel { query_id: query_id.clone(), doc_id: d.clone(), relevance: Relevance(rel) });
            }
        }
        set.queries.push(Query {
            query_id,
            query: text,
            task,
            subtask: subtask.to_owned(),
            language_constraint: constraint.to_owned(),
            source_problem_id: problem.clone(),
            source_doc_id: source_doc,
            num_relevant_docs: positives.len(),
        });
    }
}

/// Build corpora, queries and graded qrels for one release.
pub fn qrels(config: &QrelsConfig, version: &str, problems: &[ProblemTexts], solutions: &[JudgedSolution]) -> QrelsOutput {
    let mut problems: Vec<&ProblemTexts> = problems.iter().collect();
    problems.sort_by(|a, b| a.problem_id.cmp(&b.problem_id));
    let mut solutions: Vec<&JudgedSolution> = solutions.iter().filter(|s| !s.code.trim().is_empty()).collect();
    solutions.sort_by(|a, b| a.id.cmp(&b.id));

    let code_corpus: Vec<CodeDoc> = solutions
        .iter()
        .enumerate()
        .map(|(n, s)| CodeDoc {
            code_id: DocId(format!("code_{version}_{n:05}")),
            code: s.code.clone(),
            language: s.language,
            model: s.model.clone(),
            problem_id: s.problem_id.clone(),
            solution_id: s.id.clone(),
            passed: s.passed,
        })
        .collect();
    let mut text_corpus = Vec::new();
    let mut text_ids: BTreeMap<(&ProblemId, TextKind), Vec<DocId>> = BTreeMap::new();
    for p in &problems {
        let texts = std::iter::once((TextKind::Full, p.full()))
            .chain(std::iter::once((TextKind::Canonical, p.canonical.clone())))
            .chain(p.distractors.iter().map(|d| (TextKind::Distractor, d.clone())));
        for (kind, text) in texts {
            let id = DocId(format!("text_{version}_{:05}", text_corpus.len()));
            text_ids.entry((&p.problem_id, kind)).or_default().push(id.clone());
            text_corpus.push(TextDoc { text_id: id, text, kind, problem_id: p.problem_id.clone() });
        }
    }

    let mut b = Builder {
        config,
        sets: Task::ALL.iter().map(|t| (*t, TaskSet::default())).collect(),
        counters: BTreeMap::new(),
        stats: QrelsStats { problems: problems.len() as u64, code_docs: code_corpus.len() as u64, text_docs: text_corpus.len() as u64, ..QrelsStats::default() },
    };
    let max = b.config.max_hard_negatives;
    let seed = b.config.seed;

    for p in &problems {
        let docs: Vec<usize> = (0..code_corpus.len()).filter(|&i| code_corpus[i].problem_id == p.problem_id).collect();
        let languages: BTreeSet<Language> = docs.iter().map(|&i| code_corpus[i].language).collect();
        let doc_id = |i: usize| code_corpus[i].code_id.clone();
        let passing = |i: &usize| code_corpus[*i].passed;

        // text-to-code
        let mut texts: Vec<(&str, String)> = vec![("canonical", p.canonical.clone()), ("full", p.full())];
        texts.extend(p.search_queries.iter().map(|q| ("search", q.clone())));
        for (t_index, (subtask, text)) in texts.iter().enumerate() {
            let constraints = std::iter::once(None).chain(languages.iter().copied().map(Some));
            for lang in constraints {
                let in_lang = |i: &usize| lang.is_none_or(|l| code_corpus[*i].language == l);
                let positives: Vec<usize> = docs.iter().copied().filter(|i| passing(i) && in_lang(i)).collect();
                let tiers = [
                    docs.iter().copied().filter(|i| !passing(i) && in_lang(i)).collect::<Vec<_>>(),
                    docs.iter().copied().filter(|i| !passing(i)).collect(),
                    docs.iter().copied().filter(|i| passing(i) && !positives.contains(i)).collect(),
                ];
                let constraint = lang.map_or("any", Language::as_str);
                let key = format!("text2code/{}/{subtask}/{t_index}/{constraint}", p.problem_id);
                let negatives = pick_tiers(&mut SplitMix::for_key(seed, &key), &tiers, max);
                b.add(
                    Task::Text2Code,
                    subtask,
                    constraint,
                    text.clone(),
                    &p.problem_id,
                    None,
                    positives.into_iter().map(doc_id).collect(),
                    negatives.into_iter().map(doc_id).collect(),
                );
            }
        }

        // code-to-text and code-to-code: one query per passing solution.
        let distractors = text_ids.get(&(&p.problem_id, TextKind::Distractor)).cloned().unwrap_or_default();
        for &q in docs.iter().filter(|i| passing(i)) {
            let query_doc = &code_corpus[q];
            for (subtask, kind) in [("full", TextKind::Full), ("canonical", TextKind::Canonical)] {
                let key = format!("code2text/{}/{subtask}", query_doc.code_id.0);
                let negatives = SplitMix::for_key(seed, &key).sample(&distractors, max);
                b.add(
                    Task::Code2Text,
                    subtask,
                    query_doc.language.as_str(),
                    query_doc.code.clone(),
                    &p.problem_id,
                    Some(query_doc.code_id.clone()),
                    text_ids.get(&(&p.problem_id, kind)).cloned().unwrap_or_default(),
                    negatives,
                );
            }
            let others: Vec<usize> = docs.iter().copied().filter(|&i| i != q).collect();
            let cross: [(&str, Differs<'_>); 2] = [
                ("cross_lang", Box::new(|i: usize| code_corpus[i].language != query_doc.language)),
                ("cross_model", Box::new(|i: usize| code_corpus[i].model != query_doc.model)),
            ];
            for (subtask, differs) in cross {
                let positives: Vec<usize> = others.iter().copied().filter(|&i| code_corpus[i].passed && differs(i)).collect();
                let target_langs: BTreeSet<Language> = positives.iter().map(|&i| code_corpus[i].language).collect();
                let tiers = [
                    others.iter().copied().filter(|&i| !code_corpus[i].passed && target_langs.contains(&code_corpus[i].language)).collect::<Vec<_>>(),
                    others.iter().copied().filter(|&i| !code_corpus[i].passed).collect(),
                    others.iter().copied().filter(|&i| code_corpus[i].passed && !positives.contains(&i)).collect(),
                ];
                let key = format!("code2code/{}/{subtask}", query_doc.code_id.0);
                let negatives = pick_tiers(&mut SplitMix::for_key(seed, &key), &tiers, max);
                b.add(
                    Task::Code2Code,
                    subtask,
                    "any",
                    query_doc.code.clone(),
                    &p.problem_id,
                    Some(query_doc.code_id.clone()),
                    positives.into_iter().map(doc_id).collect(),
                    negatives.into_iter().map(doc_id).collect(),
                );
            }
        }
    }
    QrelsOutput { code_corpus, text_corpus, tasks: b.sets, stats: b.stats }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(id: &str) -> ProblemTexts {
        ProblemTexts {
            problem_id: ProblemId::from_question_id(id),
            title: format!("Title {id}"),
            statement: format!("Statement {id}"),
            canonical: format!("Summary {id}"),
            distractors: (0..4).map(|i| format!("Distractor {i} of {id}")).collect(),
            search_queries: vec![format!("search {id} a"), format!("search {id} b")],
        }
    }

    fn sol(p: &str, model: &str, lang: Language, passed: bool) -> JudgedSolution {
        let problem_id = ProblemId::from_question_id(p);
        JudgedSolution {
            id: SolutionId::new(&problem_id, model, lang, 0),
            problem_id,
            model: model.into(),
            language: lang,
            code: format!("code {p} {model} {lang}"),
            passed,
        }
    }

    fn fixture() -> (Vec<ProblemTexts>, Vec<JudgedSolution>) {
        use Language::*;
        let problems = vec![problem("1"), problem("2")];
        let mut s = Vec::new();
        for m in ["m-a", "m-b"] {
            for l in Language::ALL {
                // Problem 1: model b fails in cpp and java; problem 2: everything passes but m-b ruby.
                let fails1 = m == "m-b" && matches!(l, Cpp | Java);
                s.push(sol("1", m, l, !fails1));
                s.push(sol("2", m, l, !(m == "m-b" && l == Ruby)));
            }
        }
        (problems, s)
    }

    fn rels<'a>(set: &'a TaskSet, q: &QueryId) -> Vec<(&'a str, u8)> {
        set.qrels.iter().filter(|r| &r.query_id == q).map(|r| (r.doc_id.0.as_str(), r.relevance.0)).collect()
    }

    #[test]
    fn text2code_positives_and_hard_negative_priority() {
        let (p, s) = fixture();
        let out = qrels(&QrelsConfig::default(), "v202503", &p, &s);
        let t2c = &out.tasks[&Task::Text2Code];
        let doc = |id: &str| out.code_corpus.iter().find(|d| d.code_id.0 == id).unwrap();
        // Problem 1, canonical, cpp: positive = m-a cpp; hard negatives: m-b cpp (failed, same
        // language) first, then m-b java (failed, other language), then a passing non-cpp.
        let q = t2c.queries.iter().find(|q| q.source_problem_id.as_str() == "lcb_1" && q.subtask == "canonical" && q.language_constraint == "cpp").unwrap();
        let r = rels(t2c, &q.query_id);
        let pos: Vec<_> = r.iter().filter(|(_, g)| *g == 2).map(|(d, _)| doc(d)).collect();
        let neg: Vec<_> = r.iter().filter(|(_, g)| *g == 1).map(|(d, _)| doc(d)).collect();
        assert_eq!(pos.len(), 1);
        assert_eq!((pos[0].model.as_str(), pos[0].language), ("m-a", Language::Cpp));
        assert_eq!(neg.len(), 3);
        assert!(neg.iter().any(|d| d.language == Language::Cpp && !d.passed));
        assert!(neg.iter().any(|d| d.language == Language::Java && !d.passed));
        assert!(neg.iter().filter(|d| d.passed).all(|d| d.language != Language::Cpp));
        assert_eq!(q.num_relevant_docs, 1);
        // `any` of problem 1: 8 passing positives, the 2 failed as hard negatives.
        let any = t2c.queries.iter().find(|q| q.source_problem_id.as_str() == "lcb_1" && q.subtask == "full" && q.language_constraint == "any").unwrap();
        assert_eq!(any.num_relevant_docs, 8);
        assert_eq!(rels(t2c, &any.query_id).iter().filter(|(_, g)| *g == 1).count(), 2);
        // Queries: per problem 4 texts (canonical, full, 2 search) × (any + 5 languages).
        assert_eq!(t2c.queries.len(), 2 * 4 * 6);
        assert_eq!(out.stats.queries["text2code/search"], 2 * 2 * 6);
    }

    #[test]
    fn code2text_and_code2code() {
        let (p, s) = fixture();
        let out = qrels(&QrelsConfig::default(), "v202503", &p, &s);
        let c2t = &out.tasks[&Task::Code2Text];
        let passing = s.iter().filter(|s| s.passed).count();
        assert_eq!(c2t.queries.len(), passing * 2);
        let q = &c2t.queries[0];
        let r = rels(c2t, &q.query_id);
        assert_eq!(r.iter().filter(|(_, g)| *g == 2).count(), 1);
        assert_eq!(r.iter().filter(|(_, g)| *g == 1).count(), 3, "3 of the 4 distractors");
        let text = |id: &str| out.text_corpus.iter().find(|d| d.text_id.0 == id).unwrap();
        assert!(r.iter().all(|(d, g)| (text(d).kind == TextKind::Distractor) == (*g == 1)));
        assert!(r.iter().all(|(d, _)| text(d).problem_id == q.source_problem_id));

        let c2c = &out.tasks[&Task::Code2Code];
        for q in &c2c.queries {
            let own = q.source_doc_id.as_ref().unwrap();
            let r = rels(c2c, &q.query_id);
            assert!(r.iter().all(|(d, _)| *d != own.0), "a query never judges itself");
            let qdoc = out.code_corpus.iter().find(|d| &d.code_id == own).unwrap();
            for (d, g) in r {
                let d = out.code_corpus.iter().find(|x| x.code_id.0 == d).unwrap();
                assert_eq!(d.problem_id, qdoc.problem_id);
                if g == 2 {
                    assert!(d.passed);
                    match q.subtask.as_str() {
                        "cross_lang" => assert_ne!(d.language, qdoc.language),
                        "cross_model" => assert_ne!(d.model, qdoc.model),
                        other => panic!("subtask {other}"),
                    }
                }
            }
        }
    }

    #[test]
    fn deterministic_ids_and_seeded_sampling() {
        let (p, s) = fixture();
        let a = qrels(&QrelsConfig::default(), "v202503", &p, &s);
        let mut reversed = s.clone();
        reversed.reverse();
        let b = qrels(&QrelsConfig::default(), "v202503", &p, &reversed);
        assert_eq!(a, b, "input order does not matter");
        assert_eq!(a.code_corpus[0].code_id.0, "code_v202503_00000");
        assert_eq!(a.text_corpus[5].text_id.0, "text_v202503_00005");
        assert_eq!(a.tasks[&Task::Text2Code].queries[0].query_id.0, "q_canonical_0001");
        let c = qrels(&QrelsConfig { seed: 7, ..QrelsConfig::default() }, "v202503", &p, &s);
        assert_ne!(a.tasks[&Task::Code2Text].qrels, c.tasks[&Task::Code2Text].qrels, "another seed samples other distractors");
    }

    #[test]
    fn sampling_is_uniform_enough_and_stable() {
        let mut counts = [0u32; 4];
        for k in 0..4000 {
            for i in SplitMix::for_key(1, &k.to_string()).sample(&[0usize, 1, 2, 3], 3) {
                counts[i] += 1;
            }
        }
        assert!(counts.iter().all(|&c| (2700..3300).contains(&c)), "{counts:?}");
        // Pinned: a change here changes published releases.
        let mut rng = SplitMix(0);
        assert_eq!([rng.next(), rng.next()], [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4]);
    }
}
