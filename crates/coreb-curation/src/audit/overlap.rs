//! The overlap audit: exact hash hits and long word n-gram overlap of a corpus against a
//! release's documents. Does NOT look at the build or run anything.

#[cfg(feature = "clap")]
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_data::releases::{release_docs, release_name};
use serde::Serialize;

use crate::ReleaseIndex;

/// What the overlap audit checks, and how (the flags of `coreb audit … overlap`).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(Args))]
pub struct OverlapOptions {
    /// The corpus: `.jsonl` or `.parquet`.
    pub corpus: PathBuf,
    /// Fields (columns) to check, comma-separated.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "text"))]
    pub fields: Vec<String>,
    /// The id field (default: the row number).
    #[cfg_attr(feature = "clap", arg(long))]
    pub id_field: Option<String>,
    /// Words per n-gram.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 13))]
    pub ngram: usize,
    /// Fraction of an item's n-grams found in one release document that flags it.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.3))]
    pub min_overlap: f64,
    /// Worst offenders listed.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 20))]
    pub top: usize,
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

/// Audit `options.corpus` against the documents of `release`.
pub fn overlap(release: &Path, options: &OverlapOptions) -> anyhow::Result<OverlapReport> {
    let OverlapOptions { corpus, fields, id_field, ngram, min_overlap, top } = options;
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
        coreb_data::tables::columns::for_each_row(corpus, &cols, |row, mut v| {
            let id = if id_field.is_some() { v.pop().unwrap_or_default() } else { row.to_string() };
            items.push((id, v));
        })?;
    } else {
        let mut read = || -> anyhow::Result<()> {
            for line in coreb_base::jsonl::lines(corpus)? {
                let line = line?;
                let obj: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(&line.text)
                        .with_context(|| format!("{}: not a JSON object", line.at(corpus)))?;
                let get = |name: &str| -> anyhow::Result<String> {
                    match obj.get(name) {
                        Some(serde_json::Value::String(s)) => Ok(s.clone()),
                        Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
                        _ => {
                            bail!("{}: field `{name}` is missing or not a string", line.at(corpus))
                        }
                    }
                };
                let id = match id_field {
                    Some(f) => get(f)?,
                    None => (line.number - 1).to_string(),
                };
                items.push((id, fields.iter().map(|f| get(f)).collect::<anyhow::Result<_>>()?));
            }
            Ok(())
        };
        read().with_context(|| format!("reading corpus `{}`", corpus.display()))?;
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
                (Some(d), _) => Some(OverlapHit {
                    id: id.clone(),
                    field: field.clone(),
                    kind: "hash",
                    doc: index.docs()[d].doc.clone(),
                    overlap: 1.0,
                    matched: o.total,
                    total: o.total,
                }),
                (None, Some(d)) => Some(OverlapHit {
                    id: id.clone(),
                    field: field.clone(),
                    kind: "ngram",
                    doc: index.docs()[d].doc.clone(),
                    overlap: o.fraction(),
                    matched: o.matched,
                    total: o.total,
                }),
                (None, None) => None,
            };
            if let Some(h) = hit {
                let better = best.as_ref().is_none_or(|b| {
                    (h.kind == "hash" && b.kind != "hash")
                        || (h.kind == b.kind && h.overlap > b.overlap)
                });
                if better {
                    best = Some(h);
                }
            }
        }
        if let Some(b) = best {
            let decile = ((b.overlap * 10.0).floor() as usize).min(9);
            *histogram
                .entry(format!("{:.1}-{:.1}", decile as f64 / 10.0, (decile + 1) as f64 / 10.0))
                .or_default() += 1;
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
    let order = |a: &OverlapHit, b: &OverlapHit| {
        (b.kind == "hash")
            .cmp(&(a.kind == "hash"))
            .then(b.overlap.total_cmp(&a.overlap))
            .then(a.id.cmp(&b.id))
    };
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

/// The report in Markdown.
pub fn markdown(r: &OverlapReport) -> String {
    let mut md = format!(
        "# Overlap audit: `{}` against `{}`\n\n{} items; {} exact hash hits; {} more with ≥ {:.0}% of their {}-grams in one release document.\n\n## Worst offenders\n\n| item | field | kind | release doc | overlap | n-grams |\n|---|---|---|---|---:|---:|\n",
        r.corpus,
        r.release,
        r.items,
        r.hash_hits,
        r.ngram_hits,
        r.min_overlap * 100.0,
        r.ngram
    );
    for h in &r.worst {
        md.push_str(&format!(
            "| `{}` | {} | {} | `{}` | {:.3} | {}/{} |\n",
            h.id, h.field, h.kind, h.doc, h.overlap, h.matched, h.total
        ));
    }
    md
}
