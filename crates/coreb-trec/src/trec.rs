//! The trec_eval driver: which queries are evaluated, how values are averaged, and trec_eval's
//! text output (`%-22s\t%s\t%6.4f`).
//!
//! Queries are those of the qrels (in query-id byte order) that also have results; with
//! `complete` (`-c`) every qrels query counts, a missing one being scored on a one-document
//! ranking of an unjudged document (trec_eval's own device), so missing queries add 0.
//! `max_retrieved` (`-M`) keeps the top N after ranking; `level` (`-l`) is the lowest relevance
//! that counts as relevant for binary measures. With `-c`, trec_eval 10.0 recounts the summary
//! `num_rel` from the whole qrels file (`m_num_rel.c`: every judgement above 0, whatever the
//! level), and so does this driver. Ranking ignores the rank column: score
//! descending, then document id descending. Does NOT read files or print.

use std::fmt::Write as _;

use rayon::prelude::*;

use super::EvalError;
use super::input::{FnvBuild, Qrels, QueryQrels, Run, RunEntry, descending_key};
use super::measures::{Combine, Kind, Measure, NONPOOL, Ranked, UNJUDGED};

/// trec_eval's options.
#[derive(Debug, Clone)]
pub struct TrecOptions {
    /// Requested measures in trec_eval order (see [`TrecOptions::from_args`]).
    pub measures: Vec<Measure>,
    /// `-l`: lowest relevance counted as relevant (default 1).
    pub level: i64,
    /// `-M`: at most this many retrieved docs per query.
    pub max_retrieved: Option<usize>,
    /// `-c`: average over every qrels query.
    pub complete: bool,
}

impl TrecOptions {
    /// Resolve `-m` arguments (measure names, nicknames, `name.params`); no argument means
    /// `official`, as in trec_eval. The first parameters given for a measure win.
    pub fn from_args(args: &[String]) -> Result<TrecOptions, EvalError> {
        let mut marked: Vec<Kind> = Vec::new();
        let mut params: Vec<(Kind, String)> = Vec::new();
        let default = ["official".to_owned()];
        let args = if args.is_empty() { &default[..] } else { args };
        for arg in args {
            let (name, p) = match arg.split_once('.') {
                Some((n, p)) => (n, Some(p)),
                None => (arg.as_str(), None),
            };
            if p == Some("") {
                return Err(EvalError::Measure {
                    measure: arg.clone(),
                    why: "empty parameters".into(),
                });
            }
            let kinds: Vec<Kind> = match super::measures::nickname(name) {
                Some(list) => list.iter().filter_map(|n| Kind::from_name(n)).collect(),
                None => match Kind::from_name(name) {
                    Some(k) => vec![k],
                    None => {
                        return Err(EvalError::Measure {
                            measure: arg.clone(),
                            why: "unknown measure".into(),
                        });
                    }
                },
            };
            if let (Some(p), Some(&k)) = (p, kinds.first())
                && kinds.len() == 1
                && !params.iter().any(|(pk, _)| *pk == k)
            {
                params.push((k, p.to_owned()));
            }
            marked.extend(kinds);
        }
        let mut measures = Vec::new();
        for &k in Kind::all() {
            if marked.contains(&k) {
                let p = params.iter().find(|(pk, _)| *pk == k).map(|(_, p)| p.as_str());
                measures.push(Measure::new(k, p)?);
            }
        }
        Ok(TrecOptions { measures, level: 1, max_retrieved: None, complete: false })
    }

    /// Options for the given `-m` arguments and trec_eval's defaults otherwise.
    pub fn with_measures(args: &[&str]) -> Result<TrecOptions, EvalError> {
        TrecOptions::from_args(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }
}

/// pytrec_eval's reading of its `measures` (`RelevanceEvaluator(qrels, measures)`), as
/// `-m` arguments for [`TrecOptions::from_args`]: nicknames (`all_trec`, `official` …)
/// expanded, then every entry of one measure combined into one, its cut-offs the union of
/// theirs, given as `name.p1,p2` or `name_p1,p2` (`{"P.5", "P_10"}` is `P.10,5`: both values);
/// a measure given bare and with cut-offs keeps the cut-offs. The order of `measures` does not
/// matter (pytrec_eval takes a set); the result is sorted.
pub fn pytrec_measures(measures: &[String]) -> Result<Vec<String>, EvalError> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut expanded: BTreeSet<&str> = BTreeSet::new();
    for m in measures {
        match super::measures::nickname(m) {
            Some(list) => expanded.extend(list.iter().copied()),
            None => {
                expanded.insert(m.as_str());
            }
        }
    }
    let known = |name: &str| Kind::from_name(name).is_some();
    let mut combined: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut verbatim: BTreeSet<String> = BTreeSet::new();
    for m in expanded {
        if known(m) {
            combined.entry(m.to_owned()).or_default();
            continue;
        }
        // `<measure>[._]<number>(,<number>)*`, a number being `[0-9]+(\.[0-9]+)?`; as a
        // regular expression matched at the start, what follows is ignored (pytrec_eval's).
        let found = Kind::all().iter().find_map(|k| {
            let rest = m.strip_prefix(k.name())?.strip_prefix(['.', '_'])?;
            // Parameters follow (`ndcg_cut.5` is not `ndcg` with `cut.5`).
            (number_list(rest).is_some() || rest.starts_with('.')).then_some((k.name(), rest))
        });
        let Some((name, rest)) = found else {
            return Err(EvalError::Measure {
                measure: m.to_owned(),
                why: "unsupported measure".into(),
            });
        };
        match number_list(rest) {
            // trec_eval's own parameters, which pytrec_eval does not take (gains,
            // `ndcg.1=3,2=9`; numbers without a leading digit, `11pt_avg..25,.5`): as given.
            Some(params) if rest[params.len()..].starts_with(['=', ',', '.']) => {
                verbatim.insert(m.to_owned());
            }
            None if rest.starts_with('.') => {
                verbatim.insert(m.to_owned());
            }
            Some(params) => combined
                .entry(name.to_owned())
                .or_default()
                .extend(params.split(',').map(str::to_owned)),
            None => {
                return Err(EvalError::Measure {
                    measure: m.to_owned(),
                    why: "unsupported measure".into(),
                });
            }
        }
    }
    let mut out: BTreeSet<String> = combined
        .into_iter()
        .map(|(name, params)| {
            if params.is_empty() {
                name
            } else {
                format!("{name}.{}", params.into_iter().collect::<Vec<_>>().join(","))
            }
        })
        .collect();
    out.extend(verbatim);
    Ok(out.into_iter().collect())
}

/// The longest prefix of `s` that is `<number>(,<number>)*`, a number `[0-9]+(\.[0-9]+)?`.
fn number_list(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let digits = |mut i: usize| {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > start).then_some(i)
    };
    let number = |i: usize| {
        let i = digits(i)?;
        Some(match b.get(i) {
            Some(b'.') => digits(i + 1).unwrap_or(i),
            _ => i,
        })
    };
    let mut end = number(0)?;
    while b.get(end) == Some(&b',') {
        match number(end + 1) {
            Some(next) => end = next,
            None => break,
        }
    }
    Some(&s[..end])
}

/// The values of one query (or of the summary), aligned with the measures' names.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryValues {
    /// Query id (`all` for the summary).
    pub qid: String,
    /// One vector per measure, one value per name.
    pub values: Vec<Vec<f64>>,
    /// The `relstring` text, if requested.
    pub relstring: Option<String>,
}

/// The result of an evaluation.
#[derive(Debug, Clone)]
pub struct TrecReport {
    /// The measures evaluated.
    pub measures: Vec<Measure>,
    /// Per query, in evaluation order.
    pub queries: Vec<QueryValues>,
    /// Averages (or sums / counts, as trec_eval combines each measure).
    pub summary: QueryValues,
    /// The run tag.
    pub run_id: String,
}

impl TrecReport {
    /// A summary value by printed name (`P_10`, `ndcg_cut_5`, `map` ...).
    pub fn summary_value(&self, name: &str) -> Option<f64> {
        value_by_name(&self.measures, &self.summary, name)
    }

    /// A per-query value by printed name.
    pub fn query_value(&self, qid: &str, name: &str) -> Option<f64> {
        let q = self.queries.iter().find(|q| q.qid == qid)?;
        value_by_name(&self.measures, q, name)
    }

    /// trec_eval's text output; per-query lines first when `per_query`.
    pub fn to_text(&self, per_query: bool) -> String {
        let mut out = String::new();
        if per_query {
            let blocks: Vec<String> = self.queries.par_iter().map(|q| self.query_text(q)).collect();
            out.reserve_exact(
                blocks.iter().map(String::len).sum::<usize>() + 64 * self.measures.len(),
            );
            out.extend(blocks);
        }
        for (m, vals) in self.measures.iter().zip(&self.summary.values) {
            match m.combine() {
                Combine::None => {}
                Combine::RunId => {
                    let _ = writeln!(out, "{:<22}\tall\t{}", m.names[0], self.run_id);
                }
                Combine::Count | Combine::SumLong => {
                    line_long(&mut out, &m.names[0], "all", vals[0])
                }
                Combine::Mean | Combine::Geometric => {
                    for (n, v) in m.names.iter().zip(vals) {
                        line_float(&mut out, n, "all", *v);
                    }
                }
            }
        }
        out
    }
}

impl TrecReport {
    fn query_text(&self, q: &QueryValues) -> String {
        let mut out = String::new();
        for (m, vals) in self.measures.iter().zip(&q.values) {
            match m.combine() {
                Combine::RunId | Combine::Count | Combine::Geometric => {}
                Combine::None => {
                    let _ = writeln!(
                        out,
                        "{:<22}\t{}\t'{}'",
                        m.names[0],
                        q.qid,
                        q.relstring.as_deref().unwrap_or("")
                    );
                }
                Combine::SumLong => line_long(&mut out, &m.names[0], &q.qid, vals[0]),
                Combine::Mean => {
                    for (n, v) in m.names.iter().zip(vals) {
                        line_float(&mut out, n, &q.qid, *v);
                    }
                }
            }
        }
        out
    }
}

fn value_by_name(measures: &[Measure], q: &QueryValues, name: &str) -> Option<f64> {
    for (m, vals) in measures.iter().zip(&q.values) {
        if let Some(i) = m.names.iter().position(|n| n == name) {
            return vals.get(i).copied();
        }
    }
    None
}

fn line_long(out: &mut String, name: &str, qid: &str, v: f64) {
    line_start(out, name, qid);
    let _ = writeln!(out, "{}", v as i64);
}

/// One line `name<TAB>qid<TAB>value` with the name padded to 22 columns (`%-22s`).
fn line_start(out: &mut String, name: &str, qid: &str) {
    out.push_str(name);
    out.extend(std::iter::repeat_n(' ', 22usize.saturating_sub(name.len())));
    out.push('\t');
    out.push_str(qid);
    out.push('\t');
}

/// C's `%6.4f`, including its spelling of NaN.
fn line_float(out: &mut String, name: &str, qid: &str, v: f64) {
    line_start(out, name, qid);
    if v.is_nan() {
        let s = if v.is_sign_negative() { "-nan" } else { "nan" };
        let _ = write!(out, "{s:>6}");
    } else if !push_fixed4(out, v) {
        let _ = write!(out, "{v:6.4}");
    }
    out.push('\n');
}

/// `%6.4f` of a non-negative value below a million whose fourth decimal is not a near tie,
/// without the general formatter: `v * 1e4` is off by less than 1.2e-6, so rounding it gives
/// the digits of the exact binary value unless its fraction lies within 1e-4 of one half, and
/// such values (and every other kind) are left to the exact formatter (returns `false`).
/// Below a million the result is at least six characters, so no padding is due.
fn push_fixed4(out: &mut String, v: f64) -> bool {
    if !(v.is_sign_positive() && v < 1e6) {
        return false;
    }
    let x = v * 1e4;
    if (x - x.floor() - 0.5).abs() < 1e-4 {
        return false;
    }
    let n = x.round() as u64;
    let (int, frac) = (n / 10_000, n % 10_000);
    let mut buf = [0u8; 12];
    let mut i = buf.len();
    for d in [frac % 10, frac / 10 % 10, frac / 100 % 10, frac / 1000] {
        i -= 1;
        buf[i] = b'0' + d as u8;
    }
    i -= 1;
    buf[i] = b'.';
    let mut int = int;
    loop {
        i -= 1;
        buf[i] = b'0' + (int % 10) as u8;
        int /= 10;
        if int == 0 {
            break;
        }
    }
    // The buffer holds ASCII digits and a dot only.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
    true
}

/// Reduce one query's ranked results to relevance values (trec_eval `form_res_rels`).
pub fn form_ranked(qrels: &QueryQrels, ranked: &[(&str, f64)], level: i64) -> Ranked {
    let judged = judged_map(qrels);
    let rels = ranked.iter().map(|(doc, _)| relevance_of(&judged, doc)).collect();
    ranked_from_rels(qrels, rels, level)
}

/// Doc id → relevance of one query's judgements.
fn judged_map(qrels: &QueryQrels) -> std::collections::HashMap<&str, i64, FnvBuild> {
    qrels.judged.iter().map(|(d, rel)| (d.as_str(), *rel)).collect()
}

/// trec_eval's relevance of a retrieved document: [`NONPOOL`] outside the qrels,
/// [`UNJUDGED`] for a negative judgement.
fn relevance_of(judged: &std::collections::HashMap<&str, i64, FnvBuild>, doc: &str) -> i64 {
    match judged.get(doc).copied() {
        None => NONPOOL,
        Some(x) if x < 0 => UNJUDGED,
        Some(x) => x,
    }
}

/// The counts of [`Ranked`] from the relevance of each retrieved document in rank order.
fn ranked_from_rels(qrels: &QueryQrels, rels: Vec<i64>, level: i64) -> Ranked {
    let rel_levels = Ranked::count_levels(qrels.judged.iter().map(|(_, r)| *r));
    let mut r = Ranked::default();
    for &rel in &rels {
        match rel {
            NONPOOL => r.num_nonpool += 1,
            UNJUDGED => r.num_unjudged += 1,
            x if x >= level => r.num_rel_ret += 1,
            _ => {}
        }
    }
    r.rels = rels;
    r.num_rel = rel_levels.iter().filter(|l| l.0 >= level).map(|l| l.1).sum();
    r.rel_levels = rel_levels;
    r
}

/// The relevance of each retrieved document of one query in trec_eval rank order (score
/// descending, then doc id descending), cut at `max_retrieved`.
///
/// Measures see only this sequence, and documents outside the qrels all read [`NONPOOL`], so
/// their order among themselves never matters. Only the judged documents are sorted (a few
/// dozen in a ranking of thousands); each other document is counted into the gap between
/// the judged ones it falls in, by a binary search on the score, comparing doc ids only on a
/// tied score. This is the rank order a full sort gives, at a fraction of its cost
/// (`Run::sort_ranked` remains the full sort where doc ids are wanted).
fn rank_rels(
    run: &Run,
    qrels: &QueryQrels,
    entries: &[RunEntry],
    max_retrieved: Option<usize>,
) -> Vec<i64> {
    let judged = judged_map(qrels);
    let mut hits: Vec<(u64, &str, i64)> = Vec::new();
    let mut others: Vec<(u64, u32)> = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let doc = run.doc(e);
        match relevance_of(&judged, doc) {
            NONPOOL => others.push((descending_key(e.score), i as u32)),
            rel => hits.push((descending_key(e.score), doc, rel)),
        }
    }
    // Rank order: key ascending, then doc id descending.
    hits.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)));
    let keys: Vec<u64> = hits.iter().map(|h| h.0).collect();
    let mut gaps = vec![0usize; hits.len() + 1];
    for &(key, i) in &others {
        // Hits ranked above this document: those of a smaller key, then those of the same
        // key (rare) whose doc id is larger.
        let mut at = count_below(&keys, key);
        while at < hits.len() && hits[at].0 == key && hits[at].1 > run.doc(&entries[i as usize]) {
            at += 1;
        }
        gaps[at] += 1;
    }
    let total = max_retrieved.map_or(entries.len(), |m| m.min(entries.len()));
    let mut rels = Vec::with_capacity(total);
    for (gap, hit) in gaps.iter().zip(hits.iter().map(|h| Some(h.2)).chain(std::iter::once(None))) {
        rels.extend(std::iter::repeat_n(NONPOOL, *gap));
        rels.extend(hit);
        if rels.len() >= total {
            break;
        }
    }
    rels.truncate(total);
    rels
}

/// How many of the ascending `keys` are below `key`: a binary search without data-dependent
/// branches (the searches of one query go to random places, so a branchy search mispredicts
/// about every other step).
fn count_below(keys: &[u64], key: u64) -> usize {
    if keys.is_empty() {
        return 0;
    }
    let (mut base, mut size) = (0usize, keys.len());
    while size > 1 {
        let half = size / 2;
        base = std::hint::select_unpredictable(keys[base + half] < key, base + half, base);
        size -= half;
    }
    base + usize::from(keys[base] < key)
}

const BOGUS_DOC: &str = "ceci_nest_pas_un_docno";

/// trec_eval's summary `num_rel` under `-c`: the judgements above 0 of every qrels query,
/// counted afresh from the qrels whatever `-l` says (trec_eval 10.0 `te_calc_avg_num_rel`).
fn complete_num_rel(qrels: &Qrels) -> f64 {
    qrels.queries.values().map(|q| q.judged.iter().filter(|(_, r)| *r > 0).count()).sum::<usize>()
        as f64
}

/// Evaluate `run` against `qrels` the way trec_eval does.
pub fn evaluate(qrels: &Qrels, run: &Run, opts: &TrecOptions) -> Result<TrecReport, EvalError> {
    let jobs: Vec<(&String, &QueryQrels, Option<&Vec<RunEntry>>)> = qrels
        .queries
        .iter()
        .filter_map(|(qid, qq)| {
            let res = run.queries.get(qid);
            (res.is_some() || opts.complete).then_some((qid, qq, res))
        })
        .collect();
    if jobs.is_empty() {
        return Err(EvalError::NoQueries);
    }
    let queries: Vec<QueryValues> = jobs
        .par_iter()
        .map(|(qid, qq, res)| {
            let (r, bogus) = match res {
                Some(entries) => (
                    ranked_from_rels(
                        qq,
                        rank_rels(run, qq, entries, opts.max_retrieved),
                        opts.level,
                    ),
                    false,
                ),
                None => (form_ranked(qq, &[(BOGUS_DOC, 1.0)], opts.level), true),
            };
            let mut values = Vec::with_capacity(opts.measures.len());
            let mut relstring = None;
            for m in &opts.measures {
                let mut out = Vec::with_capacity(m.names.len());
                m.compute(&r, opts.level, &mut out, &mut relstring);
                if bogus {
                    // trec_eval's clean-up of a missing query's leftovers, by value name.
                    for (n, v) in m.names.iter().zip(out.iter_mut()) {
                        if n == "num_ret"
                            || n == "utility"
                            || n.starts_with("unj")
                            || n == "rbp_resid"
                        {
                            *v = 0.0;
                        }
                        if n == "relstring" {
                            relstring = Some(String::new());
                        }
                    }
                }
                values.push(out);
            }
            QueryValues { qid: (*qid).clone(), values, relstring }
        })
        .collect();
    let n = queries.len() as f64;
    let mut summary = Vec::with_capacity(opts.measures.len());
    for (i, m) in opts.measures.iter().enumerate() {
        let mut acc = vec![0.0; m.names.len()];
        for q in &queries {
            for (a, v) in acc.iter_mut().zip(&q.values[i]) {
                *a += v;
            }
        }
        match m.combine() {
            Combine::Mean => acc.iter_mut().for_each(|a| *a /= n),
            Combine::Geometric => acc.iter_mut().for_each(|a| *a = (*a / n).exp()),
            Combine::Count => acc = vec![n],
            Combine::SumLong | Combine::None | Combine::RunId => {}
        }
        if opts.complete && m.kind == Kind::NumRel {
            acc = vec![complete_num_rel(qrels)];
        }
        summary.push(acc);
    }
    Ok(TrecReport {
        measures: opts.measures.clone(),
        queries,
        summary: QueryValues { qid: "all".into(), values: summary, relstring: None },
        run_id: run.run_id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pytrec_eval's spellings: every entry of a measure counts, in any order and form.
    #[test]
    fn pytrec_measures_combine_every_entry_of_a_measure() {
        let m = |list: &[&str]| {
            pytrec_measures(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
        };
        assert_eq!(m(&["P.5", "P.10"]), ["P.10,5"]);
        assert_eq!(m(&["P.10", "P.5"]), ["P.10,5"]);
        assert_eq!(m(&["P.5,10"]), ["P.10,5"]);
        assert_eq!(m(&["P_5", "P.10", "P"]), ["P.10,5"]);
        assert_eq!(m(&["ndcg_cut.5", "ndcg_cut_10", "map"]), ["map", "ndcg_cut.10,5"]);
        assert_eq!(m(&["iprec_at_recall.0.1,0.5"]), ["iprec_at_recall.0.1,0.5"]);
        let all = m(&["all_trec", "P.7"]);
        assert!(all.contains(&"P.7".to_owned()) && all.contains(&"ndcg_cut".to_owned()));
        assert!(!all.contains(&"P".to_owned()));
        // trec_eval's own parameters (gains, numbers without a leading digit), which pytrec_eval
        // does not take, pass as given: coreb_rs still reads what trec_eval 10.0 reads.
        assert_eq!(
            m(&["ndcg.1=3,2=9,4=4.5", "11pt_avg..25,.5,.75", "P.5"]),
            ["11pt_avg..25,.5,.75", "P.5", "ndcg.1=3,2=9,4=4.5"]
        );
        assert!(pytrec_measures(&["P.x".to_owned()]).is_err());
        assert!(pytrec_measures(&["nope".to_owned()]).is_err());
        // Both cut-offs come out, whichever order.
        let options = TrecOptions::from_args(&m(&["P.5", "P.10"])).unwrap();
        let names: Vec<&str> =
            options.measures.iter().flat_map(|x| x.names.iter().map(String::as_str)).collect();
        assert!(names.contains(&"P_5") && names.contains(&"P_10"), "{names:?}");
    }

    /// The fast `%6.4f` writes exactly what the exact formatter writes, near ties included.
    #[test]
    fn fixed4_is_the_exact_format() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            0.5,
            0.00005,
            0.00015,
            0.12345,
            1.00005,
            2.5e-5,
            999_999.999_95,
            12.0,
            1e6,
            3e7,
            -0.25,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-300,
        ];
        for den in 1..400u32 {
            for num in 0..=den.min(60) {
                values.push(f64::from(num) / f64::from(den));
                values.push(f64::from(num) / f64::from(den) * 7.0);
            }
        }
        let mut x = 0x853c_49e6_748f_ea9bu64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(f64::from_bits(0x3f00_0000_0000_0000 + x % 0x0200_0000_0000_0000));
            values.push((x % 20_000_000) as f64 / 20_000.0 + 0.00005);
        }
        let mut fast = 0;
        for v in values {
            let mut out = String::new();
            if push_fixed4(&mut out, v) {
                fast += 1;
                assert_eq!(out, format!("{v:6.4}"), "{v:e}");
            }
        }
        assert!(fast > 100_000, "the fast path took only {fast} values");
    }

    /// `-c` recounts the summary `num_rel` from the qrels file, judgements above 0 at any
    /// level, as trec_eval 10.0 does; without `-c` it stays the sum over evaluated queries.
    #[test]
    fn complete_num_rel_counts_every_positive_judgement() {
        let qrels = Qrels::from_triples([
            ("a", "d1", 2),
            ("a", "d2", 1),
            ("a", "d3", 0),
            ("b", "d1", 1),
            ("c", "d9", 2),
        ])
        .unwrap();
        let mut run = Run::new("r");
        run.push("a", "d1", 1.0);
        run.push("b", "d1", 1.0);
        let mut opts = TrecOptions::with_measures(&["num_rel", "num_q"]).unwrap();
        opts.level = 2;
        let plain = evaluate(&qrels, &run, &opts).unwrap();
        assert_eq!(plain.summary_value("num_rel"), Some(1.0), "a's rel-2 document only");
        opts.complete = true;
        let complete = evaluate(&qrels, &run, &opts).unwrap();
        assert_eq!(
            complete.summary_value("num_rel"),
            Some(4.0),
            "every judgement above 0 of a, b and c"
        );
        assert_eq!(complete.summary_value("num_q"), Some(3.0));
        assert_eq!(
            complete.query_value("c", "num_rel"),
            Some(1.0),
            "per-query values keep the level"
        );
        assert_eq!(complete.query_value("b", "num_rel"), Some(0.0));
    }

    #[test]
    fn count_below_agrees_with_partition_point() {
        let keys = [1u64, 3, 3, 3, 7, 9, 9, 20];
        for n in 0..=keys.len() {
            for k in 0..22 {
                assert_eq!(
                    count_below(&keys[..n], k),
                    keys[..n].partition_point(|&x| x < k),
                    "n {n} k {k}"
                );
            }
        }
    }

    /// The judged-only placement gives the relevance sequence of a full trec_eval sort, with
    /// many tied scores, negative judgements and every `-M` cut.
    #[test]
    fn rank_rels_matches_full_sort() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % m
        };
        for round in 0..200 {
            let n = 1 + next(60) as usize;
            let mut run = Run::new("r");
            let mut triples = Vec::new();
            for d in 0..n {
                let doc = format!("d{}", next(1000) * 100 + d as u64);
                let score = [0.0, -0.0, 1.5, 2.0, -3.0][next(5) as usize]
                    + if next(3) == 0 { next(4) as f64 } else { 0.0 };
                run.push("q", &doc, score);
                if next(3) == 0 {
                    triples.push(("q", doc, next(5) as i64 - 1));
                }
            }
            triples.push(("q", "unretrieved".to_owned(), 2));
            let qrels = Qrels::from_triples(triples).unwrap();
            let qq = &qrels.queries["q"];
            let entries = &run.queries["q"];
            let full: Vec<(&str, f64)> =
                run.ranked("q").iter().map(|e| (run.doc(e), e.score)).collect();
            for cut in [None, Some(0), Some(1), Some(n / 2), Some(n + 3)] {
                let mut want = form_ranked(qq, &full, 1).rels;
                if let Some(m) = cut {
                    want.truncate(m);
                }
                assert_eq!(rank_rels(&run, qq, entries, cut), want, "round {round} cut {cut:?}");
            }
        }
    }
}
