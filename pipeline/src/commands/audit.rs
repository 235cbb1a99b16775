//! `coreb audit <release> <audit>`: contamination audits of a published release.
//!
//! - `overlap <corpus>`: every item of a JSONL/Parquet corpus is checked against the release's
//!   documents (problem statements, `text_corpus` texts, `code_corpus` codes): exact hash hits
//!   (sha256 of the normalised text) and long word n-gram overlap; worst offenders listed.
//! - `rewrite`: how far each rewritten statement (`text_corpus` rows of kind `full`) moved from
//!   its source statement (`problems.parquet`): n-gram containment and Jaccard.
//!
//! Does NOT audit whether a rewrite kept its tests: a release carries the source problems'
//! tests only, not the rewritten problems' (those live in the build's artifact store). Does NOT
//! run a model (pass@1 original vs rewritten is not built yet).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde::Serialize;
use stages::corpus::{ReleaseDoc, ReleaseIndex, ngram_hashes, words};
use stages::tables::ProblemReader;

use super::corpus::{for_each_json, write_atomic};
use crate::cli::{AuditArgs, AuditKind, OverlapArgs, RewriteArgs};
use crate::printer::Printer;

/// Run `coreb audit`.
pub fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let AuditArgs { release, audit, out, json } = args;
    let printer = Printer::new(json);
    if !release.join("MANIFEST.json").exists() {
        bail!("`{}`: not a release directory (no `MANIFEST.json`)", release.display());
    }
    let (name, value, md) = match audit {
        AuditKind::Overlap(a) => {
            let r = overlap(&release, &a)?;
            let md = overlap_markdown(&r);
            ("overlap", serde_json::to_value(&r)?, md)
        }
        AuditKind::Rewrite(a) => {
            let r = rewrite(&release, &a)?;
            let md = rewrite_markdown(&r);
            ("rewrite", serde_json::to_value(&r)?, md)
        }
    };
    if let Some(dir) = out {
        write_atomic(&dir.join(format!("{name}.json")), &serde_json::to_vec_pretty(&value)?)?;
        write_atomic(&dir.join(format!("{name}.md")), md.as_bytes())?;
        printer.status(format!("wrote `{}` and `{}`", dir.join(format!("{name}.json")).display(), dir.join(format!("{name}.md")).display()));
    }
    if json {
        printer.json_line(&value);
    } else {
        printer.out(md);
    }
    Ok(ExitCode::SUCCESS)
}

/// Every release below `dir`: directories holding a `MANIFEST.json` (up to three levels
/// down), sorted.
pub(crate) fn find_releases(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.to_owned(), 0)];
    while let Some((d, depth)) = stack.pop() {
        if d.join("MANIFEST.json").exists() {
            found.push(d);
            continue;
        }
        if depth >= 3 {
            continue;
        }
        for entry in fs_err::read_dir(&d)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The release's name: its last two path components (`sample/v202503`).
fn release_name(dir: &Path) -> String {
    let parts: Vec<String> = dir.components().rev().take(2).map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// The documents of a release: source statements, texts and codes.
pub(crate) fn release_docs(dir: &Path) -> anyhow::Result<Vec<ReleaseDoc>> {
    let release = release_name(dir);
    let mut docs = Vec::new();
    for p in ProblemReader::open(&dir.join("problems.parquet"))? {
        let p = p?;
        docs.push(ReleaseDoc { release: release.clone(), doc: format!("problems:{}", p.id.as_str()), text: p.question_content });
    }
    for (table, id, text) in [("text_corpus.parquet", "text_id", "text"), ("code_corpus.parquet", "code_id", "code")] {
        stages::tables::corpus::for_each_row(&dir.join(table), &[id, text], |_, mut v| {
            let text = v.remove(1);
            docs.push(ReleaseDoc { release: release.clone(), doc: v.remove(0), text });
        })?;
    }
    Ok(docs)
}

/// One flagged field of a corpus item.
#[derive(Debug, Clone, Serialize)]
pub struct OverlapHit {
    /// The item id.
    pub id: String,
    /// The field.
    pub field: String,
    /// `hash` or `ngram`.
    pub kind: &'static str,
    /// The release document matched.
    pub doc: String,
    /// Fraction of the field's n-grams in that document (1.0 for a hash hit).
    pub overlap: f64,
    /// N-grams matched / n-grams of the field.
    pub matched: usize,
    /// N-grams of the field.
    pub total: usize,
}

/// The overlap audit.
#[derive(Debug, Clone, Serialize)]
pub struct OverlapReport {
    /// The release.
    pub release: String,
    /// The corpus.
    pub corpus: String,
    /// Words per n-gram.
    pub ngram: usize,
    /// Flag threshold.
    pub min_overlap: f64,
    /// Items read.
    pub items: usize,
    /// Items with a hash hit.
    pub hash_hits: usize,
    /// Items flagged by n-gram overlap only.
    pub ngram_hits: usize,
    /// Items with any n-gram shared, by overlap decile (`0.0-0.1` … `0.9-1.0`).
    pub histogram: BTreeMap<String, usize>,
    /// Every flagged item (its worst field), worst first.
    pub flagged: Vec<OverlapHit>,
    /// The worst `top` items, flagged or not, worst first.
    pub worst: Vec<OverlapHit>,
}

fn overlap(release: &Path, a: &OverlapArgs) -> anyhow::Result<OverlapReport> {
    let OverlapArgs { corpus, fields, id_field, ngram, min_overlap, top } = a;
    if *ngram == 0 || !(*min_overlap > 0.0 && *min_overlap <= 1.0) {
        bail!("`--ngram` must be at least 1 and `--min-overlap` in (0, 1]");
    }
    let index = ReleaseIndex::build(*ngram, release_docs(release)?);
    let mut items: Vec<(String, Vec<String>)> = Vec::new();
    let is_parquet = corpus.extension().is_some_and(|e| e == "parquet");
    if is_parquet {
        let mut cols: Vec<&str> = fields.iter().map(String::as_str).collect();
        if let Some(id) = id_field {
            cols.push(id);
        }
        stages::tables::corpus::for_each_row(corpus, &cols, |row, mut v| {
            let id = if id_field.is_some() { v.pop().unwrap_or_default() } else { row.to_string() };
            items.push((id, v));
        })?;
    } else {
        for_each_json(corpus, |line, obj| {
            let get = |name: &str| -> anyhow::Result<String> {
                match obj.get(name) {
                    Some(serde_json::Value::String(s)) => Ok(s.clone()),
                    Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
                    _ => bail!("`{}`:{line}: field `{name}` is missing or not a string", corpus.display()),
                }
            };
            let id = match id_field {
                Some(f) => get(f)?,
                None => (line - 1).to_string(),
            };
            items.push((id, fields.iter().map(|f| get(f)).collect::<anyhow::Result<_>>()?));
            Ok(())
        })
        .with_context(|| format!("reading corpus `{}`", corpus.display()))?;
    }
    let mut worst_per_item = Vec::new();
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    let (mut hash_hits, mut ngram_hits) = (0, 0);
    let mut flagged = Vec::new();
    for (id, values) in &items {
        let mut best: Option<OverlapHit> = None;
        for (field, text) in fields.iter().zip(values) {
            let o = index.overlap(text);
            let hit = match (o.hash_hit, o.best_doc) {
                (Some(d), _) => Some(OverlapHit { id: id.clone(), field: field.clone(), kind: "hash", doc: index.docs()[d].doc.clone(), overlap: 1.0, matched: o.total, total: o.total }),
                (None, Some(d)) => Some(OverlapHit { id: id.clone(), field: field.clone(), kind: "ngram", doc: index.docs()[d].doc.clone(), overlap: o.fraction(), matched: o.matched, total: o.total }),
                (None, None) => None,
            };
            if let Some(h) = hit {
                let better = best.as_ref().is_none_or(|b| (h.kind == "hash" && b.kind != "hash") || (h.kind == b.kind && h.overlap > b.overlap));
                if better {
                    best = Some(h);
                }
            }
        }
        if let Some(b) = best {
            let decile = ((b.overlap * 10.0).floor() as usize).min(9);
            *histogram.entry(format!("{:.1}-{:.1}", decile as f64 / 10.0, (decile + 1) as f64 / 10.0)).or_default() += 1;
            if b.kind == "hash" {
                hash_hits += 1;
                flagged.push(b.clone());
            } else if b.overlap >= *min_overlap {
                ngram_hits += 1;
                flagged.push(b.clone());
            }
            worst_per_item.push(b);
        }
    }
    let order = |a: &OverlapHit, b: &OverlapHit| (b.kind == "hash").cmp(&(a.kind == "hash")).then(b.overlap.total_cmp(&a.overlap)).then(a.id.cmp(&b.id));
    flagged.sort_by(order);
    worst_per_item.sort_by(order);
    worst_per_item.truncate(*top);
    Ok(OverlapReport {
        release: release_name(release),
        corpus: corpus.display().to_string(),
        ngram: *ngram,
        min_overlap: *min_overlap,
        items: items.len(),
        hash_hits,
        ngram_hits,
        histogram,
        flagged,
        worst: worst_per_item,
    })
}

fn overlap_markdown(r: &OverlapReport) -> String {
    let mut md = format!(
        "# Overlap audit: `{}` against `{}`\n\n{} items; {} exact hash hits; {} more with ≥ {:.0}% of their {}-grams in one release document.\n\n## Worst offenders\n\n| item | field | kind | release doc | overlap | n-grams |\n|---|---|---|---|---:|---:|\n",
        r.corpus, r.release, r.items, r.hash_hits, r.ngram_hits, r.min_overlap * 100.0, r.ngram
    );
    for h in &r.worst {
        md.push_str(&format!("| `{}` | {} | {} | `{}` | {:.3} | {}/{} |\n", h.id, h.field, h.kind, h.doc, h.overlap, h.matched, h.total));
    }
    md
}

/// One rewritten statement against its source.
#[derive(Debug, Clone, Serialize)]
pub struct RewriteDistance {
    /// The problem.
    pub problem_id: String,
    /// Its contest month (`YYYY-MM`).
    pub month: String,
    /// Fraction of the rewrite's n-grams found in the source statement.
    pub containment: f64,
    /// Jaccard of the two n-gram sets.
    pub ngram_jaccard: f64,
    /// Jaccard of the two word sets.
    pub word_jaccard: f64,
    /// Words of the source and of the rewrite.
    pub words: (usize, usize),
}

/// The rewrite audit.
#[derive(Debug, Clone, Serialize)]
pub struct RewriteReport {
    /// The release.
    pub release: String,
    /// Words per n-gram.
    pub ngram: usize,
    /// What was measured: text distance only.
    pub tests_kept: &'static str,
    /// Problems with a rewritten `full` text.
    pub problems: usize,
    /// Mean containment.
    pub mean_containment: f64,
    /// Largest containment (the rewrite that moved least).
    pub max_containment: f64,
    /// Mean n-gram Jaccard.
    pub mean_ngram_jaccard: f64,
    /// Per problem, least moved first.
    pub distances: Vec<RewriteDistance>,
    /// Problems of `problems.parquet` without a `full` text.
    pub missing: Vec<String>,
}

fn set_jaccard(a: &BTreeSet<u64>, b: &BTreeSet<u64>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 { 1.0 } else { inter as f64 / union as f64 }
}

fn rewrite(release: &Path, a: &RewriteArgs) -> anyhow::Result<RewriteReport> {
    let RewriteArgs { ngram } = a;
    if *ngram == 0 {
        bail!("`--ngram` must be at least 1");
    }
    let mut full: BTreeMap<String, String> = BTreeMap::new();
    stages::tables::corpus::for_each_row(&release.join("text_corpus.parquet"), &["problem_id", "kind", "text"], |_, v| {
        if v[1] == "full" {
            full.entry(v[0].clone()).or_insert_with(|| v[2].clone());
        }
    })?;
    let mut distances = Vec::new();
    let mut missing = Vec::new();
    for p in ProblemReader::open(&release.join("problems.parquet"))? {
        let p = p?;
        let Some(rewritten) = full.get(p.id.as_str()) else {
            missing.push(p.id.as_str().to_owned());
            continue;
        };
        let orig: BTreeSet<u64> = ngram_hashes(&p.question_content, *ngram).into_iter().collect();
        let new: BTreeSet<u64> = ngram_hashes(rewritten, *ngram).into_iter().collect();
        let ow: BTreeSet<String> = words(&p.question_content).into_iter().collect();
        let nw: BTreeSet<String> = words(rewritten).into_iter().collect();
        let winter = ow.intersection(&nw).count();
        let wunion = ow.len() + nw.len() - winter;
        distances.push(RewriteDistance {
            problem_id: p.id.as_str().to_owned(),
            month: p.contest_date.chars().take(7).collect(),
            containment: if new.is_empty() { 0.0 } else { new.intersection(&orig).count() as f64 / new.len() as f64 },
            ngram_jaccard: set_jaccard(&orig, &new),
            word_jaccard: if wunion == 0 { 1.0 } else { winter as f64 / wunion as f64 },
            words: (words(&p.question_content).len(), words(rewritten).len()),
        });
    }
    distances.sort_by(|a, b| b.containment.total_cmp(&a.containment).then(a.problem_id.cmp(&b.problem_id)));
    let n = distances.len().max(1) as f64;
    Ok(RewriteReport {
        release: release_name(release),
        ngram: *ngram,
        tests_kept: "not audited: a release holds the source problems' tests only; rewritten tests live in the build's artifact store",
        problems: distances.len(),
        mean_containment: distances.iter().map(|d| d.containment).sum::<f64>() / n,
        max_containment: distances.iter().map(|d| d.containment).fold(0.0, f64::max),
        mean_ngram_jaccard: distances.iter().map(|d| d.ngram_jaccard).sum::<f64>() / n,
        distances,
        missing,
    })
}

fn rewrite_markdown(r: &RewriteReport) -> String {
    let mut md = format!(
        "# Rewrite audit: `{}`\n\n{} rewritten statements; mean {}-gram containment in the source {:.3} (max {:.3}); mean {}-gram Jaccard {:.3}.\nTests kept: {}.\n\n| problem | month | containment | n-gram Jaccard | word Jaccard | words (source → rewrite) |\n|---|---|---:|---:|---:|---|\n",
        r.release, r.problems, r.ngram, r.mean_containment, r.max_containment, r.ngram, r.mean_ngram_jaccard, r.tests_kept
    );
    for d in &r.distances {
        md.push_str(&format!("| `{}` | {} | {:.3} | {:.3} | {:.3} | {} → {} |\n", d.problem_id, d.month, d.containment, d.ngram_jaccard, d.word_jaccard, d.words.0, d.words.1));
    }
    if !r.missing.is_empty() {
        md.push_str(&format!("\nNo `full` text for: {}\n", r.missing.join(", ")));
    }
    md
}
