//! `coreb review report`: reviewers' answer files merged into one report.
//!
//! Every line must be of the release reviewed (its `MANIFEST.json` digest; after the card was
//! re-published, the digest the recorded review was made on) and of one draw, which must be
//! the release's own draw for that seed and size; an error names the file and line. Per
//! question: the share of "yes" among the answers with its 95 % Wilson interval; agreement
//! (Cohen's κ for two reviewers over the problems both answered, Fleiss' κ for three or more
//! over the problems all answered, Krippendorff's α (nominal) over every answer, missing ones
//! allowed); the problems where reviewers' answers differ. Written as `review.json` and
//! `review.md`; with `record`, the release card gains its "Human validation" section and the
//! MANIFEST the card's new checksum (the data files are not touched). The report names the
//! digest of the data reviewed (`data_sha256`): a rebuild publishes the section on its card
//! when its data are those, whatever toolchain versions its MANIFEST records.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_base::durable;
use coreb_base::hashing::{sha256_file, sha256_hex};
use coreb_data::releases::{FileEntry, ReleaseManifest};
use coreb_eval::gates::{ReviewFigures, review_path};
use serde::Serialize;

use super::page::{draw_of, release_digest};
use super::stats::{Share, cohen_kappa, fleiss_kappa, krippendorff_alpha, wilson};
use super::{ANSWER_FORMAT, ANSWERS, AnswerLine, Draw, QUESTIONS};

/// The format tag of `review.json`.
const REPORT_FORMAT: &str = "coreb-review-report/1";

/// One question's figures.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct QuestionFigures {
    /// The key.
    pub(crate) key: &'static str,
    /// The question.
    pub(crate) question: &'static str,
    /// Answers given, by answer.
    pub(crate) counts: BTreeMap<&'static str, usize>,
    /// Problems with at least one answer.
    pub(crate) reviewed: usize,
    /// Share of "yes" among the answers, with its 95 % Wilson interval.
    pub(crate) yes: Option<Share>,
    /// Cohen's κ (two reviewers).
    pub(crate) cohen_kappa: Option<f64>,
    /// Problems both reviewers answered (two reviewers).
    cohen_items: usize,
    /// Fleiss' κ (three or more reviewers).
    pub(crate) fleiss_kappa: Option<f64>,
    /// Problems every reviewer answered (three or more reviewers).
    fleiss_items: usize,
    /// Krippendorff's α, nominal, missing answers allowed.
    pub(crate) krippendorff_alpha: Option<f64>,
}

/// A problem the reviewers answered differently.
#[derive(Debug, Clone, Serialize)]
struct Disagreement {
    /// The problem.
    pub(crate) problem_id: String,
    /// The question.
    pub(crate) question: &'static str,
    /// Each reviewer's answer.
    pub(crate) answers: BTreeMap<String, String>,
}

/// A reviewer's note.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Note {
    /// The problem.
    pub(crate) problem_id: String,
    /// The question.
    pub(crate) question: &'static str,
    /// Who wrote it.
    pub(crate) reviewer: String,
    /// The note.
    pub(crate) note: String,
}

/// The review report (`review.json`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ReviewReport {
    /// [`REPORT_FORMAT`].
    pub(crate) format: &'static str,
    /// The release version.
    pub(crate) release: String,
    /// sha256 of its `MANIFEST.json` as reviewed.
    pub(crate) release_sha256: String,
    /// The digest of its data as reviewed ([`ReleaseManifest::data_sha256`]): what a recorded
    /// review is pinned to, so that a rebuild of the same data on another machine (other
    /// toolchain versions, another MANIFEST) shows it on its card too.
    pub(crate) data_sha256: String,
    /// sha256 of its `MANIFEST.json` after the card was re-published (with `record`).
    published_sha256: Option<String>,
    /// The draw.
    pub(crate) draw: Draw,
    /// The problems drawn.
    pub(crate) problems: Vec<String>,
    /// The reviewers, sorted.
    pub(crate) reviewers: Vec<String>,
    /// The answer files' names, in the order given.
    pub(crate) files: Vec<String>,
    /// Per question.
    pub(crate) questions: Vec<QuestionFigures>,
    /// Where reviewers differ.
    disagreements: Vec<Disagreement>,
    /// The reviewers' notes.
    pub(crate) notes: Vec<Note>,
    /// What the `[gates] review` gate reads.
    pub(crate) figures: ReviewFigures,
}

/// What `report` wrote.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    /// The report.
    pub(crate) report: ReviewReport,
    /// The directory of `review.json` and `review.md`.
    pub(crate) out: PathBuf,
    /// Whether the card was re-published.
    pub(crate) recorded: bool,
}

/// The default place of the report: where the review gate looks,
/// `<release>/../reviews/<version>/`.
fn default_out(release: &Path, version: &str) -> PathBuf {
    review_path(release, version).parent().map(Path::to_owned).unwrap_or_default()
}

/// (reviewer, problem, question).
type AnswerKey = (String, String, &'static str);
/// (answer category, note, `file:line` where it was given).
type Given = (Option<usize>, String, String);

struct Loaded {
    // The first line's draw, where it is, and the digest it was given on.
    draw: Option<(Draw, String, String)>,
    // (reviewer, problem, question) → (answer, note, where).
    answers: BTreeMap<AnswerKey, Given>,
}

fn read_file(
    path: &Path,
    version: &str,
    accepted: &BTreeSet<String>,
    current: &str,
    loaded: &mut Loaded,
) -> anyhow::Result<()> {
    let mut lines = 0;
    for line in coreb_base::jsonl::lines(path)? {
        let line = line?;
        let at = line.at(path);
        let a: AnswerLine = serde_json::from_str(&line.text)
            .with_context(|| format!("{at}: not an answer line"))?;
        if a.format != ANSWER_FORMAT {
            bail!("{at}: `format` is `{}`, not `{ANSWER_FORMAT}`", a.format);
        }
        if a.release != version || !accepted.contains(&a.release_sha256) {
            bail!(
                "{at}: an answer about another release: `{}` with MANIFEST sha256 `{}`, but the release reviewed is `{version}` with MANIFEST sha256 `{current}`",
                a.release,
                a.release_sha256
            );
        }
        match &loaded.draw {
            None => loaded.draw = Some((a.draw.clone(), at.clone(), a.release_sha256.clone())),
            Some((d, first, _)) if *d != a.draw => bail!(
                "{at}: another draw (seed {}, N = {}, ids sha256 `{}`) than {first} (seed {}, N = {}, ids sha256 `{}`)",
                a.draw.seed,
                a.draw.sample,
                a.draw.ids_sha256,
                d.seed,
                d.sample,
                d.ids_sha256
            ),
            Some(_) => {}
        }
        let reviewer = a.reviewer.trim().to_owned();
        if reviewer.is_empty() {
            bail!("{at}: `reviewer` is empty");
        }
        let Some(&(question, _)) = QUESTIONS.iter().find(|(k, _)| *k == a.question) else {
            bail!(
                "{at}: unknown question `{}` (the questions: {})",
                a.question,
                QUESTIONS.map(|q| q.0).join(", ")
            );
        };
        let answer = match a.answer.as_deref() {
            None => None,
            Some(s) => Some(ANSWERS.iter().position(|x| *x == s).with_context(|| {
                format!("{at}: answer `{s}` is not one of {}", ANSWERS.join(", "))
            })?),
        };
        let key = (reviewer, a.problem_id, question);
        if let Some((_, _, before)) = loaded.answers.get(&key) {
            bail!("{at}: `{}` answered `{question}` of `{}` already, at {before}", key.0, key.1);
        }
        loaded.answers.insert(key, (answer, a.note, at));
        lines += 1;
    }
    if lines == 0 {
        bail!("`{}`: no answers", path.display());
    }
    Ok(())
}

/// Merge `files` into the report of `release`, write `review.json` and `review.md` into `out`
/// (default [`default_out`]); with `record`, re-publish the release card with the review.
pub(crate) fn report(
    release: &Path,
    files: &[PathBuf],
    out: Option<&Path>,
    record: bool,
) -> anyhow::Result<Written> {
    coreb_curation::audit::check_release(release)?;
    if files.is_empty() {
        bail!("no answer file given");
    }
    let (version, current) = release_digest(release)?;
    let data = ReleaseManifest::read(&release.join("MANIFEST.json"))?.data_sha256();
    let recorded_at = default_out(release, &version);
    let out = out.map_or_else(|| recorded_at.clone(), Path::to_owned);
    // A review recorded before re-published the card, or was of the same data (a build of
    // them on another machine): its answers stay of this release, whether the report is
    // written where it was recorded or elsewhere (`--out`).
    let mut accepted = BTreeSet::from([current.clone()]);
    for dir in [&recorded_at, &out] {
        let recorded = dir.join("review.json");
        if !recorded.exists() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&fs_err::read_to_string(&recorded)?)
            .with_context(|| format!("`{}`", recorded.display()))?;
        if (v["published_sha256"].as_str() == Some(current.as_str())
            || v["data_sha256"].as_str() == Some(data.as_str()))
            && let Some(reviewed) = v["release_sha256"].as_str()
        {
            accepted.insert(reviewed.to_owned());
        }
        // The recorded review is an input of every rebuild: only `--record` replaces it.
        if dir == &out && !record && v["published_sha256"].is_string() {
            coreb_base::usage!(
                "`{}` is the review recorded in the release's card: a report without `--record` would replace it. Write it elsewhere (`--out DIR`), or record it again (`--record`)",
                recorded.display()
            );
        }
    }
    let mut loaded = Loaded { draw: None, answers: BTreeMap::new() };
    for f in files {
        read_file(f, &version, &accepted, &current, &mut loaded)?;
    }
    let (draw, first, reviewed) = loaded.draw.clone().context("no answers")?;
    let (expected, ids) = draw_of(release, draw.sample, draw.seed)?;
    if expected != draw {
        bail!(
            "{first}: the draw (seed {}, N = {}) of `{}` has ids sha256 `{}`, the file says `{}`",
            draw.seed,
            draw.sample,
            version,
            expected.ids_sha256,
            draw.ids_sha256
        );
    }
    let id_set: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    if let Some(((_, p, _), (_, _, at))) =
        loaded.answers.iter().find(|((_, p, _), _)| !id_set.contains(p.as_str()))
    {
        bail!("{at}: problem `{p}` is not in the draw");
    }
    let reviewers: Vec<String> =
        loaded.answers.keys().map(|k| k.0.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut report = compute(&version, &reviewed, draw, ids, reviewers, &loaded);
    report.data_sha256 = data;
    report.files = files
        .iter()
        .map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
        .collect();

    fs_err::create_dir_all(&out)?;
    let card_update = if record { Some(card_update(release, &report)?) } else { None };
    report.published_sha256 = card_update.as_ref().map(|(_, m)| sha256_hex(m.as_bytes()));
    let json = serde_json::to_string_pretty(&report)? + "\n";
    durable::write(&out.join("review.json"), json.as_bytes())?;
    durable::write(&out.join("review.md"), markdown(&report).as_bytes())?;
    if let Some((card, manifest)) = card_update {
        // The section beside the report: the `release` stage puts it into the card of every
        // rebuild of this release, so that a rebuild publishes the same card.
        durable::write(&out.join(CARD_SECTION), card_section(&report).as_bytes())?;
        durable::write(&release.join("README.md"), card.as_bytes())?;
        durable::write(&release.join("MANIFEST.json"), manifest.as_bytes())?;
    }
    Ok(Written { report, out, recorded: record })
}

fn compute(
    version: &str,
    reviewed: &str,
    draw: Draw,
    ids: Vec<String>,
    reviewers: Vec<String>,
    loaded: &Loaded,
) -> ReviewReport {
    let mut questions = Vec::new();
    let mut disagreements = Vec::new();
    let mut notes = Vec::new();
    for (key, question) in QUESTIONS {
        let units: Vec<Vec<Option<usize>>> = ids
            .iter()
            .map(|id| {
                reviewers
                    .iter()
                    .map(|r| loaded.answers.get(&(r.clone(), id.clone(), key)).and_then(|a| a.0))
                    .collect()
            })
            .collect();
        let mut counts: BTreeMap<&'static str, usize> = ANSWERS.iter().map(|a| (*a, 0)).collect();
        for v in units.iter().flatten().flatten() {
            *counts.get_mut(ANSWERS[*v]).expect("a category") += 1;
        }
        let answered: usize = counts.values().sum();
        let reviewed = units.iter().filter(|u| u.iter().any(Option::is_some)).count();
        let (mut cohen, mut cohen_items, mut fleiss, mut fleiss_items) = (None, 0, None, 0);
        if reviewers.len() == 2 {
            let pairs: Vec<(usize, usize)> =
                units.iter().filter_map(|u| Some((u[0]?, u[1]?))).collect();
            cohen_items = pairs.len();
            cohen = cohen_kappa(&pairs, ANSWERS.len());
        } else if reviewers.len() >= 3 {
            let table: Vec<Vec<usize>> = units
                .iter()
                .filter(|u| u.iter().all(Option::is_some))
                .map(|u| {
                    (0..ANSWERS.len())
                        .map(|c| u.iter().filter(|v| **v == Some(c)).count())
                        .collect()
                })
                .collect();
            fleiss_items = table.len();
            fleiss = fleiss_kappa(&table);
        }
        for (id, u) in ids.iter().zip(&units) {
            let given: BTreeSet<usize> = u.iter().flatten().copied().collect();
            if given.len() > 1 {
                let answers = reviewers
                    .iter()
                    .zip(u)
                    .filter_map(|(r, v)| Some((r.clone(), ANSWERS[(*v)?].to_owned())))
                    .collect();
                disagreements.push(Disagreement { problem_id: id.clone(), question: key, answers });
            }
            for r in &reviewers {
                if let Some((_, note, _)) = loaded.answers.get(&(r.clone(), id.clone(), key))
                    && !note.trim().is_empty()
                {
                    notes.push(Note {
                        problem_id: id.clone(),
                        question: key,
                        reviewer: r.clone(),
                        note: note.clone(),
                    });
                }
            }
        }
        questions.push(QuestionFigures {
            key,
            question,
            yes: wilson(counts["yes"], answered),
            counts,
            reviewed,
            cohen_kappa: cohen,
            cohen_items,
            fleiss_kappa: fleiss,
            fleiss_items,
            krippendorff_alpha: krippendorff_alpha(&units, ANSWERS.len()),
        });
    }
    disagreements.sort_by(|a, b| {
        a.problem_id.cmp(&b.problem_id).then(
            QUESTIONS
                .iter()
                .position(|q| q.0 == a.question)
                .cmp(&QUESTIONS.iter().position(|q| q.0 == b.question)),
        )
    });
    let intent = &questions[0];
    let figures = ReviewFigures {
        release: version.to_owned(),
        reviewed: intent.reviewed,
        intent_yes: intent.counts["yes"],
        intent_answers: intent.counts.values().sum(),
    };
    ReviewReport {
        format: REPORT_FORMAT,
        release: version.to_owned(),
        release_sha256: reviewed.to_owned(),
        data_sha256: String::new(),
        published_sha256: None,
        draw,
        problems: ids,
        reviewers,
        files: Vec::new(),
        questions,
        disagreements,
        notes,
        figures,
    }
}

fn num(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_owned(), |v| format!("{v:.3}"))
}

fn share(s: Option<Share>) -> String {
    s.map_or_else(
        || "—".to_owned(),
        |s| format!("{:.3} [{:.3}, {:.3}] ({} of {})", s.share, s.low, s.high, s.yes, s.of),
    )
}

/// The figures table, shared by `review.md` and the card.
fn table(r: &ReviewReport) -> String {
    let mut s = String::from(
        "| question | problems | yes (95 % Wilson) | Cohen's κ | Fleiss' κ | Krippendorff's α |\n|---|---:|---|---:|---:|---:|\n",
    );
    for q in &r.questions {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            q.question,
            q.reviewed,
            share(q.yes),
            num(q.cohen_kappa),
            num(q.fleiss_kappa),
            num(q.krippendorff_alpha)
        ));
    }
    s
}

fn intro(r: &ReviewReport) -> String {
    format!(
        "{} reviewer(s) ({}) answered fixed questions on {} problems drawn from `{}` (seed {}, N = {}, stratified by platform and difficulty; ids sha256 `{}`), reviewing the release whose MANIFEST sha256 is `{}`.\n",
        r.reviewers.len(),
        r.reviewers.join(", "),
        r.problems.len(),
        r.release,
        r.draw.seed,
        r.draw.sample,
        r.draw.ids_sha256,
        r.release_sha256
    )
}

/// `review.md`.
pub(crate) fn markdown(r: &ReviewReport) -> String {
    let mut s = format!("# Human review of {}\n\n{}\n{}", r.release, intro(r), table(r));
    s.push_str(&format!("\n## Disagreements ({})\n\n", r.disagreements.len()));
    if r.disagreements.is_empty() {
        s.push_str("None.\n");
    }
    for d in &r.disagreements {
        let answers: Vec<String> = d.answers.iter().map(|(who, a)| format!("{who}: {a}")).collect();
        s.push_str(&format!("- `{}` {}: {}\n", d.problem_id, d.question, answers.join(", ")));
    }
    if !r.notes.is_empty() {
        s.push_str("\n## Notes\n\n");
        for n in &r.notes {
            s.push_str(&format!(
                "- `{}` {} ({}): {}\n",
                n.problem_id,
                n.question,
                n.reviewer,
                n.note.replace('\n', " ")
            ));
        }
    }
    s
}

/// The file beside `review.json` holding the card's section of a recorded review (written by
/// `record`; read by the `release` stage of a rebuild).
pub(crate) const CARD_SECTION: &str = "card.md";

/// The card's section.
pub(crate) fn card_section(r: &ReviewReport) -> String {
    format!(
        "{}\n\n{}\n{}\nReviewers disagree on {} (problem, question) pairs; the full report, with them and the reviewers' notes, is `review.json`/`review.md` of `coreb review report`.\n",
        coreb_data::releases::HUMAN_VALIDATION,
        intro(r),
        table(r),
        r.disagreements.len()
    )
}

/// The card with the review and the MANIFEST with the card's new entry, as text.
fn card_update(release: &Path, r: &ReviewReport) -> anyhow::Result<(String, String)> {
    let manifest_path = release.join("MANIFEST.json");
    let before = fs_err::read_to_string(&manifest_path)?;
    let mut manifest = ReleaseManifest::read(&manifest_path)?;
    if serde_json::to_string_pretty(&manifest)? + "\n" != before {
        bail!(
            "`{}` is not as `coreb build` writes it; refusing to re-publish its card",
            manifest_path.display()
        );
    }
    let card_path = release.join("README.md");
    let card = fs_err::read_to_string(&card_path)?;
    match manifest.files.get("README.md") {
        Some(e) if e.sha256 == sha256_file(&card_path)? => {}
        _ => bail!(
            "`{}` does not match its entry in `{}`; refusing to re-publish it",
            card_path.display(),
            manifest_path.display()
        ),
    }
    let card = coreb_data::releases::with_human_validation(&card, &card_section(r));
    manifest.files.insert(
        "README.md".into(),
        FileEntry { sha256: sha256_hex(card.as_bytes()), bytes: card.len() as u64 },
    );
    Ok((card, serde_json::to_string_pretty(&manifest)? + "\n"))
}
