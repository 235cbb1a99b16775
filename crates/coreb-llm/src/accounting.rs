//! Tokens, requests and cost per stage and model, summed over a run.
//!
//! Tokens of responses served from the store are counted apart from tokens paid for in this
//! run; cost is computed from the prices of the config (per 1M tokens) for the paid ones.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

use super::config::ModelPrice;
use super::{LlmStage, TokenUsage};

/// One row of the report: a (stage, model) pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageRow {
    /// Stage.
    pub stage: String,
    /// Model.
    pub model: String,
    /// Completions served from the store.
    pub from_store: u64,
    /// Completions received from the endpoint (usable ones).
    pub from_endpoint: u64,
    /// Requests the endpoint received: every attempt that reached it, retries included (an
    /// attempt that could not connect is not one); for the batch transport, each line
    /// submitted once.
    pub sent: u64,
    /// HTTP attempts made (retries included, and those that could not connect).
    pub attempts: u64,
    /// Answers that stopped for `length` or `content_filter` (from the endpoint or the store).
    pub incomplete: u64,
    /// Requests that finally failed.
    pub failed: u64,
    /// Prompt tokens paid for in this run (incomplete answers included).
    pub prompt_tokens: u64,
    /// Completion tokens paid for in this run (incomplete answers included).
    pub completion_tokens: u64,
    /// Prompt + completion tokens of the responses served from the store.
    pub stored_tokens: u64,
    /// Cost of this run's tokens at the configured prices (0 for unpriced models), the
    /// batch answers' at the batch price.
    pub cost: f64,
    /// Answers that came through the Batch API in this run (their tokens are in
    /// `prompt_tokens`/`completion_tokens`).
    pub from_batch: u64,
    /// The part of `cost` paid at the batch price.
    pub batch_cost: f64,
}

/// Running totals, shared by every request of a gateway.
#[derive(Debug, Default)]
pub struct Accounting {
    rows: Mutex<BTreeMap<(LlmStage, String), UsageRow>>,
    prices: BTreeMap<String, ModelPrice>,
}

/// One event to count.
#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// A completion served from the store.
    FromStore(TokenUsage),
    /// A request the endpoint received (an attempt that reached it; a batch line).
    Sent,
    /// One HTTP attempt made.
    Attempt,
    /// An answer that stopped for `length` or `content_filter`.
    Incomplete,
    /// An answer received (usable or not) with its usage.
    Paid(TokenUsage),
    /// An answer received through the Batch API, with its usage and the batch price as a
    /// share of the synchronous price.
    BatchPaid(TokenUsage, f64),
    /// A usable answer received.
    FromEndpoint,
    /// The request failed for good.
    Failed,
}

impl Accounting {
    /// Totals with these prices.
    pub fn new(prices: BTreeMap<String, ModelPrice>) -> Self {
        Accounting { rows: Mutex::new(BTreeMap::new()), prices }
    }

    /// Count one event.
    pub fn record(&self, stage: LlmStage, model: &str, event: Event) {
        let mut rows = self.rows.lock().unwrap_or_else(|p| p.into_inner());
        let row = rows.entry((stage, model.to_owned())).or_insert_with(|| UsageRow {
            stage: stage.to_string(),
            model: model.to_owned(),
            ..UsageRow::default()
        });
        match event {
            Event::FromStore(u) => {
                row.from_store += 1;
                row.stored_tokens += u.prompt_tokens + u.completion_tokens;
            }
            Event::Sent => row.sent += 1,
            Event::Attempt => row.attempts += 1,
            Event::Incomplete => row.incomplete += 1,
            Event::Paid(u) => {
                row.prompt_tokens += u.prompt_tokens;
                row.completion_tokens += u.completion_tokens;
                let price = self.prices.get(model).copied().unwrap_or_default();
                row.cost += (u.prompt_tokens as f64 * price.input_per_million
                    + u.completion_tokens as f64 * price.output_per_million)
                    / 1e6;
            }
            Event::BatchPaid(u, factor) => {
                row.from_batch += 1;
                row.prompt_tokens += u.prompt_tokens;
                row.completion_tokens += u.completion_tokens;
                let price = self.prices.get(model).copied().unwrap_or_default();
                let cost = factor
                    * (u.prompt_tokens as f64 * price.input_per_million
                        + u.completion_tokens as f64 * price.output_per_million)
                    / 1e6;
                row.cost += cost;
                row.batch_cost += cost;
            }
            Event::FromEndpoint => row.from_endpoint += 1,
            Event::Failed => row.failed += 1,
        }
    }

    /// Every row, sorted by stage then model.
    pub fn rows(&self) -> Vec<UsageRow> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// The rows of one stage.
    pub fn stage_rows(&self, stage: LlmStage) -> Vec<UsageRow> {
        self.rows().into_iter().filter(|r| r.stage == stage.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_from_prices() {
        let prices = BTreeMap::from([(
            "m".to_owned(),
            ModelPrice { input_per_million: 1.0, output_per_million: 4.0 },
        )]);
        let acc = Accounting::new(prices);
        acc.record(
            LlmStage::Rewrite,
            "m",
            Event::Paid(TokenUsage { prompt_tokens: 500_000, completion_tokens: 250_000 }),
        );
        acc.record(
            LlmStage::Rewrite,
            "m",
            Event::FromStore(TokenUsage { prompt_tokens: 10, completion_tokens: 5 }),
        );
        acc.record(
            LlmStage::Generate,
            "free",
            Event::Paid(TokenUsage { prompt_tokens: 9, completion_tokens: 9 }),
        );
        let rows = acc.rows();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].stage, "rewrite");
        assert!((rows[0].cost - 1.5).abs() < 1e-12);
        assert_eq!(rows[0].stored_tokens, 15);
        assert_eq!(rows[1].cost, 0.0);
        // A batch answer costs the batch share of the price and is shown as such.
        acc.record(
            LlmStage::Rewrite,
            "m",
            Event::BatchPaid(
                TokenUsage { prompt_tokens: 500_000, completion_tokens: 250_000 },
                0.5,
            ),
        );
        let row = &acc.rows()[0];
        assert!(
            (row.cost - 2.25).abs() < 1e-12 && (row.batch_cost - 0.75).abs() < 1e-12,
            "{row:?}"
        );
        assert_eq!(row.from_batch, 1);
    }
}
