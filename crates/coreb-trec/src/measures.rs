//! trec_eval's measures (the `all_trec` set), their parameters and per-query computation.
//!
//! Each measure is computed from a [`Ranked`] query: the relevance of every retrieved document
//! in rank order (`-1` not in the qrels, `-2` judged negative = in the pool but unjudged) plus
//! counts over the qrels. The formulas, cut-off conventions, parameter syntax and value names
//! follow trec_eval 9.0.x (`m_*.c`, `meas_init.c`). Does NOT read files or print.

use super::EvalError;

/// A retrieved document that is not in the qrels.
pub const NONPOOL: i64 = -1;
/// A retrieved document in the qrels with a negative relevance (pooled, unjudged).
pub const UNJUDGED: i64 = -2;
const MIN_GEO_MEAN: f64 = 0.00001;
const INFAP_EPSILON: f64 = 0.00001;

/// One query's ranking, reduced to relevance values, as trec_eval's `form_res_rels` builds it.
#[derive(Debug, Clone, Default)]
pub struct Ranked {
    /// Relevance of each retrieved doc in rank order.
    pub rels: Vec<i64>,
    /// Relevant docs in the qrels (relevance >= level).
    pub num_rel: i64,
    /// Relevant docs retrieved.
    pub num_rel_ret: i64,
    /// Retrieved docs not in the qrels.
    pub num_nonpool: i64,
    /// Retrieved docs judged with a negative value.
    pub num_unjudged: i64,
    /// `(level, count)` of the judged docs (relevance >= 0), by increasing level, only the
    /// levels that have one. trec_eval keeps a dense array over `0..=max level`; sparse, a
    /// qrels relevance of 10^12 costs one entry, not 8 TB.
    pub rel_levels: Vec<(i64, i64)>,
}

impl Ranked {
    /// Number of retrieved documents.
    pub fn num_ret(&self) -> i64 {
        self.rels.len() as i64
    }

    /// `rel_levels` from the relevance of every judged doc (negative ones are left out).
    pub fn count_levels(judged: impl Iterator<Item = i64>) -> Vec<(i64, i64)> {
        let mut levels = std::collections::BTreeMap::new();
        for rel in judged.filter(|r| *r >= 0) {
            *levels.entry(rel).or_insert(0i64) += 1;
        }
        levels.into_iter().collect()
    }

    /// The highest judged level, if any doc is judged (trec_eval's `num_rel_levels - 1`).
    fn max_level(&self) -> Option<i64> {
        self.rel_levels.last().map(|l| l.0)
    }
}

/// How a measure's values are combined over queries and printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Arithmetic mean, printed `%6.4f`.
    Mean,
    /// Sum, printed as an integer.
    SumLong,
    /// Geometric mean (values are logs), summary only.
    Geometric,
    /// Not combined (per-query only, e.g. `relstring`).
    None,
    /// `num_q`: the number of queries.
    Count,
    /// `runid`: the run tag, summary only.
    RunId,
}

/// Every measure of trec_eval's standard formats, in trec_eval's computing/printing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum Kind {
    RunId,
    NumQ,
    NumRet,
    NumRel,
    NumRelRet,
    Map,
    GmMap,
    Rprec,
    Bpref,
    RecipRank,
    IprecAtRecall,
    P,
    Relstring,
    Recall,
    InfAp,
    GmBpref,
    RprecMult,
    Utility,
    ElevenPtAvg,
    BinG,
    G,
    Ndcg,
    NdcgRel,
    Rndcg,
    NdcgCut,
    MapCut,
    RelativeP,
    Success,
    SetP,
    SetRelativeP,
    SetRecall,
    SetMap,
    SetF,
    NumNonrelJudgedRet,
    Rbp,
    RbpResid,
    Unj,
}

const ALL: [Kind; 37] = [
    Kind::RunId,
    Kind::NumQ,
    Kind::NumRet,
    Kind::NumRel,
    Kind::NumRelRet,
    Kind::Map,
    Kind::GmMap,
    Kind::Rprec,
    Kind::Bpref,
    Kind::RecipRank,
    Kind::IprecAtRecall,
    Kind::P,
    Kind::Relstring,
    Kind::Recall,
    Kind::InfAp,
    Kind::GmBpref,
    Kind::RprecMult,
    Kind::Utility,
    Kind::ElevenPtAvg,
    Kind::BinG,
    Kind::G,
    Kind::Ndcg,
    Kind::NdcgRel,
    Kind::Rndcg,
    Kind::NdcgCut,
    Kind::MapCut,
    Kind::RelativeP,
    Kind::Success,
    Kind::SetP,
    Kind::SetRelativeP,
    Kind::SetRecall,
    Kind::SetMap,
    Kind::SetF,
    Kind::NumNonrelJudgedRet,
    Kind::Rbp,
    Kind::RbpResid,
    Kind::Unj,
];

const CUTS: &[i64] = &[5, 10, 15, 20, 30, 100, 200, 500, 1000];
const RECALL_PTS: &[f64] = &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const RPREC_MULTS: &[f64] = &[0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0];

impl Kind {
    /// trec_eval's name of the measure.
    pub fn name(self) -> &'static str {
        match self {
            Kind::RunId => "runid",
            Kind::NumQ => "num_q",
            Kind::NumRet => "num_ret",
            Kind::NumRel => "num_rel",
            Kind::NumRelRet => "num_rel_ret",
            Kind::Map => "map",
            Kind::GmMap => "gm_map",
            Kind::Rprec => "Rprec",
            Kind::Bpref => "bpref",
            Kind::RecipRank => "recip_rank",
            Kind::IprecAtRecall => "iprec_at_recall",
            Kind::P => "P",
            Kind::Relstring => "relstring",
            Kind::Recall => "recall",
            Kind::InfAp => "infAP",
            Kind::GmBpref => "gm_bpref",
            Kind::RprecMult => "Rprec_mult",
            Kind::Utility => "utility",
            Kind::ElevenPtAvg => "11pt_avg",
            Kind::BinG => "binG",
            Kind::G => "G",
            Kind::Ndcg => "ndcg",
            Kind::NdcgRel => "ndcg_rel",
            Kind::Rndcg => "Rndcg",
            Kind::NdcgCut => "ndcg_cut",
            Kind::MapCut => "map_cut",
            Kind::RelativeP => "relative_P",
            Kind::Success => "success",
            Kind::SetP => "set_P",
            Kind::SetRelativeP => "set_relative_P",
            Kind::SetRecall => "set_recall",
            Kind::SetMap => "set_map",
            Kind::SetF => "set_F",
            Kind::NumNonrelJudgedRet => "num_nonrel_judged_ret",
            Kind::Rbp => "rbp",
            Kind::RbpResid => "rbp_resid",
            Kind::Unj => "unj",
        }
    }

    /// Look a measure up by trec_eval name.
    pub fn from_name(name: &str) -> Option<Kind> {
        ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Every measure in trec_eval order.
    pub fn all() -> &'static [Kind] {
        &ALL
    }

    fn combine(self) -> Combine {
        match self {
            Kind::RunId => Combine::RunId,
            Kind::NumQ => Combine::Count,
            Kind::NumRet | Kind::NumRel | Kind::NumRelRet | Kind::NumNonrelJudgedRet => {
                Combine::SumLong
            }
            Kind::GmMap | Kind::GmBpref => Combine::Geometric,
            Kind::Relstring => Combine::None,
            _ => Combine::Mean,
        }
    }
}

/// The members of a trec_eval measure nickname (`official`, `set`, `all_trec`).
pub fn nickname(name: &str) -> Option<&'static [&'static str]> {
    const SET: &[&str] = &[
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "utility",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
    ];
    const ALL_TREC: &[&str] = &[
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
        "bpref",
        "recip_rank",
        "iprec_at_recall",
        "P",
        "relstring",
        "recall",
        "unj",
        "rbp",
        "rbp_resid",
        "infAP",
        "gm_bpref",
        "utility",
        "11pt_avg",
        "ndcg",
        "relative_P",
        "Rprec_mult",
        "success",
        "map_cut",
        "ndcg_cut",
        "ndcg_rel",
        "Rndcg",
        "binG",
        "G",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
        "num_nonrel_judged_ret",
    ];
    // trec_eval's official measures are the first twelve of all_trec, in the same order.
    const OFFICIAL: &[&str] = ALL_TREC.split_at(12).0;
    match name {
        "official" => Some(OFFICIAL),
        "set" => Some(SET),
        "all_trec" => Some(ALL_TREC),
        _ => None,
    }
}

/// A measure's parameters, resolved (defaults applied).
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    /// No parameters.
    None,
    /// Integer cut-offs (ascending, positive, unique).
    Cuts(Vec<i64>),
    /// Real cut-offs (ascending, unique), one value each.
    RealCuts(Vec<f64>),
    /// Real parameters for one value.
    Reals(Vec<f64>),
    /// `name=value` pairs (gains for nDCG-style measures, `p` for rbp).
    Pairs(Vec<(String, f64)>),
}

/// One requested measure: its kind, parameters and the names of its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// Which measure.
    pub kind: Kind,
    /// Its parameters.
    pub params: Params,
    /// Printable parameter text, when given on the command line.
    pub printable: Option<String>,
    /// The name of each value (`P_5`, `ndcg_cut_10`, `utility_2,-1,0,0` ...).
    pub names: Vec<String>,
}

/// C `strtol`-like: the leading integer of `s` (0 when none).
fn c_long(s: &str) -> i64 {
    let s = s.trim_start();
    let bytes = s.as_bytes();
    let mut end = 0;
    if end < bytes.len() && (bytes[end] == b'-' || bytes[end] == b'+') {
        end += 1;
    }
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    s[..end].parse().unwrap_or(0)
}

/// C `atof`-like: the longest leading prefix of `s` that is a number (0 when none).
fn c_double(s: &str) -> f64 {
    let s = s.trim_start();
    let mut end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .map_or(s.len(), |(i, _)| i);
    while end > 0 {
        if let Ok(v) = s[..end].parse::<f64>() {
            return v;
        }
        end -= 1;
    }
    0.0
}

impl Measure {
    /// Resolve `kind` with the parameter text given after its `.` on the command line.
    pub fn new(kind: Kind, param_text: Option<&str>) -> Result<Measure, EvalError> {
        let bad =
            |why: &str| EvalError::Measure { measure: kind.name().to_owned(), why: why.to_owned() };
        let base = kind.name();
        let list = |t: &str| t.split(',').map(str::to_owned).collect::<Vec<_>>();
        let params = match kind {
            Kind::P
            | Kind::Recall
            | Kind::NdcgCut
            | Kind::MapCut
            | Kind::RelativeP
            | Kind::Success
            | Kind::Unj => {
                let mut cuts: Vec<i64> = match param_text {
                    Some(t) => list(t).iter().map(|c| c_long(c)).collect(),
                    None => match kind {
                        Kind::Success => vec![1, 5, 10],
                        Kind::Unj => vec![5, 10, 20],
                        _ => CUTS.to_vec(),
                    },
                };
                cuts.sort_unstable();
                if cuts.first().is_some_and(|&c| c <= 0) {
                    return Err(bad("cut-offs must be positive"));
                }
                if cuts.windows(2).any(|w| w[0] == w[1]) {
                    return Err(bad("duplicate cut-offs"));
                }
                Params::Cuts(cuts)
            }
            Kind::IprecAtRecall | Kind::RprecMult => {
                let mut cuts: Vec<f64> = match param_text {
                    Some(t) => list(t).iter().map(|c| c_double(c)).collect(),
                    None if kind == Kind::IprecAtRecall => RECALL_PTS.to_vec(),
                    None => RPREC_MULTS.to_vec(),
                };
                cuts.sort_by(|a, b| a.total_cmp(b));
                if cuts.windows(2).any(|w| w[0] == w[1]) {
                    return Err(bad("duplicate cut-offs"));
                }
                Params::RealCuts(cuts)
            }
            Kind::Relstring | Kind::Utility | Kind::ElevenPtAvg | Kind::SetF => {
                let vals: Vec<f64> = match param_text {
                    Some(t) => list(t).iter().map(|c| c_double(c)).collect(),
                    None => match kind {
                        Kind::Relstring => vec![10.0],
                        Kind::Utility => vec![1.0, -1.0, 0.0, 0.0],
                        Kind::ElevenPtAvg => RECALL_PTS.to_vec(),
                        _ => vec![1.0],
                    },
                };
                if kind == Kind::Utility && vals.len() != 4 {
                    return Err(bad("needs exactly 4 coefficients"));
                }
                Params::Reals(vals)
            }
            Kind::G | Kind::Ndcg | Kind::NdcgRel | Kind::Rndcg | Kind::Rbp => match param_text {
                None => Params::Pairs(Vec::new()),
                Some(t) => {
                    let mut pairs = Vec::new();
                    for piece in t.split(',') {
                        let Some((n, v)) = piece.split_once('=') else {
                            return Err(bad(&format!("malformed pair parameters in `{t}`")));
                        };
                        pairs.push((n.to_owned(), c_double(v)));
                    }
                    Params::Pairs(pairs)
                }
            },
            _ => {
                if param_text.is_some() {
                    return Err(bad("takes no parameters"));
                }
                Params::None
            }
        };
        let printable = param_text.map(str::to_owned);
        let names = match &params {
            Params::Cuts(c) => c.iter().map(|c| format!("{base}_{c}")).collect(),
            Params::RealCuts(c) => c.iter().map(|c| format!("{base}_{c:.2}")).collect(),
            _ => vec![match &printable {
                Some(p) => format!("{base}_{p}"),
                None => base.to_owned(),
            }],
        };
        Ok(Measure { kind, params, printable, names })
    }

    /// How this measure's values combine over queries.
    pub fn combine(&self) -> Combine {
        self.kind.combine()
    }

    fn cuts(&self) -> &[i64] {
        match &self.params {
            Params::Cuts(c) => c,
            _ => &[],
        }
    }

    fn reals(&self) -> &[f64] {
        match &self.params {
            Params::RealCuts(c) | Params::Reals(c) => c,
            _ => &[],
        }
    }

    fn pairs(&self) -> &[(String, f64)] {
        match &self.params {
            Params::Pairs(p) => p,
            _ => &[],
        }
    }

    /// Compute this measure's values for one query (one value per name; `relstring` returns its
    /// string through `text`).
    ///
    /// Long on purpose: one `match` arm per measure, each mirroring the `te_calc_*` function of
    /// trec_eval's `m_<measure>.c` (same loop, same order of floating-point operations, so the
    /// printed values agree to the last digit). Splitting the arms into functions would hide
    /// that one-to-one correspondence, which is what a reader checks against trec_eval.
    pub fn compute(&self, r: &Ranked, level: i64, out: &mut Vec<f64>, text: &mut Option<String>) {
        let num_ret = r.num_ret();
        let rels = &r.rels;
        let is_rel = |x: i64| x >= level;
        match self.kind {
            Kind::RunId | Kind::NumQ => out.push(1.0),
            Kind::NumRet => out.push(num_ret as f64),
            Kind::NumRel => out.push(r.num_rel as f64),
            Kind::NumRelRet => out.push(r.num_rel_ret as f64),
            Kind::Map | Kind::GmMap => {
                let (mut so_far, mut sum) = (0i64, 0.0);
                for (i, &x) in rels.iter().enumerate() {
                    if is_rel(x) {
                        so_far += 1;
                        sum += so_far as f64 / (i + 1) as f64;
                    }
                }
                let ap = if so_far > 0 {
                    sum / r.num_rel as f64
                } else if self.kind == Kind::GmMap {
                    sum
                } else {
                    0.0
                };
                out.push(if self.kind == Kind::GmMap { ap.max(MIN_GEO_MEAN).ln() } else { ap });
            }
            Kind::Rprec => {
                let n = num_ret.min(r.num_rel) as usize;
                if n == 0 {
                    out.push(0.0);
                } else {
                    let hits = rels[..n].iter().filter(|&&x| is_rel(x)).count();
                    out.push(hits as f64 / r.num_rel as f64);
                }
            }
            Kind::Bpref | Kind::GmBpref => {
                let num_nonrel: i64 =
                    r.rel_levels.iter().filter(|l| l.0 < level).map(|l| l.1).sum();
                let (mut nonrel, mut bpref) = (0i64, 0.0);
                for &x in rels {
                    if x < 0 {
                        continue;
                    }
                    if x < level {
                        nonrel += 1;
                    } else if nonrel > 0 {
                        bpref +=
                            1.0 - nonrel.min(r.num_rel) as f64 / num_nonrel.min(r.num_rel) as f64;
                    } else {
                        bpref += 1.0;
                    }
                }
                if r.num_rel > 0 {
                    bpref /= r.num_rel as f64;
                }
                out.push(if self.kind == Kind::GmBpref {
                    bpref.max(MIN_GEO_MEAN).ln()
                } else {
                    bpref
                });
            }
            Kind::RecipRank => {
                out.push(
                    rels.iter().position(|&x| is_rel(x)).map_or(0.0, |i| 1.0 / (i + 1) as f64),
                );
            }
            Kind::IprecAtRecall | Kind::ElevenPtAvg => {
                let pts = self.reals();
                let mut vals = vec![0.0; pts.len()];
                let cutoffs: Vec<i64> =
                    pts.iter().map(|p| (p * r.num_rel as f64).round() as i64).collect();
                let mut cur = pts.len() as isize - 1;
                while cur >= 0 && cutoffs[cur as usize] > r.num_rel_ret {
                    cur -= 1;
                }
                let mut int_precis = r.num_rel_ret as f64 / num_ret as f64;
                let mut so_far = r.num_rel_ret;
                let mut i = num_ret;
                while i > 0 && so_far > 0 {
                    let precis = so_far as f64 / i as f64;
                    if int_precis < precis {
                        int_precis = precis;
                    }
                    if is_rel(rels[i as usize - 1]) {
                        while cur >= 0 && so_far == cutoffs[cur as usize] {
                            vals[cur as usize] = int_precis;
                            cur -= 1;
                        }
                        so_far -= 1;
                    }
                    i -= 1;
                }
                while cur >= 0 {
                    vals[cur as usize] = int_precis;
                    cur -= 1;
                }
                if self.kind == Kind::IprecAtRecall {
                    out.extend(vals);
                } else {
                    let sum: f64 = vals.iter().sum();
                    out.push(sum / pts.len() as f64);
                }
            }
            Kind::P | Kind::Recall | Kind::RelativeP | Kind::Success | Kind::MapCut | Kind::Unj => {
                self.cutoff_family(r, level, out)
            }
            Kind::Relstring => {
                let len = (self.reals().first().copied().unwrap_or(10.0) as i64).min(num_ret).max(0)
                    as usize;
                let s: String = rels[..len]
                    .iter()
                    .map(|&x| match x {
                        x if x > 9 => '>',
                        x if x >= 0 => char::from(b'0' + x as u8),
                        NONPOOL => '-',
                        UNJUDGED => '.',
                        _ => '<',
                    })
                    .collect();
                *text = Some(s);
                out.push(0.0);
            }
            Kind::InfAp => {
                let (mut nonrel, mut rel, mut unjudged, mut ap) = (0i64, 0i64, 0i64, 0.0);
                for (j, &x) in rels.iter().enumerate() {
                    if x == NONPOOL {
                        continue;
                    }
                    if x == UNJUDGED {
                        unjudged += 1;
                        continue;
                    }
                    if x >= 0 && x < level {
                        nonrel += 1;
                    } else {
                        rel += 1;
                        if j == 0 {
                            ap += 1.0;
                        } else {
                            let fj = j as f64;
                            ap += 1.0 / (fj + 1.0)
                                + (fj / (fj + 1.0))
                                    * ((rel - 1 + nonrel + unjudged) as f64 / fj)
                                    * ((rel - 1) as f64 + INFAP_EPSILON)
                                    / ((rel - 1 + nonrel) as f64 + 2.0 * INFAP_EPSILON);
                        }
                    }
                }
                if r.num_rel > 0 {
                    ap /= r.num_rel as f64;
                }
                out.push(ap);
            }
            Kind::RprecMult => {
                let pts = self.reals();
                let mut vals = vec![0.0; pts.len()];
                let cutoffs: Vec<i64> =
                    pts.iter().map(|p| (p * r.num_rel as f64 + 0.9) as i64).collect();
                let mut cur = pts.len() as isize - 1;
                while cur >= 0 && cutoffs[cur as usize] > num_ret {
                    vals[cur as usize] = r.num_rel_ret as f64 / cutoffs[cur as usize] as f64;
                    cur -= 1;
                }
                let mut so_far = r.num_rel_ret;
                let mut i = num_ret;
                while i > 0 && so_far > 0 {
                    let precis = so_far as f64 / i as f64;
                    while cur >= 0 && i == cutoffs[cur as usize] {
                        vals[cur as usize] = precis;
                        cur -= 1;
                    }
                    if is_rel(rels[i as usize - 1]) {
                        so_far -= 1;
                    }
                    i -= 1;
                }
                out.extend(vals);
            }
            Kind::Utility => {
                let p = self.reals();
                let v = p[0] * r.num_rel_ret as f64
                    + p[1] * (num_ret - r.num_rel_ret) as f64
                    + p[2] * (r.num_rel - r.num_rel_ret) as f64
                    + p[3] * (r.num_rel_ret - num_ret - r.num_rel) as f64;
                out.push(v);
            }
            Kind::BinG => {
                let (mut so_far, mut sum) = (0i64, 0.0);
                for (i, &x) in rels.iter().enumerate() {
                    if is_rel(x) {
                        so_far += 1;
                        sum += 1.0 / ((3 + i as i64 - so_far) as f64).log2();
                    }
                }
                out.push(if so_far > 0 { sum / r.num_rel as f64 } else { 0.0 });
            }
            Kind::G => out.push(g_measure(r, &Gains::new(self.pairs(), r))),
            Kind::Ndcg => out.push(ndcg(r, &Gains::new(self.pairs(), r))),
            Kind::NdcgRel => out.push(ndcg_rel(r, &Gains::new(self.pairs(), r))),
            Kind::Rndcg => out.push(rndcg(r, &Gains::new(self.pairs(), r))),
            Kind::NdcgCut => ndcg_cut(r, self.cuts(), out),
            Kind::SetP => {
                out.push(if num_ret > 0 { r.num_rel_ret as f64 / num_ret as f64 } else { 0.0 })
            }
            Kind::SetRelativeP => out.push(if num_ret > 0 && r.num_rel > 0 {
                r.num_rel_ret as f64 / num_ret.min(r.num_rel) as f64
            } else {
                0.0
            }),
            Kind::SetRecall => {
                out.push(if r.num_rel > 0 { r.num_rel_ret as f64 / r.num_rel as f64 } else { 0.0 })
            }
            Kind::SetMap => out.push(if num_ret > 0 && r.num_rel > 0 {
                (r.num_rel_ret as f64 * r.num_rel_ret as f64) / (num_ret as f64 * r.num_rel as f64)
            } else {
                0.0
            }),
            Kind::SetF => {
                if r.num_rel_ret > 0 {
                    let p = r.num_rel_ret as f64 / num_ret as f64;
                    let rc = r.num_rel_ret as f64 / r.num_rel as f64;
                    let x = self.reals()[0];
                    out.push((x + 1.0) * p * rc / (x * p + rc));
                } else {
                    out.push(0.0);
                }
            }
            Kind::NumNonrelJudgedRet => {
                out.push((num_ret - r.num_nonpool - r.num_unjudged - r.num_rel_ret) as f64)
            }
            Kind::Rbp => out.push(rbp(r, self.pairs())),
            Kind::RbpResid => {
                let p = 0.9;
                let (mut unj, mut sum, mut cur_p) = (0, 0.0, 1.0);
                for &x in rels {
                    if x < 0 {
                        unj += 1;
                        sum += cur_p;
                    }
                    cur_p *= p;
                }
                out.push(if unj > 0 { cur_p + (1.0 - p) * sum } else { 0.0 });
            }
        }
    }

    /// P, recall, relative_P, success, map_cut, unj: a running count read at each cut-off,
    /// with cut-offs beyond the ranking filled as if by non-relevant documents.
    fn cutoff_family(&self, r: &Ranked, level: i64, out: &mut Vec<f64>) {
        let cuts = self.cuts();
        let kind = self.kind;
        if matches!(kind, Kind::Recall | Kind::RelativeP | Kind::MapCut) && r.num_rel == 0 {
            out.extend(std::iter::repeat_n(0.0, cuts.len()));
            return;
        }
        let value = |count: i64, sum: f64, at: i64| -> f64 {
            match kind {
                Kind::P | Kind::Unj => count as f64 / at as f64,
                Kind::Recall => count as f64 / r.num_rel as f64,
                Kind::RelativeP => {
                    count as f64 / (if at > r.num_rel { r.num_rel } else { at }) as f64
                }
                Kind::Success => {
                    if count > 0 {
                        1.0
                    } else {
                        0.0
                    }
                }
                _ => sum / r.num_rel as f64,
            }
        };
        let (mut count, mut sum, mut ci) = (0i64, 0.0, 0usize);
        for (i, &x) in r.rels.iter().enumerate() {
            if ci < cuts.len() && i as i64 == cuts[ci] {
                out.push(value(count, sum, i as i64));
                ci += 1;
                if ci == cuts.len() {
                    break;
                }
            }
            let hit = if kind == Kind::Unj { x == NONPOOL || x == UNJUDGED } else { x >= level };
            if hit {
                count += 1;
                sum += count as f64 / (i + 1) as f64;
            }
        }
        while ci < cuts.len() {
            out.push(value(count, sum, cuts[ci]));
            ci += 1;
        }
    }
}

/// Relevance levels with their gains and counts, sorted by increasing gain (trec_eval
/// `setup_gains`): levels named in the parameters get their given gain, the others gain = level.
///
/// trec_eval lists every level `0..=max judged level`; here only the named levels and those
/// with a judged doc are listed. The others have no doc (the ideal ranking skips them, no
/// retrieved doc has their relevance), so only their extreme gains matter: `unlisted` keeps
/// the smallest and largest (rbp's normalisation, the ideal ranking's first gain).
#[derive(Debug)]
struct Gains {
    levels: Vec<(i64, f64, i64)>,
    unlisted: Option<(f64, f64)>,
}

impl Gains {
    fn new(pairs: &[(String, f64)], r: &Ranked) -> Gains {
        let mut levels: Vec<(i64, f64, i64)> = pairs
            .iter()
            .filter(|(n, _)| {
                let s = n.strip_prefix(['-', '+']).unwrap_or(n);
                !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
            })
            .map(|(n, v)| (c_long(n), *v, 0))
            .collect();
        for &(lvl, count) in &r.rel_levels {
            match levels.iter_mut().find(|l| l.0 == lvl) {
                Some(l) => l.2 = count,
                None => levels.push((lvl, lvl as f64, count)),
            }
        }
        // The lowest and highest level in 0..=max not listed: found within a few steps, since
        // every listed level is a named one or has a doc.
        let unlisted = r.max_level().and_then(|max| {
            let listed = |lvl: &i64| levels.iter().any(|l| l.0 == *lvl);
            let low = (0..=max).find(|l| !listed(l))?;
            let high = (0..=max).rev().find(|l| !listed(l))?;
            Some((low as f64, high as f64))
        });
        levels.sort_by(|a, b| a.1.total_cmp(&b.1));
        Gains { levels, unlisted }
    }

    /// The highest gain of any level, listed or not (where trec_eval's ideal ranking starts).
    fn top(&self) -> f64 {
        let listed = self.levels.last().map(|l| l.1);
        match (listed, self.unlisted) {
            (Some(a), Some((_, b))) => a.max(b),
            (a, b) => a.or(b.map(|u| u.1)).unwrap_or(0.0),
        }
    }

    fn gain(&self, rel: i64) -> f64 {
        self.levels.iter().find(|l| l.0 == rel).map_or(0.0, |l| l.1)
    }
}

/// Walks the ideal ranking: the gains of judged documents, highest first.
struct Ideal<'a> {
    levels: &'a [(i64, f64, i64)],
    cur: isize,
    at_level: i64,
    gain: f64,
}

impl<'a> Ideal<'a> {
    fn new(g: &'a Gains) -> Ideal<'a> {
        // When an unlisted level (no doc) has the highest gain, the walk starts on it, as
        // trec_eval's does: its gain is the first one tested, and the first step leaves it.
        let listed_top = g.levels.last().map(|l| l.1);
        let unlisted_on_top =
            g.unlisted.is_some_and(|(_, high)| listed_top.is_none_or(|top| high > top));
        let cur = g.levels.len() as isize - if unlisted_on_top { 0 } else { 1 };
        Ideal { levels: &g.levels, cur, at_level: 0, gain: g.top() }
    }

    /// Docs at the level `cur` (none at the unlisted top, one past the listed ones).
    fn count(&self) -> i64 {
        self.levels.get(self.cur as usize).map_or(0, |l| l.2)
    }

    fn step(&mut self) {
        self.at_level += 1;
        while self.cur >= 0 && self.at_level > self.count() {
            self.at_level = 1;
            self.cur -= 1;
            self.gain = if self.cur >= 0 { self.levels[self.cur as usize].1 } else { 0.0 };
        }
    }
}

fn disc(i: usize) -> f64 {
    ((i + 2) as f64).log2()
}

fn ndcg(r: &Ranked, g: &Gains) -> f64 {
    let (mut dcg, mut idcg) = (0.0, 0.0);
    let mut ideal = Ideal::new(g);
    let mut i = 0;
    while i < r.rels.len() && ideal.gain > 0.0 {
        let rg = g.gain(r.rels[i]);
        if rg != 0.0 {
            dcg += rg / disc(i);
        }
        ideal.step();
        if ideal.gain > 0.0 {
            idcg += ideal.gain / disc(i);
        }
        i += 1;
    }
    while i < r.rels.len() {
        let rg = g.gain(r.rels[i]);
        if rg != 0.0 {
            dcg += rg / disc(i);
        }
        i += 1;
    }
    while ideal.gain > 0.0 {
        ideal.step();
        if ideal.gain > 0.0 {
            idcg += ideal.gain / disc(i);
        }
        i += 1;
    }
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

fn ndcg_rel(r: &Ranked, g: &Gains) -> f64 {
    let (mut dcg, mut idcg, mut sum) = (0.0, 0.0, 0.0);
    let (mut num_rel, mut num_rel_ret) = (0i64, 0i64);
    let mut ideal = Ideal::new(g);
    let mut i = 0;
    while i < r.rels.len() && ideal.gain > 0.0 {
        let rg = g.gain(r.rels[i]);
        if rg != 0.0 {
            dcg += rg / disc(i);
        }
        ideal.step();
        if ideal.gain > 0.0 {
            num_rel += 1;
            idcg += ideal.gain / disc(i);
        }
        if rg > 0.0 {
            sum += dcg / idcg;
            num_rel_ret += 1;
        }
        i += 1;
    }
    while i < r.rels.len() {
        let rg = g.gain(r.rels[i]);
        if rg != 0.0 {
            dcg += rg / disc(i);
        }
        if rg > 0.0 {
            sum += dcg / idcg;
            num_rel_ret += 1;
        }
        i += 1;
    }
    while ideal.gain > 0.0 {
        ideal.step();
        if ideal.gain > 0.0 {
            num_rel += 1;
            idcg += ideal.gain / disc(i);
        }
        i += 1;
    }
    sum += (num_rel - num_rel_ret) as f64 * dcg / idcg;
    if sum > 0.0 { sum / num_rel as f64 } else { 0.0 }
}

fn rndcg(r: &Ranked, g: &Gains) -> f64 {
    if r.num_rel == 0 {
        return 0.0;
    }
    let (mut dcg, mut idcg, mut sum) = (0.0, 0.0, 0.0);
    let mut changes = 0i64;
    let mut ideal = Ideal::new(g);
    let mut old = ideal.gain;
    let mut i = 0;
    while i < r.rels.len() && ideal.gain > 0.0 {
        let rg = g.gain(r.rels[i]);
        ideal.step();
        if old != ideal.gain {
            if idcg > 0.0 {
                sum += dcg / idcg;
                changes += 1;
            }
            old = ideal.gain;
        }
        if rg != 0.0 {
            dcg += rg / disc(i);
        }
        if ideal.gain > 0.0 {
            idcg += ideal.gain / disc(i);
        }
        i += 1;
    }
    if i < r.rels.len() {
        while i < r.rels.len() {
            let rg = g.gain(r.rels[i]);
            if rg != 0.0 {
                dcg += rg / disc(i);
            }
            i += 1;
        }
        if idcg > 0.0 {
            sum += dcg / idcg;
            changes += 1;
        }
    }
    while ideal.gain > 0.0 {
        ideal.step();
        if old != ideal.gain {
            if idcg > 0.0 {
                sum += dcg / idcg;
                changes += 1;
            }
            old = ideal.gain;
        }
        if ideal.gain > 0.0 {
            idcg += ideal.gain / disc(i);
        }
        i += 1;
    }
    sum / changes as f64
}

fn g_measure(r: &Ranked, g: &Gains) -> f64 {
    let (mut results_g, mut sum_results, mut sum_ideal, mut sum_cost) = (0.0, 0.0, 0.0, 0.0);
    let min_cost = 1.0;
    let mut ideal = Ideal::new(g);
    let mut i = 0;
    while i < r.rels.len() && ideal.gain > 0.0 {
        let rg = g.gain(r.rels[i]);
        sum_results += rg;
        ideal.step();
        if ideal.gain > 0.0 {
            sum_ideal += ideal.gain;
        }
        sum_cost += if ideal.gain >= min_cost { ideal.gain } else { min_cost };
        if rg != 0.0 {
            results_g += rg / (2.0 + sum_cost - sum_results).log2();
        }
        i += 1;
    }
    while i < r.rels.len() {
        let rg = g.gain(r.rels[i]);
        sum_results += rg;
        sum_cost += min_cost;
        if rg != 0.0 {
            results_g += rg / (2.0 + sum_cost - sum_results).log2();
        }
        i += 1;
    }
    while ideal.gain > 0.0 {
        ideal.step();
        if ideal.gain > 0.0 {
            sum_ideal += ideal.gain;
        }
    }
    if sum_ideal > 0.0 { results_g / sum_ideal } else { 0.0 }
}

fn ndcg_cut(r: &Ranked, cuts: &[i64], out: &mut Vec<f64>) {
    let start = out.len();
    let (mut sum, mut ci) = (0.0, 0usize);
    for (i, &x) in r.rels.iter().enumerate() {
        if ci < cuts.len() && i as i64 == cuts[ci] {
            out.push(sum);
            ci += 1;
            if ci == cuts.len() {
                break;
            }
        }
        if x > 0 {
            sum += x as f64 / disc(i);
        }
    }
    while ci < cuts.len() {
        out.push(sum);
        ci += 1;
    }
    // Ideal DCG from the judged levels (gain = level), normalising each cut-off.
    let vals = &mut out[start..];
    let mut ci = 0usize;
    let mut idcg = 0.0;
    // Every judged doc of level >= 1, highest level first.
    let mut i = 0i64;
    'ideal: for &(lvl, count) in r.rel_levels.iter().rev().filter(|l| l.0 > 0) {
        for _ in 0..count {
            if ci < cuts.len() && i == cuts[ci] {
                if idcg > 0.0 {
                    vals[ci] /= idcg;
                }
                ci += 1;
                if ci == cuts.len() {
                    break 'ideal;
                }
            }
            idcg += lvl as f64 / ((i + 2) as f64).log2();
            i += 1;
        }
    }
    while ci < cuts.len() {
        if idcg > 0.0 {
            vals[ci] /= idcg;
        }
        ci += 1;
    }
}

fn rbp(r: &Ranked, pairs: &[(String, f64)]) -> f64 {
    let p = pairs.iter().find(|(n, _)| n == "p").map_or(0.9, |(_, v)| *v);
    let mut g = Gains::new(pairs, r);
    let unlisted = g.unlisted.map_or([f64::INFINITY, f64::NEG_INFINITY], |(lo, hi)| [lo, hi]);
    let min = g.levels.iter().map(|l| l.1).fold(unlisted[0], f64::min);
    let max = g.levels.iter().map(|l| l.1).fold(unlisted[1], f64::max);
    if min < 0.0 || max > 1.0 {
        for l in &mut g.levels {
            l.1 = (l.1 - min) / (max - min);
        }
    }
    let (mut sum, mut cur_p) = (0.0, 1.0);
    for &x in &r.rels {
        let gain = g.gain(x);
        if gain != 0.0 {
            sum += gain * cur_p;
        }
        cur_p *= p;
    }
    (1.0 - p) * sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(rels: &[i64], judged: &[i64]) -> Ranked {
        Ranked {
            rels: rels.to_vec(),
            num_rel: judged.iter().filter(|&&j| j >= 1).count() as i64,
            num_rel_ret: rels.iter().filter(|&&j| j >= 1).count() as i64,
            num_nonpool: rels.iter().filter(|&&j| j == NONPOOL).count() as i64,
            num_unjudged: rels.iter().filter(|&&j| j == UNJUDGED).count() as i64,
            rel_levels: Ranked::count_levels(judged.iter().copied()),
        }
    }

    fn value(kind: &str, params: Option<&str>, r: &Ranked) -> Vec<f64> {
        let m = Measure::new(Kind::from_name(kind).unwrap(), params).unwrap();
        let mut out = Vec::new();
        m.compute(r, 1, &mut out, &mut None);
        out
    }

    #[test]
    fn ndcg_by_hand() {
        // ranking: rel 2, 0, 1; judged: 2, 1, 1, 0
        let r = ranked(&[2, 0, 1], &[2, 1, 1, 0]);
        let dcg = 2.0 + 1.0 / 4f64.log2();
        let idcg = 2.0 + 1.0 / 3f64.log2() + 1.0 / 4f64.log2();
        assert!((value("ndcg", None, &r)[0] - dcg / idcg).abs() < 1e-12);
        let cut = value("ndcg_cut", Some("1,3"), &r);
        assert!((cut[0] - 1.0).abs() < 1e-12 && (cut[1] - dcg / idcg).abs() < 1e-12);
        // gain remapping: level 1 → 0
        let g = value("ndcg", Some("1=0"), &r);
        assert!((g[0] - 1.0).abs() < 1e-12, "{g:?}");
    }

    #[test]
    fn levels_without_documents_keep_trec_eval_gains() {
        // Judged levels 1 and 3 only: trec_eval still lists levels 0 and 2 (gain = level), so
        // rbp normalises gains by 0..3: level 3 gains 1, level 1 gains 1/3.
        let r = ranked(&[3, 1], &[1, 3]);
        assert_eq!(r.rel_levels, [(1, 1), (3, 1)]);
        assert!((value("rbp", None, &r)[0] - 0.1 * (1.0 + 0.9 / 3.0)).abs() < 1e-12);
        // With level 3 gaining 0, the highest gain is level 2's, which has no doc: trec_eval's
        // ideal ranking starts on it and its first step leaves it, so the ideal is the level-1
        // doc at rank 1 (not a gain of 2 for a doc that does not exist).
        let g = value("ndcg", Some("3=0"), &r);
        assert!((g[0] - 1.0 / 3f64.log2()).abs() < 1e-12, "{g:?}");
        // Levels 1 and 2 have no doc and outgain level 3's: no ideal gain, no ndcg.
        let r = ranked(&[3, 0], &[3, 0]);
        assert_eq!(value("ndcg", Some("3=0"), &r)[0], 0.0);
    }

    #[test]
    fn a_relevance_of_ten_to_the_twelfth_is_one_level() {
        // A dense array would be 8 TB; walking 0..=10^12 would never end.
        let huge = 1_000_000_000_000i64;
        let r = ranked(&[0, huge], &[huge, 0, 1]);
        assert_eq!(r.rel_levels, [(0, 1), (1, 1), (huge, 1)]);
        let ideal = huge as f64 + 1.0 / 3f64.log2();
        let ndcg = value("ndcg", None, &r)[0];
        assert!((ndcg - huge as f64 / 3f64.log2() / ideal).abs() < 1e-12, "{ndcg}");
        let cut = value("ndcg_cut", Some("1,5"), &r);
        assert!((cut[1] - ndcg).abs() < 1e-12 && cut[0] == 0.0, "{cut:?}");
        for m in ["bpref", "rbp", "Rndcg", "G", "ndcg_rel", "map", "infAP"] {
            assert!(value(m, None, &r).iter().all(|v| v.is_finite()), "{m}");
        }
    }

    #[test]
    fn precision_recall_success_cutoffs() {
        let r = ranked(&[0, 1, NONPOOL, 1], &[1, 1, 1, 0]);
        assert_eq!(value("P", Some("1,2,10"), &r), vec![0.0, 0.5, 0.2]);
        assert_eq!(value("recall", Some("2,4"), &r), vec![1.0 / 3.0, 2.0 / 3.0]);
        assert_eq!(value("success", Some("1,2"), &r), vec![0.0, 1.0]);
        assert_eq!(value("recip_rank", None, &r), vec![0.5]);
        assert_eq!(value("map", None, &r), vec![(0.5 + 0.5) / 3.0]);
        assert_eq!(value("unj", Some("3"), &r), vec![1.0 / 3.0]);
    }

    #[test]
    fn parameter_forms() {
        let m = Measure::new(Kind::NdcgCut, Some("10,20,23.4")).unwrap();
        assert_eq!(m.names, ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]);
        let m = Measure::new(Kind::RprecMult, Some("5.0,0.2,0.35")).unwrap();
        assert_eq!(m.names, ["Rprec_mult_0.20", "Rprec_mult_0.35", "Rprec_mult_5.00"]);
        let m = Measure::new(Kind::Ndcg, Some("1=3,2=9,4=4.5")).unwrap();
        assert_eq!(m.names, ["ndcg_1=3,2=9,4=4.5"]);
        assert!(Measure::new(Kind::P, Some("5,5")).is_err());
        assert!(Measure::new(Kind::P, Some("0")).is_err());
        assert!(Measure::new(Kind::Ndcg, Some("1:3")).is_err());
        assert!(Measure::new(Kind::Utility, Some("1,2")).is_err());
    }
}
