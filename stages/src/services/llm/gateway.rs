//! [`Gateway`]: the response store in front of the endpoint, under coreb's retry policy.
//!
//! For each request: look it up in the store (unless refreshing); on a miss send it (replay
//! mode: fail naming the request), retrying 429s, 5xx, timeouts and broken bodies with
//! exponential backoff and jitter (`backon`), waiting at least what `Retry-After` asks;
//! answers that stopped for `length` or `content_filter` are asked again and, if they keep
//! stopping so, reported as failures and never stored; complete answers are stored
//! atomically before they are handed back. A 401/403 stops the whole gateway: every later
//! request fails at once without being sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::BoxFuture;

use super::accounting::{Accounting, Event};
use super::client::{Attempt, HttpClient};
use super::config::{LlmConfig, RetryConfig, StoreMode};
use super::retry::{GaveUp, Limits, Step, send_with_retries};
use super::store::{ResponseStore, StoreEntry, StoredResponse};
use super::{ChatRequest, Completion, FinishReason, LlmError, LlmGateway, Origin, TokenUsage, secs};

/// The real gateway.
#[derive(Debug)]
pub struct Gateway {
    mode: StoreMode,
    store: Arc<ResponseStore>,
    client: HttpClient,
    retry: RetryConfig,
    limits: Limits,
    accounting: Accounting,
    stopped: AtomicBool,
}

/// Read the API key named by `config.api_key_env`, when the mode can send anything.
///
/// This is the one place that reads the environment; the engine calls it at the edge.
/// An empty `api_key_env` means the endpoint needs no key (a local vLLM or llama.cpp).
pub fn api_key_from_env(config: &LlmConfig) -> Result<Option<String>, LlmError> {
    if config.mode == StoreMode::Replay || config.api_key_env.is_empty() {
        return Ok(None);
    }
    match std::env::var(&config.api_key_env) {
        Ok(key) if !key.is_empty() => Ok(Some(key)),
        _ => Err(LlmError::MissingApiKey(config.api_key_env.clone())),
    }
}

impl Gateway {
    /// A gateway for a validated config, a store and the API key (see [`api_key_from_env`]).
    pub fn new(config: &LlmConfig, store: ResponseStore, api_key: Option<String>) -> Result<Self, LlmError> {
        let client = HttpClient::new(&config.base_url, api_key, secs(config.timeout_secs)).map_err(LlmError::Client)?;
        Ok(Gateway {
            mode: config.mode,
            store: Arc::new(store),
            client,
            retry: config.retry.clone(),
            limits: Limits::new(config.concurrency, u64::from(config.requests_per_minute), config.tokens_per_minute),
            accounting: Accounting::new(config.prices.clone()),
            stopped: AtomicBool::new(false),
        })
    }

    /// Tokens, requests and cost so far.
    pub fn accounting(&self) -> &Accounting {
        &self.accounting
    }

    /// The store.
    pub fn store(&self) -> &ResponseStore {
        &self.store
    }

    async fn complete_inner(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        if self.stopped.load(Ordering::SeqCst) {
            return Err(LlmError::Stopped { stage: request.stage, item: request.item.clone() });
        }
        let key = request.key();
        if self.mode != StoreMode::RecordOnly {
            // Store I/O (and the fsync of writes) runs on the blocking pool, not on the
            // runtime's workers, so it never stalls requests in flight.
            let store = self.store.clone();
            let lookup = key.clone();
            let stored = tokio::task::spawn_blocking(move || store.get(&lookup)).await.map_err(|e| join_error(&self.store, &key, e))??;
            match stored {
                Some(entry) if entry.response.finish_reason.is_complete() => {
                    self.accounting.record(request.stage, &request.model, Event::FromStore(entry.response.usage));
                    return Ok(Completion { key, text: entry.response.text, finish_reason: entry.response.finish_reason, usage: entry.response.usage, origin: Origin::Store });
                }
                Some(entry) if self.mode == StoreMode::Replay => {
                    return Err(self.incomplete(request, entry.response.finish_reason, 0));
                }
                None if self.mode == StoreMode::Replay => {
                    return Err(LlmError::ReplayMiss { stage: request.stage, item: request.item.clone(), model: request.model.clone(), key });
                }
                _ => {}
            }
        }
        let mut last_finish = FinishReason::Stop;
        for _ in 0..self.retry.incomplete_attempts {
            let (text, finish_reason, usage) = match self.send(request).await {
                Ok(answer) => answer,
                Err(e) => {
                    self.accounting.record(request.stage, &request.model, Event::Failed);
                    return Err(e);
                }
            };
            if finish_reason.is_complete() {
                let entry = StoreEntry::of(request, StoredResponse { text, finish_reason, usage });
                let store = self.store.clone();
                let entry = tokio::task::spawn_blocking(move || store.put(&entry).map(|()| entry)).await.map_err(|e| join_error(&self.store, &key, e))??;
                self.accounting.record(request.stage, &request.model, Event::FromEndpoint);
                let StoreEntry { response, .. } = entry;
                return Ok(Completion { key, text: response.text, finish_reason: response.finish_reason, usage: response.usage, origin: Origin::Endpoint });
            }
            tracing::warn!(stage = %request.stage, item = %request.item, model = %request.model, ?finish_reason, "incomplete answer; asking again");
            last_finish = finish_reason;
        }
        self.accounting.record(request.stage, &request.model, Event::Failed);
        Err(self.incomplete(request, last_finish, self.retry.incomplete_attempts))
    }

    fn incomplete(&self, request: &ChatRequest, finish_reason: FinishReason, attempts: u32) -> LlmError {
        LlmError::Incomplete { stage: request.stage, item: request.item.clone(), model: request.model.clone(), finish_reason, attempts }
    }

    /// Send under the limits and the retry policy until an answer (complete or not) comes.
    async fn send(&self, request: &ChatRequest) -> Result<(String, FinishReason, TokenUsage), LlmError> {
        let outcome = send_with_retries(&self.retry, &self.limits, request.estimated_tokens(), |attempt| async move {
            if self.stopped.load(Ordering::SeqCst) {
                return Step::Fail(LlmError::Stopped { stage: request.stage, item: request.item.clone() });
            }
            self.accounting.record(request.stage, &request.model, Event::Attempt);
            match self.client.attempt(request).await {
                Attempt::Answer { text, finish_reason, usage } => {
                    self.accounting.record(request.stage, &request.model, Event::Paid(usage));
                    Step::Done((text, finish_reason, usage))
                }
                Attempt::Unauthorized { status } => {
                    self.stopped.store(true, Ordering::SeqCst);
                    Step::Fail(LlmError::Unauthorized { stage: request.stage, item: request.item.clone(), model: request.model.clone(), status })
                }
                Attempt::Rejected { status, body } => {
                    Step::Fail(LlmError::Rejected { stage: request.stage, item: request.item.clone(), model: request.model.clone(), status, body })
                }
                Attempt::Retry { reason, after } => {
                    tracing::info!(stage = %request.stage, item = %request.item, attempt, %reason, "attempt failed");
                    Step::Retry { reason, after }
                }
            }
        })
        .await;
        outcome.map_err(|gave_up| match gave_up {
            GaveUp::Failed(e) => e,
            GaveUp::Exhausted { attempts, last } => {
                LlmError::RetriesExhausted { stage: request.stage, item: request.item.clone(), model: request.model.clone(), attempts, last }
            }
        })
    }
}

fn join_error(store: &ResponseStore, key: &str, e: tokio::task::JoinError) -> LlmError {
    LlmError::Store(super::StoreError::Io { action: "accessing", path: store.path_of(key), source: std::io::Error::other(e.to_string()) })
}

impl LlmGateway for Gateway {
    fn complete<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete_inner(request))
    }
}
