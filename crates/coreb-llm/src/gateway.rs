//! [`Gateway`]: the response store in front of the endpoint, under coreb's retry policy.
//!
//! For each request: look it up in the store (unless refreshing); on a miss send it (replay
//! mode: fail naming the request), retrying 429s, 5xx, timeouts and broken bodies with
//! exponential backoff and jitter (`backon`), waiting at least what `Retry-After` asks. Every
//! answer is stored atomically before it is used, complete or not. An answer that stopped
//! for `length` or `content_filter` is never asked again as is: a cut one gets one try with
//! the policy's larger `max_tokens` (a request with its own key), a stage that samples
//! several answers at a temperature above 0 may take another sample instead, and otherwise
//! the item fails as `truncated` (or `content_filter`). A 401/403, or a 404 (an unknown model,
//! or no chat endpoint at that URL), stops the whole gateway: every later request fails at
//! once without being sent.
//!
//! Every attempt also goes through the endpoint's circuit ([`coreb_http::circuit`], configured
//! by `[llm.circuit]`): a run of attempts that got no answer, or of server errors, across
//! requests, pauses every request for probe requests, and when the probes fail too every
//! request fails with one [`LlmError::EndpointDown`] naming the URL, the error and the counts. A
//! failed attempt is never stored; an answer a stage rejects is recorded in its entry
//! ([`LlmGateway::verdict`]). Accounting's `sent` counts the attempts that reached the
//! endpoint (what its server received, retries included).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;

use super::accounting::{Accounting, Event};
use super::client::{Attempt, HttpClient, names_unknown_model};
use super::config::{LlmConfig, LlmStage, StoreMode};
use super::run::RejectReason;
use super::store::{ResponseStore, StoreEntry, StoredRejection, StoredResponse};
use super::{
    ChatRequest, Completion, FinishReason, LlmError, LlmGateway, Origin, Provenance, TokenUsage,
    UsageRow,
};
use coreb_http::RetryConfig;
use coreb_http::circuit::{Circuit, Outcome};
use coreb_http::retry::{GaveUp, Limits, Step, send_through};
use coreb_http::secs;

/// The real gateway.
#[derive(Debug)]
pub struct Gateway {
    mode: StoreMode,
    store: Arc<ResponseStore>,
    client: HttpClient,
    retry: RetryConfig,
    limits: Limits,
    circuit: Arc<Circuit>,
    accounting: Accounting,
    stopped: AtomicBool,
    /// The store keys answered, by stage ([`LlmGateway::answers_used`]).
    used:
        std::sync::Mutex<std::collections::BTreeMap<LlmStage, std::collections::BTreeSet<String>>>,
    /// Keys served from the store with a recorded rejection (cleared if a stage now uses them).
    marked: Mutex<HashSet<String>>,
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
    pub fn new(
        config: &LlmConfig,
        store: ResponseStore,
        api_key: Option<String>,
    ) -> Result<Self, LlmError> {
        let client = HttpClient::new(&config.base_url, api_key, secs(config.timeout_secs))
            .map_err(LlmError::Client)?;
        let circuit = Arc::new(Circuit::new(client.url(), config.circuit.clone()));
        Ok(Gateway {
            mode: config.mode,
            store: Arc::new(store),
            client,
            retry: config.retry.clone(),
            limits: Limits::new(
                config.concurrency,
                u64::from(config.requests_per_minute),
                config.tokens_per_minute,
            ),
            circuit,
            accounting: Accounting::new(config.prices.clone()),
            stopped: AtomicBool::new(false),
            used: Default::default(),
            marked: Mutex::default(),
        })
    }

    /// Where requests go (`<base_url>/chat/completions`).
    pub fn url(&self) -> &str {
        self.client.url()
    }

    /// The endpoint's circuit.
    pub fn circuit(&self) -> &Circuit {
        &self.circuit
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
        let mut current = request.clone();
        let mut max_tokens = Vec::new();
        let mut resampled = 0;
        loop {
            let answer = self.answer(&current).await?;
            if answer.finish_reason.is_complete() {
                return Ok(answer);
            }
            max_tokens.push(current.params.max_tokens);
            match self.next_try(request, &current, &answer.finish_reason, &mut resampled) {
                Some(next) => {
                    tracing::info!(stage = %request.stage, item = %request.item, model = %request.model, finish_reason = answer.finish_reason.as_str(),
                        max_tokens = next.params.max_tokens, sample = next.sample, "unusable answer; one more try");
                    current = next;
                }
                None => {
                    self.accounting.record(request.stage, &request.model, Event::Failed);
                    return Err(LlmError::Incomplete {
                        stage: request.stage,
                        item: request.item.clone(),
                        model: request.model.clone(),
                        finish_reason: answer.finish_reason,
                        max_tokens,
                    });
                }
            }
        }
    }

    /// The try after an answer that stopped for `finish` (never the identical request): one
    /// longer `max_tokens` for a cut answer when the policy has a ceiling above the limit
    /// tried; else, in a stage that samples at a temperature above 0, the next sample.
    fn next_try(
        &self,
        original: &ChatRequest,
        current: &ChatRequest,
        finish: &FinishReason,
        resampled: &mut u32,
    ) -> Option<ChatRequest> {
        let policy = original.on_incomplete;
        if *finish == FinishReason::Length
            && let Some(ceiling) =
                policy.max_tokens_ceiling.filter(|c| *c > current.params.max_tokens)
        {
            let mut next = current.clone();
            next.params.max_tokens = ceiling;
            return Some(next);
        }
        if policy.samples > 1
            && original.params.temperature > 0.0
            && *resampled < self.retry.resample_attempts
        {
            *resampled += 1;
            let step = policy.samples.saturating_mul(*resampled);
            let mut next = current.clone();
            next.sample = original.sample.saturating_add(step);
            next.params.seed = original.params.seed.map(|s| s.wrapping_add(u64::from(step)));
            return Some(next);
        }
        None
    }

    fn used(&self, stage: LlmStage, key: &str) {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(stage)
            .or_default()
            .insert(key.to_owned());
    }

    /// One request's answer, complete or not: from the store, else from the endpoint (and
    /// then stored, whatever its finish reason, so that no rerun asks it again).
    async fn answer(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        if self.stopped.load(Ordering::SeqCst) {
            return Err(LlmError::Stopped { stage: request.stage, item: request.item.clone() });
        }
        let key = request.key();
        if self.mode != StoreMode::RecordOnly {
            // Store I/O (and the fsync of writes) runs on the blocking pool, not on the
            // runtime's workers, so it never stalls requests in flight.
            let store = self.store.clone();
            let lookup = key.clone();
            let stored = tokio::task::spawn_blocking(move || store.get(&lookup))
                .await
                .map_err(|e| join_error(&self.store, &key, e))??;
            match stored {
                Some(entry) => {
                    self.used(request.stage, &key);
                    if entry.rejected.is_some() {
                        self.marked.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone());
                    }
                    let r = entry.response;
                    self.accounting.record(
                        request.stage,
                        &request.model,
                        Event::FromStore(r.usage),
                    );
                    if !r.finish_reason.is_complete() {
                        self.accounting.record(request.stage, &request.model, Event::Incomplete);
                    }
                    return Ok(Completion {
                        key,
                        text: r.text,
                        finish_reason: r.finish_reason,
                        usage: r.usage,
                        origin: Origin::Store,
                        provenance: r.provenance,
                    });
                }
                None if self.mode == StoreMode::Replay => {
                    return Err(LlmError::ReplayMiss {
                        stage: request.stage,
                        item: request.item.clone(),
                        model: request.model.clone(),
                        key,
                    });
                }
                None => {}
            }
        }
        let (text, finish_reason, usage) = match self.send(request).await {
            Ok(answer) => answer,
            Err(e) => {
                self.accounting.record(request.stage, &request.model, Event::Failed);
                return Err(e);
            }
        };
        let entry = StoreEntry::of(
            request,
            StoredResponse { text, finish_reason, usage, provenance: Provenance::Endpoint },
        );
        let store = self.store.clone();
        let entry = tokio::task::spawn_blocking(move || store.put(&entry).map(|()| entry))
            .await
            .map_err(|e| join_error(&self.store, &key, e))??;
        self.used(request.stage, &key);
        let event = if entry.response.finish_reason.is_complete() {
            Event::FromEndpoint
        } else {
            Event::Incomplete
        };
        self.accounting.record(request.stage, &request.model, event);
        let StoreEntry { response, .. } = entry;
        Ok(Completion {
            key,
            text: response.text,
            finish_reason: response.finish_reason,
            usage: response.usage,
            origin: Origin::Endpoint,
            provenance: Provenance::Endpoint,
        })
    }

    /// Send under the limits, the retry policy and the endpoint's circuit until an answer
    /// (complete or not) comes.
    async fn send(
        &self,
        request: &ChatRequest,
    ) -> Result<(String, FinishReason, TokenUsage), LlmError> {
        let ticket = self.circuit.ticket();
        let down = || LlmError::EndpointDown {
            stage: request.stage,
            item: request.item.clone(),
            url: self.url().to_owned(),
            circuit: self.circuit.clone(),
        };
        let outcome = send_through(&self.retry, &self.limits, &ticket, request.estimated_tokens(), down, |attempt, permit| async move {
            // Another request may have stopped the run (while this one waited, too).
            if self.stopped.load(Ordering::SeqCst) {
                return Step::Fail(LlmError::Stopped { stage: request.stage, item: request.item.clone() });
            }
            self.accounting.record(request.stage, &request.model, Event::Attempt);
            let answer = self.client.attempt(request).await;
            let reached = !matches!(answer, Attempt::Retry { failure, .. } if !failure.reached());
            if reached {
                self.accounting.record(request.stage, &request.model, Event::Sent);
            }
            let (stage, item, model, url) = (request.stage, request.item.clone(), request.model.clone(), self.url().to_owned());
            match answer {
                Attempt::Answer { text, finish_reason, usage } => {
                    permit.record(Outcome::Answered, true, "");
                    self.accounting.record(request.stage, &request.model, Event::Paid(usage));
                    Step::Done((text, finish_reason, usage))
                }
                Attempt::Unauthorized { status } => {
                    permit.record(Outcome::Answered, true, "");
                    self.stopped.store(true, Ordering::SeqCst);
                    Step::Fail(LlmError::Unauthorized { stage, item, model, url, status })
                }
                Attempt::NotFound { body } => {
                    permit.record(Outcome::Answered, true, "");
                    self.stopped.store(true, Ordering::SeqCst);
                    if names_unknown_model(&body, &request.model) {
                        Step::Fail(LlmError::UnknownModel { stage, item, model, url, status: 404, body })
                    } else {
                        Step::Fail(LlmError::NoEndpoint { stage, item, model, url, body })
                    }
                }
                Attempt::Rejected { status, body } => {
                    permit.record(Outcome::Answered, true, "");
                    if names_unknown_model(&body, &request.model) {
                        self.stopped.store(true, Ordering::SeqCst);
                        return Step::Fail(LlmError::UnknownModel { stage, item, model, url, status, body });
                    }
                    Step::Fail(LlmError::Rejected { stage, item, model, status, body })
                }
                Attempt::Retry { reason, after, failure } => {
                    permit.record(failure.outcome(), failure.reached(), &reason);
                    tracing::info!(stage = %request.stage, item = %request.item, attempt, %reason, "attempt failed");
                    Step::Retry { reason, after }
                }
            }
        })
        .await;
        outcome.map_err(|gave_up| match gave_up {
            GaveUp::Failed(e) => e,
            GaveUp::Exhausted { attempts, last } => LlmError::RetriesExhausted {
                stage: request.stage,
                item: request.item.clone(),
                model: request.model.clone(),
                attempts,
                last,
            },
        })
    }

    /// Record what a stage made of an answer in its entry (live and record-only modes; replay
    /// writes nothing): a rejection with its reason, or, for an answer served with one
    /// recorded earlier that is now used, no rejection.
    async fn record_verdict(&self, completion: &Completion, rejection: Option<&RejectReason>) {
        if self.mode == StoreMode::Replay {
            return;
        }
        let rejected =
            rejection.map(|r| StoredRejection { kind: r.kind().to_owned(), detail: r.to_string() });
        if rejected.is_none()
            && !self.marked.lock().unwrap_or_else(|p| p.into_inner()).remove(&completion.key)
        {
            return;
        }
        let (store, key) = (self.store.clone(), completion.key.clone());
        match tokio::task::spawn_blocking(move || store.set_rejected(&key, rejected)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(key = %completion.key, error = %coreb_base::errors::chain(&e), "could not record a rejection in the response store")
            }
            Err(e) => {
                tracing::warn!(key = %completion.key, error = %e, "could not record a rejection in the response store")
            }
        }
    }
}

fn join_error(store: &ResponseStore, key: &str, e: tokio::task::JoinError) -> LlmError {
    LlmError::Store(super::StoreError::Io {
        action: "accessing",
        path: store.path_of(key),
        source: std::io::Error::other(e.to_string()),
    })
}

impl LlmGateway for Gateway {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete_inner(request))
    }

    fn usage(&self) -> Vec<UsageRow> {
        self.accounting.rows()
    }

    fn answers_used(&self, stage: LlmStage) -> Vec<String> {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&stage)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn verdict<'a>(
        &'a self,
        completion: &'a Completion,
        rejection: Option<&'a RejectReason>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(self.record_verdict(completion, rejection))
    }
}
