//! Listwise LLM reranking (RankGPT-style, as CoRNStack's code reranker): a chat model orders
//! a window of candidates at a time, answering with a permutation of their identifiers
//! (`[3] > [1] > [2]`); windows slide from the bottom of the top `depth` to the top.
//!
//! - **Windows** ([`windows`]): `[depth − window, depth)`, then `step` positions higher each
//!   time, the last one clamped to start at 0, so every position is in some window. (RankGPT's
//!   loop stops as soon as a window would start below 0, which leaves the top `depth − window`
//!   mod `step` positions unranked when that is not 0, e.g. depth 128, window 10, step 5: the
//!   top 3. coreb's last window covers them.) A query with fewer candidates than `depth` uses
//!   as many as it has.
//! - **Answers** ([`parse_permutation`]): an answer that is exactly `[a] > [b] > …` naming
//!   every identifier of the window once is taken as it is (`exact`). Anything else is
//!   repaired (`repaired`): the identifiers are the bracketed numbers in the order they appear
//!   (bare numbers when there are no brackets); identifiers outside the window and repeats are
//!   dropped, and those never named keep their current order after the named ones. An answer
//!   with no number at all leaves the window as it was (`unparseable`).
//! - Requests go through the LLM gateway ([`LlmGateway`]) and its response store, so a rerun
//!   sends nothing already answered and a replay-mode gateway reranks offline; the prompt's
//!   sha256 is in every request key. A window whose request fails (retries exhausted, rejected,
//!   cut) keeps its order and is counted as `failed`; a fatal gateway error stops the run.
//!
//! Does NOT evaluate or read files.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::beir::Dataset;
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{LlmStageError, ask, ordered};
use coreb_llm::{ChatRequest, LlmGateway, LlmStage, Origin, SamplingParams};
use coreb_trec::Run;

/// The built-in listwise prompt (`prompts/eval/listwise.toml`).
pub const BUILTIN_PROMPT: &str = include_str!("../../../prompts/eval/listwise.toml");

/// Listwise settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListwiseConfig {
    /// The chat model.
    pub model: String,
    /// Candidates per window.
    pub window: usize,
    /// How far each window moves up.
    pub step: usize,
    /// Candidates reranked per query (the top `depth` of the first stage).
    pub depth: usize,
    /// Words of each passage shown to the model (0: all).
    pub max_words: usize,
    /// Sampling parameters.
    pub sampling: SamplingParams,
    /// Queries reranked at once.
    pub concurrency: usize,
}

/// The windows over `n` candidates, `[start, end)`, in the order they are ranked.
pub fn windows(n: usize, window: usize, step: usize) -> Vec<(usize, usize)> {
    let (window, step) = (window.max(2), step.max(1));
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let mut end = n;
    loop {
        let start = end.saturating_sub(window);
        out.push((start, end));
        if start == 0 {
            break;
        }
        end -= step.min(end);
        if end == 0 {
            break;
        }
    }
    out
}

/// How an answer was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Parsed {
    /// Exactly a full permutation in `[a] > [b]` form.
    Exact,
    /// Malformed, incomplete, repeated or out-of-range identifiers, repaired.
    Repaired,
    /// No identifier at all: the window keeps its order.
    Unparseable,
}

static STRICT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\[\d+\](?:\s*>\s*\[\d+\])*\s*$").expect("valid regex"));
static BRACKETED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[(\d+)\]").expect("valid regex"));
static BARE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+").expect("valid regex"));

/// The order (0-based positions in the window) an answer gives to `n` candidates.
pub fn parse_permutation(answer: &str, n: usize) -> (Vec<usize>, Parsed) {
    let mut ids: Vec<usize> =
        BRACKETED.captures_iter(answer).filter_map(|c| c[1].parse().ok()).collect();
    if ids.is_empty() {
        ids = BARE.find_iter(answer).filter_map(|m| m.as_str().parse().ok()).collect();
    }
    if ids.is_empty() {
        return ((0..n).collect(), Parsed::Unparseable);
    }
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for id in &ids {
        if (1..=n).contains(id) && !seen[id - 1] {
            seen[id - 1] = true;
            order.push(id - 1);
        }
    }
    let exact = STRICT.is_match(answer) && ids.len() == n && order.len() == n;
    order.extend((0..n).filter(|i| !seen[*i]));
    (order, if exact { Parsed::Exact } else { Parsed::Repaired })
}

/// The first `max_words` whitespace-separated words of `text`, its own spacing kept.
pub fn truncate_words(text: &str, max_words: usize) -> &str {
    if max_words == 0 {
        return text;
    }
    let mut words = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                words += 1;
                if words == max_words {
                    return &text[..i];
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    text
}

/// What listwise reranking did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ListwiseStats {
    /// Queries reranked.
    pub queries: u64,
    /// Windows ranked.
    pub windows: u64,
    /// Answers taken as they were.
    pub exact: u64,
    /// Answers repaired.
    pub repaired: u64,
    /// Answers with no identifier (window kept).
    pub unparseable: u64,
    /// Windows whose request failed (window kept).
    pub failed: u64,
    /// Answers served from the response store.
    pub from_store: u64,
    /// Answers from the endpoint.
    pub from_endpoint: u64,
}

coreb_base::add_assign_fields!(ListwiseStats {
    queries,
    windows,
    exact,
    repaired,
    unparseable,
    failed,
    from_store,
    from_endpoint
});

/// The passages block of a window: `[1] text`, a blank line between passages.
fn passages(texts: &[&str], max_words: usize) -> String {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("[{}] {}", i + 1, truncate_words(t, max_words).trim()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Rerank one query's candidates (document ids, best first) with their texts.
pub async fn rerank_query(
    gateway: &dyn LlmGateway,
    prompt: &Prompt,
    cfg: &ListwiseConfig,
    qid: &str,
    query: &str,
    mut candidates: Vec<(String, String)>,
    progress: &(dyn Fn() + Sync),
) -> Result<(Vec<String>, ListwiseStats), LlmStageError> {
    let mut stats = ListwiseStats { queries: 1, ..ListwiseStats::default() };
    candidates.truncate(cfg.depth);
    for (start, end) in windows(candidates.len(), cfg.window, cfg.step) {
        let texts: Vec<&str> = candidates[start..end].iter().map(|(_, t)| t.as_str()).collect();
        let num = (end - start).to_string();
        let block = passages(&texts, cfg.max_words);
        let messages = prompt
            .render(&[("num", num.as_str()), ("query", query), ("passages", block.as_str())])
            .map_err(|source| LlmStageError::Prompt { stage: LlmStage::Rerank, source })?;
        let request = ChatRequest {
            stage: LlmStage::Rerank,
            item: format!("{qid}/{start}-{end}"),
            model: cfg.model.clone(),
            messages,
            params: cfg.sampling.clone(),
            sample: 0,
            prompt_sha256: prompt.sha256.clone(),
            response_format: None,
            on_incomplete: Default::default(),
        };
        stats.windows += 1;
        let answer = ask(gateway, &request).await?;
        progress();
        let completion = match answer {
            Ok(c) => c,
            Err(rejection) => {
                tracing::warn!(query = qid, window = %request.item, reason = %rejection.reason, "listwise window failed; its order is kept");
                stats.failed += 1;
                continue;
            }
        };
        match completion.origin {
            Origin::Store => stats.from_store += 1,
            Origin::Endpoint => stats.from_endpoint += 1,
        }
        let (order, parsed) = parse_permutation(&completion.text, end - start);
        match parsed {
            Parsed::Exact => stats.exact += 1,
            Parsed::Repaired => stats.repaired += 1,
            Parsed::Unparseable => stats.unparseable += 1,
        }
        let window: Vec<(String, String)> = candidates[start..end].to_vec();
        for (slot, i) in order.into_iter().enumerate() {
            candidates[start + slot] = window[i].clone();
        }
    }
    Ok((candidates.into_iter().map(|(id, _)| id).collect(), stats))
}

/// Rerank the top `cfg.depth` documents of every query of `run` listwise; the result holds
/// those documents, scored `depth − rank` so that the order is the model's.
pub async fn listwise_run(
    gateway: &dyn LlmGateway,
    prompt: &Prompt,
    cfg: &ListwiseConfig,
    data: &Dataset,
    run: &Run,
    progress: &(dyn Fn() + Sync),
) -> Result<(Run, ListwiseStats), LlmStageError> {
    let texts: std::collections::HashMap<&str, String> =
        data.corpus.iter().map(|d| (d.id.as_str(), d.full_text())).collect();
    type Work<'a> = (&'a str, &'a str, Vec<(String, String)>);
    let work: Vec<Work<'_>> = data
        .queries
        .iter()
        .filter_map(|q| {
            let top: Vec<(String, String)> = run
                .ranked(&q.id)
                .iter()
                .take(cfg.depth)
                .map(|e| {
                    let d = run.doc(e);
                    (d.to_owned(), texts.get(d).cloned().unwrap_or_default())
                })
                .collect();
            (!top.is_empty()).then_some((q.id.as_str(), q.text.as_str(), top))
        })
        .collect();
    let results = ordered(work, cfg.concurrency, |(qid, text, top)| async move {
        rerank_query(gateway, prompt, cfg, qid, text, top, progress).await.map(|r| (qid, r))
    })
    .await;
    let mut out = Run::new(format!("{}+listwise:{}", run.run_id, cfg.model));
    let mut stats = ListwiseStats::default();
    for r in coreb_llm::run::settle(results)? {
        let (qid, (order, s)) = r;
        stats += s;
        let n = order.len();
        for (rank, doc) in order.iter().enumerate() {
            out.push(qid, doc, (n - rank) as f64);
        }
    }
    Ok((out, stats))
}

/// Windows a query of `n` candidates needs (for progress bars).
pub fn window_count(n: usize, cfg: &ListwiseConfig) -> usize {
    windows(n.min(cfg.depth), cfg.window, cfg.step).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_position() {
        assert_eq!(windows(100, 10, 5).first(), Some(&(90, 100)));
        assert_eq!(windows(100, 10, 5).last(), Some(&(0, 10)));
        assert_eq!(windows(100, 10, 5).len(), 19);
        let w = windows(128, 10, 5);
        assert_eq!(&w[w.len() - 2..], &[(3, 13), (0, 8)], "RankGPT would stop at (3, 13)");
        assert_eq!(windows(7, 10, 5), vec![(0, 7)]);
        assert_eq!(windows(12, 10, 5), vec![(2, 12), (0, 7)]);
        assert!(windows(0, 10, 5).is_empty());
    }

    #[test]
    fn answers_are_parsed_strictly_and_repaired() {
        assert_eq!(parse_permutation("[3] > [1] > [2]", 3), (vec![2, 0, 1], Parsed::Exact));
        assert_eq!(parse_permutation(" [2]>[1] ", 2), (vec![1, 0], Parsed::Exact));
        // Incomplete: the missing keep their order after the named ones.
        assert_eq!(parse_permutation("[3] > [1]", 4), (vec![2, 0, 1, 3], Parsed::Repaired));
        // Repeats and out-of-range identifiers are dropped.
        assert_eq!(
            parse_permutation("[2] > [2] > [9] > [1]", 3),
            (vec![1, 0, 2], Parsed::Repaired)
        );
        // Chatter around a full permutation is malformed, but the order is read.
        assert_eq!(
            parse_permutation("Sure! [2] > [3] > [1]", 3),
            (vec![1, 2, 0], Parsed::Repaired)
        );
        // No brackets: bare numbers.
        assert_eq!(parse_permutation("2, 1", 2), (vec![1, 0], Parsed::Repaired));
        assert_eq!(
            parse_permutation("I cannot rank these.", 3),
            (vec![0, 1, 2], Parsed::Unparseable)
        );
    }

    #[test]
    fn truncation_keeps_spacing() {
        assert_eq!(truncate_words("def f(x):\n    return x\n", 3), "def f(x):\n    return");
        assert_eq!(truncate_words("a b", 5), "a b");
        assert_eq!(truncate_words("a b", 0), "a b");
    }
}
