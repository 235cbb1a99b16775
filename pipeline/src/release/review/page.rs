//! The review page: one HTML file, its style, script and data inline, that opens from
//! `file://` with no server and no network.
//!
//! The data (statements, tests, code: written by LLMs and contest sites) goes in as JSON
//! inside `<script type="application/json">`, with `<`, `>` and `&` written `\u003c`,
//! `\u003e`, `\u0026`, so that no text can close the element; the script renders it with
//! `textContent` only, never as markup. Per problem: the original and rewritten title and
//! statement with the changed words marked ([`super::diff`]), the original and rewritten tests
//! with how each was carried over and the reference solution's check of it (`execute`'s
//! `test_checks`), the reference solution, the four distractors and the summary; then the
//! fixed questions ([`super::QUESTIONS`]). Answers are kept in the browser's `localStorage`
//! (keyed by the release digest and the draw) and exported as JSONL ([`super::AnswerLine`])
//! through a Blob link. The same release and draw give the same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use coreb_base::durable;
use coreb_base::hashing::{sha256_file, sha256_hex};
use coreb_data::problem::{Problem, TestCase};
use coreb_data::rewritten::RewrittenProblem;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::test_checks::read_test_checks;
use coreb_data::texts::Distractor;
use coreb_data::texts::Summary;
use serde::Serialize;

use super::diff::{Segment, word_diff};
use super::sample::{Candidate, draw};
use super::{ANSWER_FORMAT, ANSWERS, Draw, QUESTIONS, ReleaseBuild};

/// Longest test input or output shown, in characters (the rest is counted, not shown).
const MAX_TEST_CHARS: usize = 4000;

/// What was written.
#[derive(Debug, Clone)]
pub(crate) struct PageSummary {
    /// The release version.
    pub(crate) release: String,
    /// sha256 of its `MANIFEST.json`.
    pub(crate) release_sha256: String,
    /// The drawn ids.
    pub(crate) ids: Vec<String>,
    /// The page.
    pub(crate) path: std::path::PathBuf,
}

#[derive(Serialize)]
struct PageData<'a> {
    format: &'static str,
    release: &'a str,
    release_sha256: &'a str,
    draw: &'a Draw,
    ids: &'a [String],
    questions: Vec<[&'static str; 2]>,
    answers: [&'static str; 3],
    problems: Vec<ProblemView>,
}

#[derive(Serialize)]
struct ProblemView {
    id: String,
    platform: String,
    difficulty: String,
    title_diff: Vec<Segment>,
    statement_diff: Vec<Segment>,
    tests: Vec<TestView>,
    reference: Option<coreb_data::rewritten::Reference>,
    distractors: Vec<[String; 2]>,
    summary: Option<String>,
}

#[derive(Serialize)]
struct TestView {
    index: usize,
    public: bool,
    origin: Option<&'static str>,
    changed: bool,
    original: Option<[String; 2]>,
    rewritten: Option<[String; 2]>,
    check: Option<[String; 2]>,
}

/// The draw of `release`: its problems (`problems.parquet`), `n` of them with `seed`.
pub(crate) fn draw_of(release: &Path, n: usize, seed: u64) -> anyhow::Result<(Draw, Vec<String>)> {
    let mut candidates = Vec::new();
    for p in ProblemReader::open_without_test_bodies(&release.join("problems.parquet"))? {
        let p = p?;
        candidates.push(Candidate {
            id: p.id.as_str().to_owned(),
            platform: p.platform.as_str().to_owned(),
            difficulty: p.difficulty.clone(),
        });
    }
    let ids = draw(&candidates, n, seed);
    let listing: String = ids.iter().map(|id| format!("{id}\n")).collect();
    Ok((Draw { seed, sample: n, ids_sha256: sha256_hex(listing.as_bytes()) }, ids))
}

/// The release's version and the sha256 of its `MANIFEST.json`.
pub(crate) fn release_digest(release: &Path) -> anyhow::Result<(String, String)> {
    let path = release.join("MANIFEST.json");
    let manifest = coreb_data::releases::ReleaseManifest::read(&path)?;
    Ok((
        manifest.version,
        sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?,
    ))
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_TEST_CHARS) {
        None => s.to_owned(),
        Some((at, _)) => format!("{}… ({} more characters)", &s[..at], s[at..].chars().count()),
    }
}

fn pair(t: &TestCase) -> [String; 2] {
    [clip(&t.input), clip(&t.output)]
}

fn tests_of(
    original: &Problem,
    rewritten: Option<&RewrittenProblem>,
    checks: &BTreeMap<u32, [String; 2]>,
) -> Vec<TestView> {
    let src: Vec<&TestCase> = original.public_tests.iter().chain(&original.private_tests).collect();
    let new: Vec<&TestCase> = rewritten
        .map(|r| r.public_tests.iter().chain(&r.private_tests).collect())
        .unwrap_or_default();
    let publics = rewritten.map_or(original.public_tests.len(), |r| r.public_tests.len());
    (0..src.len().max(new.len()))
        .map(|i| TestView {
            index: i,
            public: i < publics,
            origin: rewritten.and_then(|r| r.test_origins.get(i)).map(|o| o.as_str()),
            changed: src.get(i) != new.get(i),
            original: src.get(i).map(|t| pair(t)),
            rewritten: new.get(i).map(|t| pair(t)),
            check: u32::try_from(i).ok().and_then(|i| checks.get(&i)).cloned(),
        })
        .collect()
}

fn read_rows<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    Ok(coreb_base::jsonl::read(path)?)
}

/// Draw `n` problems of `release` with `seed` and write the review page, `out/index.html`.
pub(crate) fn write_page(
    release: &Path,
    build: &impl ReleaseBuild,
    n: usize,
    seed: u64,
    out: &Path,
) -> anyhow::Result<PageSummary> {
    if n == 0 {
        bail!("`--sample` must be at least 1");
    }
    coreb_curation::audit::check_release(release)?;
    let (version, release_sha256) = release_digest(release)?;
    let (draw, ids) = draw_of(release, n, seed)?;
    let wanted: std::collections::BTreeSet<&str> = ids.iter().map(String::as_str).collect();

    let mut originals: BTreeMap<String, Problem> = BTreeMap::new();
    for p in ProblemReader::open(&release.join("problems.parquet"))? {
        let p = p?;
        if wanted.contains(p.id.as_str()) {
            originals.insert(p.id.as_str().to_owned(), p);
        }
    }
    let rewritten: BTreeMap<String, RewrittenProblem> = build
        .rewritten()?
        .into_iter()
        .filter(|r| wanted.contains(r.id.as_str()))
        .map(|r| (r.id.as_str().to_owned(), r))
        .collect();
    let mut distractors: BTreeMap<String, Vec<[String; 2]>> = BTreeMap::new();
    for d in read_rows::<Distractor>(&build.artifact("distract", "distractors")?)? {
        if wanted.contains(d.problem_id.as_str()) {
            distractors
                .entry(d.problem_id.as_str().to_owned())
                .or_default()
                .push([d.kind.as_str().to_owned(), d.statement]);
        }
    }
    let summaries: BTreeMap<String, String> =
        read_rows::<Summary>(&build.artifact("abbreviate", "summaries")?)?
            .into_iter()
            .filter(|s| wanted.contains(s.problem_id.as_str()))
            .map(|s| (s.problem_id.as_str().to_owned(), s.text))
            .collect();
    let mut checks: BTreeMap<String, BTreeMap<u32, [String; 2]>> = BTreeMap::new();
    for c in read_test_checks(&build.artifact("execute", "test_checks")?)? {
        if wanted.contains(c.problem_id.as_str()) {
            checks
                .entry(c.problem_id.as_str().to_owned())
                .or_default()
                .insert(c.test_index, [c.outcome.as_str().to_owned(), c.reason]);
        }
    }

    let mut problems = Vec::with_capacity(ids.len());
    for id in &ids {
        let original = originals.get(id).with_context(|| {
            format!(
                "`{}`: problem `{id}` drawn but not read",
                release.join("problems.parquet").display()
            )
        })?;
        let Some(r) = rewritten.get(id) else {
            bail!(
                "problem `{id}` of the release is not in the build's rewrite artifact (`{}`): the build directory is not the one this release was made from; pass `--build-dir`",
                build.build_dir().join("artifacts/rewrite").display()
            );
        };
        problems.push(ProblemView {
            id: id.clone(),
            platform: original.platform.as_str().to_owned(),
            difficulty: original.difficulty.clone(),
            title_diff: word_diff(&original.question_title, &r.title),
            statement_diff: word_diff(&original.question_content, &r.statement),
            tests: tests_of(original, Some(r), checks.get(id).unwrap_or(&BTreeMap::new())),
            reference: r.reference.clone(),
            distractors: distractors.remove(id).unwrap_or_default(),
            summary: summaries.get(id).cloned(),
        });
    }
    let data = PageData {
        format: ANSWER_FORMAT,
        release: &version,
        release_sha256: &release_sha256,
        draw: &draw,
        ids: &ids,
        questions: QUESTIONS.iter().map(|(k, q)| [*k, *q]).collect(),
        answers: ANSWERS,
        problems,
    };
    let html = render(&data)?;
    fs_err::create_dir_all(out)?;
    let path = out.join("index.html");
    durable::write(&path, html.as_bytes())
        .with_context(|| format!("writing `{}`", path.display()))?;
    Ok(PageSummary { release: version, release_sha256, ids, path })
}

/// JSON safe inside a `<script>` element: `<`, `>` and `&` escaped.
fn script_json<T: Serialize>(value: &T) -> serde_json::Result<String> {
    Ok(serde_json::to_string(value)?
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026"))
}

fn render(data: &PageData<'_>) -> anyhow::Result<String> {
    let json = script_json(data)?;
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'none'; connect-src 'none'\">\n<title>CoREB review of {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<header id=\"top\"></header>\n<main id=\"problems\"></main>\n<script type=\"application/json\" id=\"review-data\">{json}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        data.release.replace(|c: char| !c.is_ascii_alphanumeric(), "")
    ))
}

const STYLE: &str = r#"body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #f6f6f4; }
header { position: sticky; top: 0; z-index: 2; background: #23395d; color: #fff; padding: 10px 18px; }
header h1 { font-size: 18px; margin: 0 0 4px; }
header .meta { font-size: 12px; opacity: .85; word-break: break-all; }
header label, header a, header span.progress { margin-right: 14px; }
header a { color: #ffd479; font-weight: 600; }
main { padding: 12px 18px; }
section.problem { background: #fff; border: 1px solid #d9d9d4; border-radius: 6px; margin: 0 0 18px; padding: 12px 16px; }
section.problem h2 { font-size: 16px; margin: 0 0 8px; }
h3 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #555; margin: 14px 0 6px; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.side { white-space: pre-wrap; border: 1px solid #e3e3de; border-radius: 4px; padding: 8px; background: #fcfcfb; overflow-wrap: anywhere; }
.side b { display: block; margin-bottom: 4px; }
.rm { background: #ffd6d6; text-decoration: line-through; }
.add { background: #c9f2c9; }
table { border-collapse: collapse; width: 100%; font-size: 12px; }
td, th { border: 1px solid #e0e0da; padding: 3px 6px; vertical-align: top; text-align: left; }
td pre, pre.code { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 14em; overflow: auto; font: 12px/1.35 ui-monospace, monospace; }
tr.changed td { background: #fff6dd; }
.outcome-rejected { color: #b00020; font-weight: 600; }
.outcome-passed { color: #0a7d32; }
ol.distractors li { white-space: pre-wrap; margin-bottom: 6px; }
fieldset.questions { border: 1px solid #c8cfe0; border-radius: 4px; background: #f3f6fc; }
.question { display: grid; grid-template-columns: 22em auto 1fr; gap: 8px; align-items: center; margin: 4px 0; }
.question input[type=text] { width: 100%; }
"#;

const SCRIPT: &str = r#"'use strict';
(function () {
  const data = JSON.parse(document.getElementById('review-data').textContent);
  const key = 'coreb-review:' + data.release_sha256 + ':' + data.draw.ids_sha256;
  let state = { reviewer: '', answers: {} };
  try { const saved = JSON.parse(localStorage.getItem(key) || 'null'); if (saved && typeof saved === 'object') state = saved; } catch (e) { /* a fresh start */ }
  if (!state.answers) state.answers = {};
  const save = () => { localStorage.setItem(key, JSON.stringify(state)); progress(); };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
    }
    for (const c of children) if (c) e.appendChild(c);
    return e;
  }
  const text = (s) => document.createTextNode(s == null ? '' : String(s));

  function diffSide(segments, keep) {
    const d = el('div', { class: 'side' });
    for (const s of segments) {
      if (s.op === '=') d.appendChild(text(s.text));
      else if (s.op === keep) d.appendChild(el('span', { class: keep === '-' ? 'rm' : 'add', text: s.text }));
    }
    return d;
  }
  function cell(pairOrNull, which) {
    return el('td', {}, el('pre', { text: pairOrNull ? pairOrNull[which] : '(none)' }));
  }

  const top = document.getElementById('top');
  const progressEl = el('span', { class: 'progress', id: 'progress' });
  const reviewer = el('input', { type: 'text', id: 'reviewer', placeholder: 'your name', autocomplete: 'off' });
  reviewer.value = state.reviewer || '';
  reviewer.addEventListener('input', () => { state.reviewer = reviewer.value; save(); });
  const exportLink = el('a', { id: 'export', href: '#' , text: 'Export answers (JSONL)' });
  top.append(
    el('h1', { text: 'CoREB review of ' + data.release }),
    el('div', { class: 'meta', id: 'meta', text: 'MANIFEST sha256 ' + data.release_sha256 + ' · draw: seed ' + data.draw.seed + ', N = ' + data.draw.sample + ', ' + data.ids.length + ' problems (ids sha256 ' + data.draw.ids_sha256 + '): ' + data.ids.join(', ') }),
    el('label', { text: 'Reviewer ' }, reviewer), progressEl, exportLink);

  function answerOf(pid, q) { return ((state.answers[pid] || {})[q]) || { answer: null, note: '' }; }
  function setAnswer(pid, q, field, value) {
    const p = state.answers[pid] || (state.answers[pid] = {});
    const a = p[q] || (p[q] = { answer: null, note: '' });
    a[field] = value;
    save();
  }

  const main = document.getElementById('problems');
  for (const p of data.problems) {
    const s = el('section', { class: 'problem', 'data-problem': p.id });
    s.appendChild(el('h2', { text: p.id + ' · ' + p.platform + ' · ' + p.difficulty }));
    s.appendChild(el('h3', { text: 'Statement: original (removed words struck) and rewrite (added words marked)' }));
    const orig = el('div', {}, el('b', {}, diffSide(p.title_diff, '-')), diffSide(p.statement_diff, '-'));
    const rew = el('div', {}, el('b', {}, diffSide(p.title_diff, '+')), diffSide(p.statement_diff, '+'));
    orig.classList.add('original'); rew.classList.add('rewritten');
    s.appendChild(el('div', { class: 'sides' }, orig, rew));

    s.appendChild(el('h3', { text: 'Tests (changed ones highlighted) and the reference solution\u2019s check' }));
    const table = el('table', { class: 'tests' });
    table.appendChild(el('tr', {}, ...['#', 'carried over', 'original input', 'original output', 'rewritten input', 'rewritten output', 'reference check'].map((h) => el('th', { text: h }))));
    for (const t of p.tests) {
      const check = t.check ? el('td', { class: 'outcome-' + t.check[0], text: t.check[0] + (t.check[1] ? ': ' + t.check[1] : '') }) : el('td', { text: t.changed ? 'not checked' : '\u2014' });
      const tr = el('tr', { class: t.changed ? 'changed' : 'same', 'data-index': String(t.index) },
        el('td', { text: String(t.index) + (t.public ? ' (public)' : '') }), el('td', { text: (t.origin || '?') + (t.changed ? ' \u00b7 changed' : '') }),
        cell(t.original, 0), cell(t.original, 1), cell(t.rewritten, 0), cell(t.rewritten, 1), check);
      table.appendChild(tr);
    }
    s.appendChild(table);

    if (p.reference) {
      s.appendChild(el('h3', { text: 'Reference solution, adapted to the rewrite (' + p.reference.model + ')' }));
      s.appendChild(el('pre', { class: 'code reference', text: p.reference.adapted }));
    }
    s.appendChild(el('h3', { text: 'Distractors' }));
    const ol = el('ol', { class: 'distractors' });
    for (const [kind, statement] of p.distractors) ol.appendChild(el('li', {}, el('b', { text: kind + ': ' }), text(statement)));
    if (!p.distractors.length) ol.appendChild(el('li', { text: '(none in the build)' }));
    s.appendChild(ol);
    s.appendChild(el('h3', { text: 'Summary' }));
    s.appendChild(el('div', { class: 'side summary', text: p.summary == null ? '(none in the build)' : p.summary }));

    const fs = el('fieldset', { class: 'questions' }, el('legend', { text: 'Your answers' }));
    for (const [q, question] of data.questions) {
      const row = el('div', { class: 'question' }, el('span', { text: question }));
      const choices = el('span', {});
      for (const a of data.answers) {
        const input = el('input', { type: 'radio', name: p.id + '\u0000' + q, value: a, 'data-problem': p.id, 'data-question': q });
        input.checked = answerOf(p.id, q).answer === a;
        input.addEventListener('change', () => setAnswer(p.id, q, 'answer', a));
        choices.appendChild(el('label', {}, input, text(' ' + a + ' ')));
      }
      const note = el('input', { type: 'text', class: 'note', placeholder: 'note', 'data-problem': p.id, 'data-question': q });
      note.value = answerOf(p.id, q).note || '';
      note.addEventListener('input', () => setAnswer(p.id, q, 'note', note.value));
      row.append(choices, note);
      fs.appendChild(row);
    }
    s.appendChild(fs);
    main.appendChild(s);
  }

  function exportText() {
    const lines = [];
    for (const id of data.ids) {
      for (const [q] of data.questions) {
        const a = answerOf(id, q);
        if (a.answer == null && !a.note) continue;
        lines.push(JSON.stringify({ format: data.format, release: data.release, release_sha256: data.release_sha256, draw: data.draw, reviewer: state.reviewer.trim(), problem_id: id, question: q, answer: a.answer, note: a.note || '' }));
      }
    }
    return lines.map((l) => l + '\n').join('');
  }
  function progress() {
    let done = 0;
    for (const id of data.ids) for (const [q] of data.questions) if (answerOf(id, q).answer != null) done++;
    progressEl.textContent = done + ' of ' + data.ids.length * data.questions.length + ' answered';
  }
  exportLink.addEventListener('click', (ev) => {
    if (!state.reviewer.trim()) { ev.preventDefault(); alert('Type your name first.'); reviewer.focus(); return; }
    const url = URL.createObjectURL(new Blob([exportText()], { type: 'application/x-ndjson' }));
    exportLink.href = url;
    exportLink.download = 'review-' + data.release + '-' + state.reviewer.trim().replace(/[^A-Za-z0-9_-]+/g, '_') + '.jsonl';
  });
  progress();
  window.corebReview = { exportText: exportText, storageKey: key };
  document.body.dataset.ready = 'true';
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_its_element() {
        let s = script_json(
            &serde_json::json!({"statement": "</script><img src=x onerror=alert(1)> & more"}),
        )
        .unwrap();
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'), "{s}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["statement"], "</script><img src=x onerror=alert(1)> & more");
    }

    #[test]
    fn long_tests_are_clipped_with_a_count() {
        let long = "x".repeat(MAX_TEST_CHARS + 5);
        assert_eq!(clip(&long), format!("{}… (5 more characters)", "x".repeat(MAX_TEST_CHARS)));
        assert_eq!(clip("short"), "short");
    }
}
