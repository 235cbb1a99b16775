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
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures_util::future::BoxFuture;
use tokio::sync::Semaphore;

use super::accounting::{Accounting, Event};
use super::client::{Attempt, HttpClient};
use super::config::{LlmConfig, RetryConfig, StoreMode};
use super::limiter::Bucket;
use super::store::{ResponseStore, StoreEntry, StoredResponse};
use super::{ChatRequest, Completion, FinishReason, LlmError, LlmGateway, Origin, TokenUsage, secs};

/// The real gateway.
#[derive(Debug)]
pub struct Gateway {
    mode: StoreMode,
    store: Arc<ResponseStore>,
    client: HttpClient,
    retry: RetryConfig,
    slots: Semaphore,
    requests: Option<Bucket>,
    tokens: Option<Bucket>,
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
            slots: Semaphore::new(config.concurrency.max(1)),
            requests: Bucket::per_minute(u64::from(config.requests_per_minute)),
            tokens: Bucket::per_minute(config.tokens_per_minute),
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
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.retry.min_delay_ms))
            .with_max_delay(Duration::from_millis(self.retry.max_delay_ms))
            .with_max_times(self.retry.max_attempts.saturating_sub(1) as usize)
            .with_jitter()
            .build();
        let estimate = request.estimated_tokens();
        let mut attempts = 0u32;
        loop {
            if self.stopped.load(Ordering::SeqCst) {
                return Err(LlmError::Stopped { stage: request.stage, item: request.item.clone() });
            }
            if let Some(bucket) = &self.requests {
                bucket.acquire(1).await;
            }
            if let Some(bucket) = &self.tokens {
                bucket.acquire(estimate).await;
            }
            attempts += 1;
            self.accounting.record(request.stage, &request.model, Event::Attempt);
            let outcome = {
                let _slot = self.slots.acquire().await.map_err(|_| LlmError::Stopped { stage: request.stage, item: request.item.clone() })?;
                self.client.attempt(request).await
            };
            match outcome {
                Attempt::Answer { text, finish_reason, usage } => {
                    self.accounting.record(request.stage, &request.model, Event::Paid(usage));
                    return Ok((text, finish_reason, usage));
                }
                Attempt::Unauthorized { status } => {
                    self.stopped.store(true, Ordering::SeqCst);
                    return Err(LlmError::Unauthorized { stage: request.stage, item: request.item.clone(), model: request.model.clone(), status });
                }
                Attempt::Rejected { status, body } => {
                    return Err(LlmError::Rejected { stage: request.stage, item: request.item.clone(), model: request.model.clone(), status, body });
                }
                Attempt::Retry { reason, after } => {
                    let Some(backoff) = delays.next() else {
                        return Err(LlmError::RetriesExhausted { stage: request.stage, item: request.item.clone(), model: request.model.clone(), attempts, last: reason });
                    };
                    let cap = Duration::from_secs(self.retry.max_retry_after_secs);
                    // The server's `Retry-After` wins over our own schedule (capped).
                    let wait = after.map_or(backoff, |a| a.min(cap));
                    tracing::info!(stage = %request.stage, item = %request.item, attempt = attempts, ?wait, %reason, "retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
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
