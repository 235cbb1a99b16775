//! `qrels`: graded relevance judgements for the three CoREB tasks.
//!
//! Relevance 2 = true positive, 1 = hard negative, 0 = everything else (not listed). At most
//! `max_hard_negatives` hard negatives per query, drawn with a seeded generator keyed by the
//! query id, so a query's draw never depends on the order or number of other queries.
//!
//! What is composed follows [`Composition`] (`[stages.qrels]`'s profile and switches; the
//! default profile, `series`, is the published CoREB series' composition):
//! - text-to-code: subtasks `canonical` (the summary), `full` (title + rewritten statement) and
//!   `search` (each generated query), each with language constraint `any` and per language the
//!   problem has a passing solution in. A search query written for a language is that
//!   language's query; any other constrained text follows [`ConstrainedText`]. Positives are
//!   the passing solutions (of that language; for search, per [`SearchPositives`]); hard
//!   negatives come from three tiers: failed solutions of the problem in the language, any
//!   failed solution of the problem, passing solutions that are not positives (drawn per
//!   [`HardNegatives`]). Search subtasks hold at most `max_queries_per_type` queries each,
//!   drawn with the seed among the queries that have a positive.
//! - code-to-text ([`Code2TextShape`]): `full_retro` and `canonical_retro` (one `any` query per
//!   problem, role B's Python code preferred, and one per language for a problem solved in two
//!   or more; positive texts per [`Code2TextPositive`]), or `describe` (one query per passing
//!   solution, both true texts positive). Hard negatives are the problem's distractors (with
//!   pooled draws, filled from other problems' distractors when it has too few).
//! - code-to-code, with two model roles ([`Roles`]): `mono_lang` (role A's first passing
//!   solution in the anchor language → role B's in that language), `cross_lang` (per
//!   [`CrossLang`]: each role B solution with a later one in another language → all of role
//!   B's in other languages; or role A's anchors → role A's other languages) and
//!   `cross_model` (each role A anchor
//!   → role B's solutions in the other languages). Hard negatives: failed solutions that fit
//!   the subtask, any failed solution, passing non-positives; never the query's own code.
//!
//! A code query's own document is never judged for it, and evaluation drops it from the
//! query's ranking (as CoREB's runner does): with `cross_lang = "pairs"` the anchor of one
//! query can be the positive of another, so it stays in the corpus.
//!
//! Ids are stable and versioned, derived from what a row is, never from its position:
//! `code_<version>_<problem>_<model>_<language>_<sample>`, `text_<version>_<problem>_<kind>`,
//! queries `t2c_<version>_<problem>_<subtask><index>_<constraint>`,
//! `c2c_<version>_<anchor>_<subtask>`, `c2t_<version>_<code>` (`describe`) and
//! `c2t_<version>_<problem>_<subtask>_<constraint>` (see [`coreb_data::qrels::model_slug`]).
//!
//! Pure: it assigns ids and judgements; the release stage writes the tables.

use std::collections::{BTreeMap, BTreeSet};

use xxhash_rust::xxh3::xxh3_64;

use coreb_data::composition::{
    Code2TextPositive, Code2TextShape, Composition, ConstrainedText, CrossLang, HardNegatives,
    QrelsConfig, Roles, SearchPositives,
};
use coreb_data::problem::ProblemId;
use coreb_data::qrels::{
    CodeDoc, DocId, Qrel, QrelsOutput, QrelsStats, Query, QueryId, Relevance, Task, TaskSet,
    TextDoc, TextKind, code_doc_id, constrained_query, text_doc_id,
};
use coreb_data::solution::{Language, Solution};

/// A search query of one problem, as the `queries` stage writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// Its index among the problem's queries: a language variant shares the index of the
    /// query it restates.
    pub index: u32,
    /// The text.
    pub text: String,
    /// `None`: an unconstrained query (constrained variants are composed from it);
    /// `Some(l)`: written for language `l`, used as the `l`-constrained query of its index.
    pub language: Option<Language>,
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
    pub search_queries: Vec<SearchQuery>,
}

impl ProblemTexts {
    /// The `full` text: title and statement.
    pub fn full(&self) -> String {
        format!("{}\n\n{}", self.title, self.statement)
    }
}

/// A solution with its execution result (its fields read through it: `judged.code`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedSolution {
    /// The solution (with `execute`'s driver around a LeetCode solution's code when
    /// `code_document = "program"`).
    pub solution: Solution,
    /// Did it pass every test?
    pub passed: bool,
}

impl std::ops::Deref for JudgedSolution {
    type Target = Solution;

    fn deref(&self) -> &Solution {
        &self.solution
    }
}

/// The seeded draw of hard negatives: the workspace's SplitMix64 seeded with the xxh3 of
/// `seed:key`, reduced by `% n` (its output is part of published releases).
struct SplitMix(coreb_base::seeded::SplitMix64);

impl SplitMix {
    fn for_key(seed: u64, key: &str) -> Self {
        SplitMix(coreb_base::seeded::SplitMix64::new(xxh3_64(format!("{seed}:{key}").as_bytes())))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
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

/// Up to `max` hard negatives from priority tiers (indices, no repeats across tiers).
fn pick(rng: &mut SplitMix, how: HardNegatives, tiers: &[Vec<usize>], max: usize) -> Vec<usize> {
    let mut picked: Vec<usize> = Vec::new();
    match how {
        // Fill from the first tier, then the next, sampling within the tier that overflows.
        HardNegatives::Tiered => {
            for tier in tiers {
                let room = max - picked.len();
                if room == 0 {
                    break;
                }
                let fresh: Vec<usize> =
                    tier.iter().copied().filter(|d| !picked.contains(d)).collect();
                picked.extend(rng.sample(&fresh, room));
            }
            picked
        }
        // Pool whole tiers until the pool holds `max`, then draw from the pool.
        HardNegatives::Pooled => {
            for tier in tiers {
                if picked.len() >= max {
                    break;
                }
                for &d in tier {
                    if !picked.contains(&d) {
                        picked.push(d);
                    }
                }
            }
            rng.sample(&picked, max)
        }
    }
}

struct Builder {
    sets: BTreeMap<Task, TaskSet>,
    stats: QrelsStats,
}

/// One query before it is added: what [`Builder::add`] needs.
struct NewQuery {
    task: Task,
    id: String,
    subtask: &'static str,
    constraint: String,
    text: String,
    problem: ProblemId,
    source_doc: Option<DocId>,
}

/// A query with its judgements, before the search cap decides whether it is kept.
struct Pending {
    query: NewQuery,
    positives: Vec<DocId>,
    negatives: Vec<DocId>,
}

impl Builder {
    fn add(&mut self, q: NewQuery, positives: Vec<DocId>, negatives: Vec<DocId>) {
        if positives.is_empty() {
            self.stats.skipped_without_positive += 1;
            return;
        }
        let query_id = QueryId(q.id);
        *self.stats.queries.entry(format!("{}/{}", q.task.as_str(), q.subtask)).or_insert(0) += 1;
        if !negatives.is_empty() {
            self.stats.with_hard_negatives += 1;
        }
        let set = self.sets.entry(q.task).or_default();
        for (docs, rel) in [(&positives, 2u8), (&negatives, 1u8)] {
            for d in docs {
                set.qrels.push(Qrel {
                    query_id: query_id.clone(),
                    doc_id: d.clone(),
                    relevance: Relevance(rel),
                });
            }
        }
        set.queries.push(Query {
            query_id,
            query: q.text,
            task: q.task,
            subtask: q.subtask.to_owned(),
            language_constraint: q.constraint,
            source_problem_id: q.problem,
            source_doc_id: q.source_doc,
            num_relevant_docs: positives.len(),
        });
    }

    /// Add the text2code queries in order, the search ones that have a positive capped at
    /// `cap` per subtask (`search` of one constraint), drawn with `seed`.
    fn add_capped(&mut self, pending: Vec<Pending>, cap: usize, seed: u64) {
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, p) in pending.iter().enumerate() {
            if p.query.subtask == "search" && !p.positives.is_empty() {
                groups.entry(p.query.constraint.clone()).or_default().push(i);
            }
        }
        let mut dropped: BTreeSet<usize> = BTreeSet::new();
        for (constraint, members) in &groups {
            if cap > 0 && members.len() > cap {
                let kept: BTreeSet<usize> =
                    SplitMix::for_key(seed, &format!("cap:search_{constraint}"))
                        .sample(members, cap)
                        .into_iter()
                        .collect();
                dropped.extend(members.iter().filter(|i| !kept.contains(i)));
            }
        }
        self.stats.capped += dropped.len() as u64;
        for (i, p) in pending.into_iter().enumerate() {
            if !dropped.contains(&i) {
                self.add(p.query, p.positives, p.negatives);
            }
        }
    }
}

/// A text2code query text of one problem: its subtask and index, the unconstrained text and
/// the texts written for one language.
struct TextItem {
    subtask: &'static str,
    index: Option<u32>,
    any: Option<String>,
    per_language: BTreeMap<Language, String>,
}

fn text_items(p: &ProblemTexts) -> Vec<TextItem> {
    let plain = |subtask, text: String| TextItem {
        subtask,
        index: None,
        any: Some(text),
        per_language: BTreeMap::new(),
    };
    let mut items = vec![plain("canonical", p.canonical.clone()), plain("full", p.full())];
    let mut search: BTreeMap<u32, TextItem> = BTreeMap::new();
    for q in &p.search_queries {
        let item = search.entry(q.index).or_insert_with(|| TextItem {
            subtask: "search",
            index: Some(q.index),
            any: None,
            per_language: BTreeMap::new(),
        });
        match q.language {
            None => item.any = Some(q.text.clone()),
            Some(l) => {
                item.per_language.insert(l, q.text.clone());
            }
        }
    }
    items.extend(search.into_values());
    items
}

/// The code2code subtasks: which passing documents are positives for an anchor (by model
/// and language), and which failed ones are the first hard negatives to take.
#[derive(Clone, Copy)]
enum Code2Code {
    MonoLang,
    CrossLang,
    CrossModel,
}

impl Code2Code {
    fn as_str(self) -> &'static str {
        match self {
            Code2Code::MonoLang => "mono_lang",
            Code2Code::CrossLang => "cross_lang",
            Code2Code::CrossModel => "cross_model",
        }
    }

    /// Does a document of the same problem fit the subtask, relative to the anchor?
    fn fits(self, anchor: &CodeDoc, d: &CodeDoc) -> bool {
        let (same_model, same_lang) = (d.model == anchor.model, d.language == anchor.language);
        match self {
            Code2Code::MonoLang => !same_model && same_lang,
            Code2Code::CrossLang => same_model && !same_lang,
            Code2Code::CrossModel => !same_model && !same_lang,
        }
    }

    /// The series' first tier of hard negatives: failed documents that fit the subtask's
    /// filter (for `cross_lang`, any model in another language).
    fn first_tier(self, anchor: &CodeDoc, d: &CodeDoc) -> bool {
        match self {
            Code2Code::CrossLang => d.language != anchor.language,
            other => other.fits(anchor, d),
        }
    }
}

/// Build corpora, queries and graded qrels for one release, with `roles` naming the models
/// of code2code and code2text (see [`Roles`]).
pub fn qrels(
    config: &QrelsConfig,
    version: &str,
    roles: &Roles,
    problems: &[ProblemTexts],
    solutions: &[JudgedSolution],
) -> QrelsOutput {
    let composition = config.composition();
    let mut problems: Vec<&ProblemTexts> = problems.iter().collect();
    problems.sort_by(|a, b| a.problem_id.cmp(&b.problem_id));
    let mut solutions: Vec<&JudgedSolution> =
        solutions.iter().filter(|s| !s.code.trim().is_empty()).collect();
    solutions.sort_by(|a, b| a.id.cmp(&b.id));

    let code_corpus = code_corpus(version, &solutions);
    let (text_corpus, text_ids) =
        text_corpus(version, &problems, composition.summaries_are_documents());
    let mut b = Builder {
        sets: Task::ALL.iter().map(|t| (*t, TaskSet::default())).collect(),
        stats: QrelsStats {
            problems: problems.len() as u64,
            code_docs: code_corpus.len() as u64,
            text_docs: text_corpus.len() as u64,
            ..QrelsStats::default()
        },
    };
    let mut text2code = Vec::new();
    for p in &problems {
        let docs =
            (0..code_corpus.len()).filter(|&i| code_corpus[i].problem_id == p.problem_id).collect();
        let queries = ProblemQueries {
            config,
            composition,
            roles,
            version,
            corpus: &code_corpus,
            problem: p,
            docs,
            text_ids: &text_ids,
        };
        queries.text2code(&mut text2code);
        queries.code2text(&mut b);
        queries.code2code(&mut b);
    }
    b.add_capped(text2code, composition.max_queries_per_type, config.seed);
    let mut out = QrelsOutput { code_corpus, text_corpus, tasks: b.sets, stats: b.stats };
    out.stats.anchors = out.code2code_sources().len() as u64;
    out
}

/// The code corpus: one document per (non-empty) solution, in solution id order.
fn code_corpus(version: &str, solutions: &[&JudgedSolution]) -> Vec<CodeDoc> {
    solutions
        .iter()
        .map(|s| CodeDoc {
            code_id: code_doc_id(version, &s.problem_id, &s.model, s.language, s.sample),
            code: s.code.clone(),
            language: s.language,
            model: s.model.clone(),
            problem_id: s.problem_id.clone(),
            solution_id: s.id.clone(),
            passed: s.passed,
        })
        .collect()
}

/// The text ids of each problem's texts by kind.
type TextIds<'a> = BTreeMap<(&'a ProblemId, TextKind), Vec<DocId>>;

/// The text corpus (per problem: the full statement, the canonical summary when
/// `summaries` says it is a document, the distractors) and the ids of each problem's texts
/// by kind.
fn text_corpus<'a>(
    version: &str,
    problems: &[&'a ProblemTexts],
    summaries: bool,
) -> (Vec<TextDoc>, TextIds<'a>) {
    let mut text_corpus = Vec::new();
    let mut text_ids: TextIds<'a> = BTreeMap::new();
    for p in problems {
        let canonical = summaries.then(|| (TextKind::Canonical, p.canonical.clone()));
        let texts = [(TextKind::Full, p.full())]
            .into_iter()
            .chain(canonical)
            .chain(p.distractors.iter().map(|d| (TextKind::Distractor, d.clone())));
        let mut distractors = 0;
        for (kind, text) in texts {
            let id = text_doc_id(version, &p.problem_id, kind, distractors);
            if kind == TextKind::Distractor {
                distractors += 1;
            }
            text_ids.entry((&p.problem_id, kind)).or_default().push(id.clone());
            text_corpus.push(TextDoc { text_id: id, text, kind, problem_id: p.problem_id.clone() });
        }
    }
    (text_corpus, text_ids)
}

/// The queries of one problem, over the code documents of its solutions (`docs`: indices
/// into the code corpus, in code id order).
struct ProblemQueries<'a> {
    config: &'a QrelsConfig,
    composition: Composition,
    roles: &'a Roles,
    version: &'a str,
    corpus: &'a [CodeDoc],
    problem: &'a ProblemTexts,
    docs: Vec<usize>,
    text_ids: &'a TextIds<'a>,
}

impl ProblemQueries<'_> {
    fn doc_id(&self, i: usize) -> DocId {
        self.corpus[i].code_id.clone()
    }

    fn doc_ids(&self, docs: Vec<usize>) -> Vec<DocId> {
        docs.into_iter().map(|i| self.doc_id(i)).collect()
    }

    fn passing(&self, i: usize) -> bool {
        self.corpus[i].passed
    }

    /// A document's id without the `code_<version>_` prefix: the stem of its queries' ids.
    fn stem(&self, i: usize) -> String {
        self.corpus[i].code_id.0.trim_start_matches(&format!("code_{}_", self.version)).to_owned()
    }

    /// Up to `max_hard_negatives` from the tiers, drawn with the query's own seed.
    fn tiers(&self, key: &str, tiers: &[Vec<usize>]) -> Vec<usize> {
        pick(
            &mut SplitMix::for_key(self.config.seed, key),
            self.composition.hard_negatives,
            tiers,
            self.config.max_hard_negatives,
        )
    }

    /// The text of a constrained query with no text written for its language.
    fn constrained(&self, text: &str, language: Language) -> String {
        match self.composition.constrained_text {
            ConstrainedText::Named => constrained_query(text, language),
            ConstrainedText::Same => text.to_owned(),
        }
    }

    /// Text-to-code: each text item, unconstrained and constrained to each language the
    /// problem has a passing solution in, into `out` (the search cap is applied later).
    fn text2code(&self, out: &mut Vec<Pending>) {
        let (p, version) = (self.problem, self.version);
        let languages: BTreeSet<Language> =
            self.docs.iter().map(|&i| self.corpus[i].language).collect();
        let passing_languages: BTreeSet<Language> = self
            .docs
            .iter()
            .filter(|&&i| self.passing(i))
            .map(|&i| self.corpus[i].language)
            .collect();
        for item in text_items(p) {
            let index = item.index.map(|i| i.to_string()).unwrap_or_default();
            let all_positive = item.subtask == "search"
                && self.composition.search_positives == SearchPositives::All;
            let constraints = std::iter::once(None).chain(languages.iter().copied().map(Some));
            for lang in constraints {
                // A constrained query needs a passing solution in its language, even where
                // failed ones count as positives.
                if all_positive && lang.is_some_and(|l| !passing_languages.contains(&l)) {
                    continue;
                }
                let text = match lang {
                    None => item.any.clone(),
                    Some(l) => item
                        .per_language
                        .get(&l)
                        .cloned()
                        .or_else(|| item.any.as_deref().map(|t| self.constrained(t, l))),
                };
                let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
                    continue;
                };
                let in_lang = |i: usize| lang.is_none_or(|l| self.corpus[i].language == l);
                let docs = || self.docs.iter().copied();
                let positives: Vec<usize> =
                    docs().filter(|&i| (all_positive || self.passing(i)) && in_lang(i)).collect();
                let constraint = lang.map_or("any", Language::as_str);
                let id =
                    format!("t2c_{version}_{}_{}{index}_{constraint}", p.problem_id, item.subtask);
                let negatives = self.tiers(
                    &id,
                    &[
                        docs()
                            .filter(|&i| !self.passing(i) && in_lang(i) && !positives.contains(&i))
                            .collect::<Vec<_>>(),
                        docs().filter(|&i| !self.passing(i) && !positives.contains(&i)).collect(),
                        docs().filter(|&i| self.passing(i) && !positives.contains(&i)).collect(),
                    ],
                );
                let query = NewQuery {
                    task: Task::Text2Code,
                    id,
                    subtask: item.subtask,
                    constraint: constraint.to_owned(),
                    text,
                    problem: p.problem_id.clone(),
                    source_doc: None,
                };
                out.push(Pending {
                    query,
                    positives: self.doc_ids(positives),
                    negatives: self.doc_ids(negatives),
                });
            }
        }
    }

    fn texts(&self, kind: TextKind) -> Vec<DocId> {
        self.text_ids.get(&(&self.problem.problem_id, kind)).cloned().unwrap_or_default()
    }

    /// Up to `max_hard_negatives` distractors: the problem's own, and with pooled draws other
    /// problems' when it has too few.
    fn distractors(&self, key: &str) -> Vec<DocId> {
        let own = self.texts(TextKind::Distractor);
        let (max, mut rng) =
            (self.config.max_hard_negatives, SplitMix::for_key(self.config.seed, key));
        if own.len() >= max || self.composition.hard_negatives == HardNegatives::Tiered {
            return rng.sample(&own, max);
        }
        // Every other problem's distractors, in problem id order, only when a draw needs them.
        let others: Vec<DocId> = self
            .text_ids
            .iter()
            .filter(|((p, k), _)| *k == TextKind::Distractor && **p != self.problem.problem_id)
            .flat_map(|(_, ids)| ids.iter().cloned())
            .collect();
        let fill = rng.sample(&others, max - own.len());
        own.into_iter().chain(fill).collect()
    }

    /// Code-to-text, as [`Code2TextShape`] says.
    fn code2text(&self, b: &mut Builder) {
        match self.composition.code2text {
            Code2TextShape::Describe => self.code2text_describe(b),
            Code2TextShape::Retro => self.code2text_retro(b),
        }
    }

    /// One `describe` query per passing solution, judged against every true description.
    fn code2text_describe(&self, b: &mut Builder) {
        let describes: Vec<DocId> =
            [TextKind::Full, TextKind::Canonical].iter().flat_map(|k| self.texts(*k)).collect();
        for &q in self.docs.iter().filter(|&&i| self.passing(i)) {
            let id = format!("c2t_{}_{}", self.version, self.stem(q));
            let negatives = self.distractors(&id);
            let d = &self.corpus[q];
            let query = NewQuery {
                task: Task::Code2Text,
                id,
                subtask: "describe",
                constraint: d.language.as_str().to_owned(),
                text: d.code.clone(),
                problem: self.problem.problem_id.clone(),
                source_doc: Some(d.code_id.clone()),
            };
            b.add(query, describes.clone(), negatives);
        }
    }

    /// `full_retro` and `canonical_retro`: an `any` query on role B's Python code (else any
    /// Python, else the first passing solution) and, for a problem solved in two languages or
    /// more, one per language on its first passing solution.
    fn code2text_retro(&self, b: &mut Builder) {
        let p = self.problem;
        let passing: Vec<usize> = self.docs.iter().copied().filter(|&i| self.passing(i)).collect();
        let (Some(full), Some(&first)) =
            (self.texts(TextKind::Full).into_iter().next(), passing.first())
        else {
            return;
        };
        let python = |i: &&usize| self.corpus[**i].language == Language::Python;
        let any = *passing
            .iter()
            .filter(python)
            .find(|&&i| self.corpus[i].model == self.roles.target)
            .or_else(|| passing.iter().find(python))
            .unwrap_or(&first);
        let mut by_language: Vec<(Language, usize)> = Vec::new();
        for &i in &passing {
            if !by_language.iter().any(|(l, _)| *l == self.corpus[i].language) {
                by_language.push((self.corpus[i].language, i));
            }
        }
        let mut anchors: Vec<(&str, usize)> = vec![("any", any)];
        if by_language.len() >= 2 {
            anchors.extend(by_language.iter().map(|(l, i)| (l.as_str(), *i)));
        }
        let mut positives = vec![full];
        if self.composition.code2text_positive == Code2TextPositive::FullAndSummary {
            positives.extend(self.texts(TextKind::Canonical));
        }
        let subtasks: &[&'static str] = if p.canonical.trim().is_empty() {
            &["full_retro"]
        } else {
            &["full_retro", "canonical_retro"]
        };
        for &subtask in subtasks {
            for &(constraint, a) in &anchors {
                let id = format!("c2t_{}_{}_{subtask}_{constraint}", self.version, p.problem_id);
                let negatives = self.distractors(&id);
                let d = &self.corpus[a];
                let query = NewQuery {
                    task: Task::Code2Text,
                    id,
                    subtask,
                    constraint: constraint.to_owned(),
                    text: d.code.clone(),
                    problem: p.problem_id.clone(),
                    source_doc: Some(d.code_id.clone()),
                };
                b.add(query, positives.clone(), negatives);
            }
        }
    }

    /// Code-to-code, as [`CrossLang`] says.
    fn code2code(&self, b: &mut Builder) {
        match self.composition.cross_lang {
            CrossLang::Anchor => self.code2code_anchored(b),
            CrossLang::Pairs => self.code2code_pairs(b),
        }
    }

    /// The series: `mono_lang` on role A's first anchor, `cross_lang` over role B's pairs,
    /// `cross_model` on every role A anchor; only the query's own code is left out.
    fn code2code_pairs(&self, b: &mut Builder) {
        let (corpus, lang) = (self.corpus, self.config.anchor_language);
        let of = |model: &str| {
            self.docs
                .iter()
                .copied()
                .filter(|&i| self.passing(i) && corpus[i].model == model)
                .collect::<Vec<_>>()
        };
        let (role_a, role_b) = (of(&self.roles.anchor), of(&self.roles.target));
        // One model plays both roles (a build with one generating model): `mono_lang` and
        // `cross_model` ask for another model's solutions, so there are none to ask.
        let anchors: Vec<usize> = if self.roles.anchor == self.roles.target {
            Vec::new()
        } else {
            role_a.iter().copied().filter(|&i| corpus[i].language == lang).collect()
        };
        if let Some(&a) = anchors.first() {
            let positives =
                role_b.iter().copied().filter(|&i| corpus[i].language == lang).collect();
            self.code2code_query(b, a, Code2Code::MonoLang, positives, &[a]);
        }
        // The series' queries: one per role B solution with a partner in another language
        // after it (each pair asked once). Its positives are every role B solution in another
        // language: the series judges only the later ones, leaving the earlier translations
        // unjudged or drawn as hard negatives.
        for &a in &role_b {
            let targets: Vec<usize> = role_b
                .iter()
                .copied()
                .filter(|&i| corpus[i].language != corpus[a].language)
                .collect();
            if targets.iter().any(|&i| corpus[i].code_id > corpus[a].code_id) {
                self.code2code_query(b, a, Code2Code::CrossLang, targets, &[a]);
            }
        }
        let others: Vec<usize> =
            role_b.iter().copied().filter(|&i| corpus[i].language != lang).collect();
        for &a in &anchors {
            self.code2code_query(b, a, Code2Code::CrossModel, others.clone(), &[a]);
        }
    }

    /// One code2code query on anchor `a`, its hard negatives from the problem's documents
    /// but the positives and `excluded` (the anchor, or every anchor).
    fn code2code_query(
        &self,
        b: &mut Builder,
        a: usize,
        sub: Code2Code,
        positives: Vec<usize>,
        excluded: &[usize],
    ) {
        let anchor = &self.corpus[a];
        let candidates = || {
            self.docs
                .iter()
                .copied()
                .filter(|&i| i != a && !excluded.contains(&i) && !positives.contains(&i))
        };
        let id = format!("c2c_{}_{}_{}", self.version, self.stem(a), sub.as_str());
        let negatives = self.tiers(
            &id,
            &[
                candidates()
                    .filter(|&i| !self.passing(i) && sub.first_tier(anchor, &self.corpus[i]))
                    .collect::<Vec<_>>(),
                candidates().filter(|&i| !self.passing(i)).collect(),
                candidates().filter(|&i| self.passing(i)).collect(),
            ],
        );
        let constraint =
            if matches!(sub, Code2Code::MonoLang) { anchor.language.as_str() } else { "any" };
        let q = NewQuery {
            task: Task::Code2Code,
            id,
            subtask: sub.as_str(),
            constraint: constraint.to_owned(),
            text: anchor.code.clone(),
            problem: self.problem.problem_id.clone(),
            source_doc: Some(anchor.code_id.clone()),
        };
        b.add(q, self.doc_ids(positives), self.doc_ids(negatives));
    }

    /// coreb's earlier code2code: anchored on role A's passing solutions in the anchor
    /// language, which are never candidates.
    fn code2code_anchored(&self, b: &mut Builder) {
        let corpus = self.corpus;
        let anchors: Vec<usize> = self
            .docs
            .iter()
            .copied()
            .filter(|&i| {
                self.passing(i)
                    && corpus[i].model == self.roles.anchor
                    && corpus[i].language == self.config.anchor_language
            })
            .collect();
        for (n, &a) in anchors.iter().enumerate() {
            // The series asks one mono_lang query per problem (its first anchor).
            let subtasks: &[Code2Code] = if n == 0 {
                &[Code2Code::MonoLang, Code2Code::CrossLang, Code2Code::CrossModel]
            } else {
                &[Code2Code::CrossLang, Code2Code::CrossModel]
            };
            for &sub in subtasks {
                let positives = self
                    .docs
                    .iter()
                    .copied()
                    .filter(|&i| {
                        !anchors.contains(&i) && self.passing(i) && sub.fits(&corpus[a], &corpus[i])
                    })
                    .collect();
                self.code2code_query(b, a, sub, positives, &anchors);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::composition::Profile;
    use coreb_data::solution::SolutionId;

    const ANCHOR: &str = "m-a";

    fn problem(id: &str) -> ProblemTexts {
        let search = |index, text: String, language| SearchQuery { index, text, language };
        ProblemTexts {
            problem_id: ProblemId::from_question_id(id),
            title: format!("Title {id}"),
            statement: format!("Statement {id}"),
            canonical: format!("Summary {id}"),
            distractors: (0..4).map(|i| format!("Distractor {i} of {id}")).collect(),
            search_queries: vec![
                search(0, format!("search {id} a"), None),
                search(1, format!("search {id} b"), None),
            ],
        }
    }

    fn sol(p: &str, model: &str, lang: Language, passed: bool) -> JudgedSolution {
        let problem_id = ProblemId::from_question_id(p);
        let solution = Solution {
            id: SolutionId::new(&problem_id, model, lang, 0),
            problem_id,
            model: model.into(),
            language: lang,
            sample: 0,
            code: format!("code {p} {model} {lang}"),
        };
        JudgedSolution { solution, passed }
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

    fn roles() -> Roles {
        Roles { anchor: ANCHOR.into(), target: "m-b".into() }
    }

    /// coreb's earlier composition (profile `coreb`).
    fn build(p: &[ProblemTexts], s: &[JudgedSolution]) -> QrelsOutput {
        qrels(
            &QrelsConfig { profile: Profile::Coreb, ..QrelsConfig::default() },
            "v202503",
            &roles(),
            p,
            s,
        )
    }

    /// The series' composition (the default).
    fn series(config: QrelsConfig, p: &[ProblemTexts], s: &[JudgedSolution]) -> QrelsOutput {
        qrels(&config, "v202503", &roles(), p, s)
    }

    /// The series' composition with the default configuration changed by `set`.
    fn series_with(
        set: impl FnOnce(&mut QrelsConfig),
        p: &[ProblemTexts],
        s: &[JudgedSolution],
    ) -> QrelsOutput {
        let mut config = QrelsConfig::default();
        set(&mut config);
        series(config, p, s)
    }

    fn rels<'a>(set: &'a TaskSet, q: &QueryId) -> Vec<(&'a str, u8)> {
        set.qrels
            .iter()
            .filter(|r| &r.query_id == q)
            .map(|r| (r.doc_id.0.as_str(), r.relevance.0))
            .collect()
    }

    #[test]
    fn text2code_positives_and_hard_negative_priority() {
        let (p, s) = fixture();
        let out = build(&p, &s);
        let t2c = &out.tasks[&Task::Text2Code];
        let doc = |id: &str| out.code_corpus.iter().find(|d| d.code_id.0 == id).unwrap();
        // Problem 1, canonical, cpp: positive = m-a cpp; hard negatives: m-b cpp (failed, same
        // language) first, then m-b java (failed, other language), then a passing non-cpp.
        let q = query(t2c, "t2c_v202503_lcb_1_canonical_cpp");
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
        let any = query(t2c, "t2c_v202503_lcb_1_full_any");
        assert_eq!(any.num_relevant_docs, 8);
        assert_eq!(rels(t2c, &any.query_id).iter().filter(|(_, g)| *g == 1).count(), 2);
        // Queries: per problem 4 texts (canonical, full, 2 search) × (any + 5 languages).
        assert_eq!(t2c.queries.len(), 2 * 4 * 6);
        assert_eq!(out.stats.queries["text2code/search"], 2 * 2 * 6);
    }

    #[test]
    fn a_constrained_query_names_its_language() {
        let (mut p, s) = fixture();
        // A search query written for Go replaces the composed Go variant of its index.
        p[0].search_queries.push(SearchQuery {
            index: 1,
            text: "search 1 b with goroutines in Go".into(),
            language: Some(Language::Go),
        });
        let out = build(&p, &s);
        let t2c = &out.tasks[&Task::Text2Code];
        let text = |id: &str| query(t2c, id).query.as_str();
        assert_eq!(text("t2c_v202503_lcb_1_search1_any"), "search 1 b");
        assert_eq!(text("t2c_v202503_lcb_1_search1_go"), "search 1 b with goroutines in Go");
        assert_eq!(text("t2c_v202503_lcb_1_search0_go"), "Go solution: search 1 a");
        assert_eq!(text("t2c_v202503_lcb_1_canonical_cpp"), "C++ solution: Summary 1");
        for q in t2c.queries.iter().filter(|q| q.language_constraint != "any") {
            let l = Language::parse(&q.language_constraint).unwrap();
            assert!(q.query.contains(l.display_name()), "{}: {}", q.query_id.0, q.query);
        }
        // Every text differs from every other of its problem: no constrained query repeats
        // the unconstrained one word for word.
        let texts: BTreeSet<(&ProblemId, &str)> =
            t2c.queries.iter().map(|q| (&q.source_problem_id, q.query.as_str())).collect();
        assert_eq!(texts.len(), t2c.queries.len());
    }

    #[test]
    fn code2text_judges_every_true_description() {
        let (p, s) = fixture();
        let out = build(&p, &s);
        let c2t = &out.tasks[&Task::Code2Text];
        let passing = s.iter().filter(|s| s.passed).count();
        assert_eq!(c2t.queries.len(), passing);
        let text = |id: &str| out.text_corpus.iter().find(|d| d.text_id.0 == id).unwrap();
        for q in &c2t.queries {
            let r = rels(c2t, &q.query_id);
            let mut pos: Vec<TextKind> =
                r.iter().filter(|(_, g)| *g == 2).map(|(d, _)| text(d).kind).collect();
            pos.sort();
            assert_eq!(pos, [TextKind::Full, TextKind::Canonical], "both true texts are positives");
            assert_eq!(r.iter().filter(|(_, g)| *g == 1).count(), 3, "3 of the 4 distractors");
            assert!(r.iter().all(|(d, g)| (text(d).kind == TextKind::Distractor) == (*g == 1)));
            assert!(r.iter().all(|(d, _)| text(d).problem_id == q.source_problem_id));
        }
    }

    #[test]
    fn code2code_subtasks_as_the_reference_defines_them() {
        let (p, s) = fixture();
        let out = build(&p, &s);
        let c2c = &out.tasks[&Task::Code2Code];
        let doc = |id: &DocId| out.code_corpus.iter().find(|d| &d.code_id == id).unwrap();
        let sources = out.code2code_sources();
        // One anchor per problem (m-a's passing Python): mono_lang, cross_lang, cross_model.
        assert_eq!(sources.len(), 2);
        assert_eq!(out.stats.anchors, 2);
        assert_eq!(c2c.queries.len(), 6);
        for q in &c2c.queries {
            let anchor = doc(q.source_doc_id.as_ref().unwrap());
            assert_eq!((anchor.model.as_str(), anchor.language), (ANCHOR, Language::Python));
            for r in c2c.qrels.iter().filter(|r| r.query_id == q.query_id) {
                assert!(!sources.contains(&r.doc_id), "an anchor is never judged: {}", r.doc_id.0);
                let d = doc(&r.doc_id);
                assert_eq!(d.problem_id, anchor.problem_id);
                if r.relevance.0 == 2 {
                    assert!(d.passed);
                    let (same_model, same_lang) =
                        (d.model == anchor.model, d.language == anchor.language);
                    match q.subtask.as_str() {
                        "mono_lang" => assert!(!same_model && same_lang),
                        "cross_lang" => assert!(same_model && !same_lang),
                        "cross_model" => assert!(!same_model && !same_lang),
                        other => panic!("subtask {other}"),
                    }
                }
            }
        }
        // Problem 1: cross_model positives are m-b's passing non-Python (go, ruby); its failed
        // cpp and java fit the subtask and come first as hard negatives.
        let q = query(c2c, "c2c_v202503_lcb_1_m-a_python_0_cross_model");
        assert_eq!(q.num_relevant_docs, 2);
        let negs: Vec<&CodeDoc> = c2c
            .qrels
            .iter()
            .filter(|r| r.query_id == q.query_id && r.relevance.0 == 1)
            .map(|r| doc(&r.doc_id))
            .collect();
        assert_eq!(negs.iter().filter(|d| !d.passed).count(), 2);
        // cross_lang pairs the anchor with its own model's other languages, each pair once.
        let cl = query(c2c, "c2c_v202503_lcb_1_m-a_python_0_cross_lang");
        assert_eq!(cl.num_relevant_docs, 4);
    }

    #[test]
    fn ids_are_derived_from_content_keys_not_positions() {
        let (p, s) = fixture();
        let a = build(&p, &s);
        let mut reversed = s.clone();
        reversed.reverse();
        assert_eq!(a, build(&p, &reversed), "input order does not matter");
        assert_eq!(a.code_corpus[0].code_id.0, "code_v202503_lcb_1_m-a_cpp_0");
        assert!(a.text_corpus.iter().any(|t| t.text_id.0 == "text_v202503_lcb_2_distractor3"));
        assert_eq!(
            a.tasks[&Task::Text2Code].queries[0].query_id.0,
            "t2c_v202503_lcb_1_canonical_any"
        );
        // One more model: no existing id changes meaning.
        let mut more = s.clone();
        more.push(sol("1", "org/new:model", Language::Python, true));
        let b = build(&p, &more);
        let code_of = |o: &QrelsOutput| {
            o.code_corpus
                .iter()
                .map(|d| (d.code_id.clone(), d.code.clone()))
                .collect::<BTreeMap<_, _>>()
        };
        let (old, new) = (code_of(&a), code_of(&b));
        assert!(old.iter().all(|(id, code)| new.get(id) == Some(code)));
        assert!(new.keys().any(|id| id.0.starts_with("code_v202503_lcb_1_org-new-model-")
            && id.0.ends_with("_python_0")));
        let c = qrels(
            &QrelsConfig { seed: 7, profile: Profile::Coreb, ..QrelsConfig::default() },
            "v202503",
            &roles(),
            &p,
            &s,
        );
        assert_ne!(
            a.tasks[&Task::Code2Text].qrels,
            c.tasks[&Task::Code2Text].qrels,
            "another seed samples other distractors"
        );
    }

    /// The query `id` of `set`.
    fn query<'a>(set: &'a TaskSet, id: &str) -> &'a Query {
        set.queries.iter().find(|q| q.query_id.0 == id).unwrap_or_else(|| panic!("no query `{id}`"))
    }

    fn judged(out: &QrelsOutput, task: Task, id: &str, grade: u8) -> BTreeSet<String> {
        out.tasks[&task]
            .qrels
            .iter()
            .filter(|r| r.query_id.0 == id && r.relevance.0 == grade)
            .map(|r| r.doc_id.0.clone())
            .collect()
    }

    fn ids(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|d| format!("code_v202503_lcb_{d}")).collect()
    }

    #[test]
    fn series_search_counts_every_solution_and_constrains_to_solved_languages() {
        let (p, s) = fixture();
        let out = series(QrelsConfig::default(), &p, &s);
        let t2c = &out.tasks[&Task::Text2Code];
        // `any`: all ten solutions of problem 1 are positive, failed ones too: no hard negative.
        assert_eq!(judged(&out, Task::Text2Code, "t2c_v202503_lcb_1_search0_any", 2).len(), 10);
        assert!(judged(&out, Task::Text2Code, "t2c_v202503_lcb_1_search0_any", 1).is_empty());
        // C++ of problem 1: both C++ solutions (m-b's failed) are positive; the hard
        // negatives are pooled from the other languages' failed and passing solutions.
        assert_eq!(
            judged(&out, Task::Text2Code, "t2c_v202503_lcb_1_search0_cpp", 2),
            ids(&["1_m-a_cpp_0", "1_m-b_cpp_0"])
        );
        let negs = judged(&out, Task::Text2Code, "t2c_v202503_lcb_1_search0_cpp", 1);
        assert_eq!(negs.len(), 3);
        assert!(negs.iter().all(|d| !d.contains("_cpp_")));
        // `canonical` and `full` still count passing solutions only.
        assert_eq!(
            judged(&out, Task::Text2Code, "t2c_v202503_lcb_1_full_cpp", 2),
            ids(&["1_m-a_cpp_0"])
        );
        // The constrained text names its language by default; `same` keeps the text.
        let text = |o: &QrelsOutput, id: &str| query(&o.tasks[&Task::Text2Code], id).query.clone();
        assert_eq!(text(&out, "t2c_v202503_lcb_1_canonical_go"), "Go solution: Summary 1");
        let same = series_with(|c| c.constrained_text = Some(ConstrainedText::Same), &p, &s);
        assert_eq!(text(&same, "t2c_v202503_lcb_1_canonical_go"), "Summary 1");
        assert_eq!(t2c.queries.len(), 2 * 4 * 6);
        // `passing` gives coreb's search positives.
        let passing = series_with(|c| c.search_positives = Some(SearchPositives::Passing), &p, &s);
        assert_eq!(judged(&passing, Task::Text2Code, "t2c_v202503_lcb_1_search0_any", 2).len(), 8);
    }

    #[test]
    fn the_search_cap_draws_per_subtask_among_queries_with_a_positive() {
        let (p, s) = fixture();
        let out = series_with(|c| c.max_queries_per_type = Some(3), &p, &s);
        let t2c = &out.tasks[&Task::Text2Code];
        // 4 search queries per constraint (2 problems × 2), each subtask capped at 3.
        for c in ["any", "python", "cpp", "java", "go", "ruby"] {
            let n = t2c
                .queries
                .iter()
                .filter(|q| q.subtask == "search" && q.language_constraint == c)
                .count();
            assert_eq!(n, 3, "{c}");
        }
        assert_eq!(out.stats.capped, 6);
        assert_eq!(
            t2c.queries.iter().filter(|q| q.subtask != "search").count(),
            2 * 2 * 6,
            "canonical and full are never capped"
        );
        assert_eq!(out, series_with(|c| c.max_queries_per_type = Some(3), &p, &s));
        let other = series_with(|c| (c.max_queries_per_type, c.seed) = (Some(3), 9), &p, &s);
        let kept = |o: &QrelsOutput| {
            o.tasks[&Task::Text2Code]
                .queries
                .iter()
                .map(|q| q.query_id.0.clone())
                .collect::<BTreeSet<_>>()
        };
        assert_ne!(kept(&out), kept(&other), "the draw follows the seed");
        assert_eq!(series_with(|c| c.max_queries_per_type = Some(0), &p, &s).stats.capped, 0);
    }

    #[test]
    fn series_code2code_pairs_role_b_and_anchors_mono_and_cross_model_on_role_a() {
        let (p, s) = fixture();
        let out = series(QrelsConfig::default(), &p, &s);
        let c2c = &out.tasks[&Task::Code2Code];
        let of = |sub: &str| {
            c2c.queries
                .iter()
                .filter(|q| q.subtask == sub && q.source_problem_id.as_str() == "lcb_1")
                .map(|q| q.query_id.0.clone())
                .collect::<Vec<_>>()
        };
        // Problem 1: m-b passes go, python, ruby: pairs go→{python, ruby}, python→{ruby}; each
        // query judges every translation (python's go too), and ruby, last, asks nothing.
        assert_eq!(
            of("cross_lang"),
            ["c2c_v202503_lcb_1_m-b_go_0_cross_lang", "c2c_v202503_lcb_1_m-b_python_0_cross_lang"]
        );
        assert_eq!(
            judged(&out, Task::Code2Code, "c2c_v202503_lcb_1_m-b_go_0_cross_lang", 2),
            ids(&["1_m-b_python_0", "1_m-b_ruby_0"])
        );
        assert_eq!(
            judged(&out, Task::Code2Code, "c2c_v202503_lcb_1_m-b_python_0_cross_lang", 2),
            ids(&["1_m-b_go_0", "1_m-b_ruby_0"])
        );
        assert_eq!(
            judged(&out, Task::Code2Code, "c2c_v202503_lcb_1_m-a_python_0_mono_lang", 2),
            ids(&["1_m-b_python_0"])
        );
        assert_eq!(
            judged(&out, Task::Code2Code, "c2c_v202503_lcb_1_m-a_python_0_cross_model", 2),
            ids(&["1_m-b_go_0", "1_m-b_ruby_0"])
        );
        // No query judges its own code; an anchor of one query may be another's positive,
        // so only role A's anchors leave the code2code corpus.
        for q in &c2c.queries {
            assert!(
                c2c.qrels
                    .iter()
                    .filter(|r| r.query_id == q.query_id)
                    .all(|r| Some(&r.doc_id) != q.source_doc_id.as_ref()),
                "{}",
                q.query_id.0
            );
        }
        let any_judged: BTreeSet<&DocId> = c2c.qrels.iter().map(|r| &r.doc_id).collect();
        let unjudged = out.code2code_unjudged_anchors();
        assert!(
            out.code2code_sources().iter().all(|d| unjudged.contains(d) != any_judged.contains(d))
        );
        assert!(
            any_judged.contains(&DocId("code_v202503_lcb_1_m-b_python_0".into())),
            "a cross_lang anchor that is a positive stays"
        );
        assert!(unjudged.iter().all(|d| d.0.contains("_m-a_python_")), "{unjudged:?}");
        // Pooled draws: the cross_model pool holds the two failed fits and every passing
        // non-positive, three drawn from it.
        assert_eq!(
            judged(&out, Task::Code2Code, "c2c_v202503_lcb_1_m-a_python_0_cross_model", 1).len(),
            3
        );
    }

    #[test]
    fn one_model_in_both_roles_asks_only_cross_lang() {
        let (p, s) = fixture();
        let one: Vec<JudgedSolution> = s.into_iter().filter(|s| s.model == ANCHOR).collect();
        let out = qrels(
            &QrelsConfig::default(),
            "v202503",
            &Roles { anchor: ANCHOR.into(), target: ANCHOR.into() },
            &p,
            &one,
        );
        let subtasks: BTreeSet<&str> =
            out.tasks[&Task::Code2Code].queries.iter().map(|q| q.subtask.as_str()).collect();
        assert_eq!(subtasks, BTreeSet::from(["cross_lang"]));
    }

    #[test]
    fn series_code2text_retro_judges_the_full_text_of_role_b_and_per_language_anchors() {
        let (mut p, s) = fixture();
        p[1].distractors.truncate(1);
        let out = series(QrelsConfig::default(), &p, &s);
        let c2t = &out.tasks[&Task::Code2Text];
        assert!(
            out.text_corpus.iter().all(|t| t.kind != TextKind::Canonical),
            "the summaries are not documents"
        );
        let q = |id: &str| c2t.queries.iter().find(|q| q.query_id.0 == id).unwrap();
        assert_eq!(
            q("c2t_v202503_lcb_1_full_retro_any").source_doc_id.as_ref().unwrap().0,
            "code_v202503_lcb_1_m-b_python_0"
        );
        assert_eq!(
            q("c2t_v202503_lcb_1_canonical_retro_cpp").source_doc_id.as_ref().unwrap().0,
            "code_v202503_lcb_1_m-a_cpp_0"
        );
        // Per problem: (any + 5 languages) × (full, canonical).
        assert_eq!(c2t.queries.len(), 2 * 6 * 2);
        for q in &c2t.queries {
            let pos = judged(&out, Task::Code2Text, &q.query_id.0, 2);
            assert_eq!(pos, BTreeSet::from([format!("text_v202503_{}_full", q.source_problem_id)]));
            assert_eq!(judged(&out, Task::Code2Text, &q.query_id.0, 1).len(), 3);
        }
        // Problem 2 has one distractor: two more come from problem 1's.
        let negs = judged(&out, Task::Code2Text, "c2t_v202503_lcb_2_full_retro_any", 1);
        assert!(negs.contains("text_v202503_lcb_2_distractor0"));
        assert_eq!(negs.iter().filter(|d| d.contains("lcb_1_distractor")).count(), 2);
        // `full_and_summary`: both true texts are documents and positives of every query.
        let both =
            series_with(|c| c.code2text_positive = Some(Code2TextPositive::FullAndSummary), &p, &s);
        let texts = BTreeSet::from([
            "text_v202503_lcb_1_full".to_owned(),
            "text_v202503_lcb_1_canonical".to_owned(),
        ]);
        assert_eq!(
            judged(&both, Task::Code2Text, "c2t_v202503_lcb_1_canonical_retro_go", 2),
            texts
        );
        assert_eq!(judged(&both, Task::Code2Text, "c2t_v202503_lcb_1_full_retro_any", 2), texts);
    }

    #[test]
    fn pooled_and_tiered_draws() {
        // One failed fit, four passing non-positives, three to draw.
        let tiers = vec![vec![0], vec![0], vec![1, 2, 3, 4]];
        let (mut without_first, mut seen) = (0, BTreeSet::new());
        for k in 0..400 {
            let tiered =
                pick(&mut SplitMix::for_key(1, &k.to_string()), HardNegatives::Tiered, &tiers, 3);
            assert_eq!(
                (tiered.len(), tiered[0]),
                (3, 0),
                "tier by tier: the first tier always comes first"
            );
            let pooled =
                pick(&mut SplitMix::for_key(1, &k.to_string()), HardNegatives::Pooled, &tiers, 3);
            assert_eq!(pooled.len(), 3);
            without_first += usize::from(!pooled.contains(&0));
            seen.extend(pooled);
        }
        // Pooled: 0 is one of five equals, left out of 2 draws in 5.
        assert!((120..200).contains(&without_first), "{without_first}");
        assert_eq!(seen, BTreeSet::from([0, 1, 2, 3, 4]));
        // A pool is not widened once it holds enough.
        let enough = pick(
            &mut SplitMix::for_key(1, "e"),
            HardNegatives::Pooled,
            &[vec![0, 1, 2], vec![3, 4]],
            3,
        );
        assert_eq!(enough, [0, 1, 2]);
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
        let mut rng = SplitMix(coreb_base::seeded::SplitMix64::new(0));
        assert_eq!([rng.next(), rng.next()], [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4]);
    }
}
