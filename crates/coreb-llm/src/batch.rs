//! The OpenAI Batch API transport (`[llm] transport = "batch"`): a stage's requests missing
//! from the response store go to the endpoint as one batch job instead of one call each, at
//! the batch price (half the synchronous one at OpenAI), and their answers land in the same
//! store through the same checks as synchronous answers.
//!
//! [`BatchGateway`] sits in front of the synchronous [`Gateway`]:
//!
//! - A request the store holds is served by the gateway as always.
//! - A miss waits in a collection; once no new miss has come for `llm.batch.collect_ms`, the
//!   whole collection is written as JSONL (`custom_id` = the request key, `method`, `url` =
//!   `/v1/chat/completions`, `body` = the synchronous request body), uploaded
//!   (`POST /files`, multipart, `purpose=batch`), and a batch is created (`POST /batches`)
//!   and polled (`GET /batches/{id}`) every `llm.batch.poll_interval_secs` until it ends.
//! - Its output and error files (`GET /files/{id}/content`) are read: each 200 answer is
//!   classified as a synchronous answer would be and stored; the stage then sees it like any
//!   other (schema check, truncation policy, outcomes). An error line or a non-200
//!   `status_code` is retried synchronously through the gateway (its retry loop, its
//!   reporting); so are the requests of a batch that `failed`. An `expired` batch keeps its
//!   partial output and only its unanswered requests are submitted again (at most
//!   `llm.batch.max_resubmits` times, then synchronously). A `cancelled` batch's unanswered
//!   requests are reported, not resent.
//! - Resumable: a submission (its requests, input file id, batch id) is written durably to
//!   `<store>.batches/<sha256 of the JSONL>.json` before the batch is created and again once
//!   its id is known, and removed only after its answers are stored. A rerun finds it and polls
//!   the same batch instead of submitting again; a crash between creating the batch and
//!   recording its id is covered by the batch's `metadata.coreb_submission`, looked up in
//!   `GET /batches` before creating another.
//!
//! Every HTTP call goes through coreb's one retry loop ([`send_with_retries`]) with the
//! manifest's retry policy; the API key comes from the environment only (the engine reads it).
//! A cut answer's one longer try (or another sample) is sent synchronously by the gateway.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;

use super::accounting::Event;
use super::client::{Attempt, classify, wire_body};
use super::config::{BatchConfig, LlmConfig, StoreMode};
use super::gateway::Gateway;
use super::store::{StoreEntry, StoredResponse};
use super::{
    ChatRequest, Completion, FinishReason, LlmError, LlmGateway, Origin, Provenance, TokenUsage,
    UsageRow,
};
use coreb_http::RetryConfig;
use coreb_http::retry::{
    GaveUp, Limits, Step, is_retryable_status, retry_after, send_with_retries,
};
use coreb_http::secs;

/// The format tag of a persisted submission.
const FORMAT: &str = "coreb-llm-batch/1";

/// Where the submissions of the batches feeding the store at `store` are kept: beside it,
/// `<store>.batches`.
pub fn state_dir_of(store: &Path) -> PathBuf {
    let mut name = store.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".batches");
    store.with_file_name(name)
}

/// A batch submission as persisted: what was asked, and how far the submission got.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Submission {
    format: String,
    /// sha256 of the uploaded JSONL (also the batch's `metadata.coreb_submission`).
    submission: String,
    /// How many expired batches came before this one for these requests.
    round: u32,
    /// The uploaded file, once uploaded.
    input_file_id: Option<String>,
    /// The batch, once created.
    batch_id: Option<String>,
    /// The requests, in key order.
    requests: Vec<ChatRequest>,
}

impl Submission {
    fn new(mut requests: Vec<ChatRequest>, round: u32) -> Result<(Submission, Vec<u8>), String> {
        requests.sort_by_key(ChatRequest::key);
        let jsonl = jsonl(&requests)?;
        let submission = coreb_base::hashing::sha256_hex(&jsonl);
        Ok((
            Submission {
                format: FORMAT.into(),
                submission,
                round,
                input_file_id: None,
                batch_id: None,
                requests,
            },
            jsonl,
        ))
    }
}

/// The batch input: one line per request.
fn jsonl(requests: &[ChatRequest]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for r in requests {
        let body: Value = wire_body(r)
            .and_then(|b| serde_json::from_slice(&b))
            .map_err(|e| format!("cannot encode request `{}`: {e}", r.key()))?;
        let line = serde_json::json!({"custom_id": r.key(), "method": "POST", "url": "/v1/chat/completions", "body": body});
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

/// What became of one request of a batch.
#[derive(Debug, Clone)]
enum Outcome {
    /// Answered (and stored).
    Answered { text: String, finish_reason: FinishReason, usage: TokenUsage },
    /// Not answered by the batch: send it synchronously.
    Synchronous(String),
    /// The endpoint refused the credentials.
    Unauthorized(u16),
    /// Not answered and not to be resent (a cancelled batch, a Batch API call that kept
    /// failing; the submission stays on disk for a rerun).
    Failed { attempts: u32, reason: String },
}

/// A Batch API call that failed for good.
#[derive(Debug)]
enum ApiError {
    Unauthorized(u16),
    Failed { attempts: u32, reason: String },
}

impl ApiError {
    fn outcome(&self, what: &str) -> Outcome {
        match self {
            ApiError::Unauthorized(status) => Outcome::Unauthorized(*status),
            ApiError::Failed { attempts, reason } => Outcome::Failed {
                attempts: *attempts,
                reason: format!("Batch API, {what}: {reason}"),
            },
        }
    }
}

/// A batch object as `GET /batches/{id}` returns it (the fields coreb reads).
#[derive(Debug, Deserialize)]
struct BatchObject {
    id: String,
    status: String,
    #[serde(default)]
    output_file_id: Option<String>,
    #[serde(default)]
    error_file_id: Option<String>,
    #[serde(default)]
    errors: Option<Value>,
    #[serde(default)]
    metadata: Option<Value>,
}

/// The Batch API of one endpoint, every call under the retry loop.
struct Api {
    http: reqwest::Client,
    base: String,
    api_key: Option<String>,
    retry: RetryConfig,
    limits: Limits,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Api")
            .field("base", &self.base)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Api {
    /// One call: `make` builds the request afresh for every attempt.
    async fn call(
        &self,
        make: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, ApiError> {
        let make = &make;
        let outcome = send_with_retries(&self.retry, &self.limits, 0, |_| async move {
            let mut builder = make(&self.http);
            if let Some(key) = &self.api_key {
                builder = builder.bearer_auth(key);
            }
            let response = match builder.send().await {
                Ok(r) => r,
                Err(e) => {
                    return Step::Retry { reason: coreb_base::errors::chain(&e), after: None };
                }
            };
            let status = response.status().as_u16();
            let after = retry_after(response.headers());
            let body = match response.bytes().await {
                Ok(b) => b.to_vec(),
                Err(e) => {
                    return Step::Retry {
                        reason: format!(
                            "HTTP {status}, body cut: {}",
                            coreb_base::errors::chain(&e)
                        ),
                        after,
                    };
                }
            };
            match status {
                200..=299 => Step::Done(body),
                401 | 403 => Step::Fail(ApiError::Unauthorized(status)),
                s if is_retryable_status(s) => {
                    Step::Retry { reason: format!("HTTP {status}: {}", snippet(&body)), after }
                }
                _ => Step::Fail(ApiError::Failed {
                    attempts: 1,
                    reason: format!("HTTP {status}: {}", snippet(&body)),
                }),
            }
        })
        .await;
        outcome.map_err(|gave_up| match gave_up {
            GaveUp::Failed(e) => e,
            GaveUp::Exhausted { attempts, last } => ApiError::Failed {
                attempts,
                reason: format!("gave up after {attempts} attempts; last error: {last}"),
            },
        })
    }

    async fn json<T: serde::de::DeserializeOwned>(
        &self,
        make: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<T, ApiError> {
        let body = self.call(make).await?;
        serde_json::from_slice(&body).map_err(|e| ApiError::Failed {
            attempts: 1,
            reason: format!("unexpected answer ({e}): {}", snippet(&body)),
        })
    }

    /// `POST /files` (multipart, `purpose=batch`): the file's id.
    async fn upload(&self, submission: &str, jsonl: &[u8]) -> Result<String, ApiError> {
        let boundary = format!("coreb-batch-{}", &submission[..16.min(submission.len())]);
        let mut body = Vec::with_capacity(jsonl.len() + 512);
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"coreb-{submission}.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(jsonl);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let url = format!("{}/files", self.base);
        let file: Value = self
            .json(|http| {
                http.post(&url)
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        format!("multipart/form-data; boundary={boundary}"),
                    )
                    .body(body.clone())
            })
            .await?;
        id_of(&file)
    }

    /// A batch created earlier for this submission (`GET /batches`, first page).
    async fn find(&self, submission: &str) -> Result<Option<BatchObject>, ApiError> {
        #[derive(Deserialize)]
        struct Page {
            data: Vec<BatchObject>,
        }
        let url = format!("{}/batches?limit=100", self.base);
        let page: Page = self.json(|http| http.get(&url)).await?;
        Ok(page.data.into_iter().find(|b| {
            b.metadata.as_ref().and_then(|m| m.get("coreb_submission")).and_then(Value::as_str)
                == Some(submission)
        }))
    }

    /// `POST /batches`.
    async fn create(
        &self,
        input_file_id: &str,
        submission: &str,
        window: &str,
    ) -> Result<BatchObject, ApiError> {
        let url = format!("{}/batches", self.base);
        let body = serde_json::json!({"input_file_id": input_file_id, "endpoint": "/v1/chat/completions", "completion_window": window,
            "metadata": {"coreb_submission": submission}});
        let body = body.to_string();
        self.json(|http| {
            http.post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone())
        })
        .await
    }

    /// `GET /batches/{id}`.
    async fn status(&self, id: &str) -> Result<BatchObject, ApiError> {
        let url = format!("{}/batches/{id}", self.base);
        self.json(|http| http.get(&url)).await
    }

    /// `GET /files/{id}/content`.
    async fn content(&self, id: &str) -> Result<Vec<u8>, ApiError> {
        let url = format!("{}/files/{id}/content", self.base);
        self.call(|http| http.get(&url)).await
    }
}

fn id_of(v: &Value) -> Result<String, ApiError> {
    v.get("id").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| ApiError::Failed {
        attempts: 1,
        reason: format!("no `id` in {}", snippet(v.to_string().as_bytes())),
    })
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// Requests waiting for a batch, shared by every `complete` call.
#[derive(Debug)]
struct Shared {
    /// Misses not yet submitted.
    pending: BTreeMap<String, ChatRequest>,
    /// Keys of the batch round now running.
    in_flight: BTreeSet<String>,
    /// When the last miss arrived.
    last_arrival: Instant,
    /// Is a caller running a round?
    leading: bool,
    /// What became of each request of the rounds run.
    done: HashMap<String, Outcome>,
}

/// The gateway of the `batch` transport (see the module docs).
#[derive(Debug)]
pub struct BatchGateway {
    inner: Gateway,
    api: Api,
    config: BatchConfig,
    mode: StoreMode,
    states: PathBuf,
    shared: Mutex<Shared>,
    wake: Notify,
}

/// Resets `leading` (and wakes the waiters) if a round's leader is dropped mid-way.
struct Leading<'a>(&'a BatchGateway);

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.leading = false;
        s.in_flight.clear();
        drop(s);
        self.0.wake.notify_waiters();
    }
}

impl BatchGateway {
    /// The batch transport of `config` in front of `inner` (built from the same config), its
    /// submissions kept in `states` (see [`state_dir_of`]).
    pub fn new(
        config: &LlmConfig,
        inner: Gateway,
        api_key: Option<String>,
        states: PathBuf,
    ) -> Result<Self, LlmError> {
        let timeout = secs(config.timeout_secs);
        let http = coreb_http::client_builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(LlmError::Client)?;
        let api = Api {
            http,
            base: config.base_url.clone(),
            api_key,
            retry: config.retry.clone(),
            limits: Limits::new(config.concurrency, u64::from(config.requests_per_minute), 0),
        };
        let shared = Shared {
            pending: BTreeMap::new(),
            in_flight: BTreeSet::new(),
            last_arrival: Instant::now(),
            leading: false,
            done: HashMap::new(),
        };
        Ok(BatchGateway {
            inner,
            api,
            config: config.batch.clone(),
            mode: config.mode,
            states,
            shared: Mutex::new(shared),
            wake: Notify::new(),
        })
    }

    /// The synchronous gateway behind it (its store and accounting).
    pub fn gateway(&self) -> &Gateway {
        &self.inner
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn complete_inner(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let key = request.key();
        if self.mode != StoreMode::Live || self.inner.store().contains(&key) {
            return self.inner.complete(request).await;
        }
        match self.wait_for(request, &key).await {
            Outcome::Answered { text, finish_reason, usage } => {
                let accounting = self.inner.accounting();
                accounting.record(
                    request.stage,
                    &request.model,
                    Event::BatchPaid(usage, self.config.price_factor),
                );
                if !finish_reason.is_complete() {
                    // Stored as it came; the gateway applies the policy for cut answers (a
                    // longer try or another sample, sent synchronously) or reports it.
                    return self.inner.complete(request).await;
                }
                accounting.record(request.stage, &request.model, Event::FromEndpoint);
                Ok(Completion {
                    key,
                    text,
                    finish_reason,
                    usage,
                    origin: Origin::Endpoint,
                    provenance: Provenance::Endpoint,
                })
            }
            Outcome::Synchronous(reason) => {
                tracing::info!(stage = %request.stage, item = %request.item, %reason, "not answered by the batch; sending it synchronously");
                self.inner.complete(request).await
            }
            Outcome::Unauthorized(status) => Err(LlmError::Unauthorized {
                stage: request.stage,
                item: request.item.clone(),
                model: request.model.clone(),
                url: format!("{} (Batch API)", self.inner.url()),
                status,
            }),
            Outcome::Failed { attempts, reason } => {
                self.inner.accounting().record(request.stage, &request.model, Event::Failed);
                Err(LlmError::RetriesExhausted {
                    stage: request.stage,
                    item: request.item.clone(),
                    model: request.model.clone(),
                    attempts,
                    last: reason,
                })
            }
        }
    }

    /// Wait until a batch round has settled `key`, leading the round when nobody else does.
    async fn wait_for(&self, request: &ChatRequest, key: &str) -> Outcome {
        {
            let mut s = self.lock();
            if !s.done.contains_key(key) && !s.in_flight.contains(key) {
                s.pending.insert(key.to_owned(), request.clone());
                s.last_arrival = Instant::now();
            }
        }
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let lead = {
                let mut s = self.lock();
                if let Some(o) = s.done.get(key) {
                    return o.clone();
                }
                if !s.pending.contains_key(key) && !s.in_flight.contains(key) {
                    // A round was dropped mid-way: ask again.
                    s.pending.insert(key.to_owned(), request.clone());
                    s.last_arrival = Instant::now();
                }
                !std::mem::replace(&mut s.leading, true)
            };
            if lead {
                self.lead().await;
            } else {
                notified.await;
            }
        }
    }

    /// Collect until no miss has come for `collect_ms`, run the round, publish its outcomes.
    async fn lead(&self) {
        let guard = Leading(self);
        let collect = Duration::from_millis(self.config.collect_ms);
        loop {
            tokio::time::sleep(collect).await;
            if self.lock().last_arrival.elapsed() >= collect {
                break;
            }
        }
        let round = {
            let mut s = self.lock();
            let round = std::mem::take(&mut s.pending);
            s.in_flight = round.keys().cloned().collect();
            round
        };
        let mut outcomes = self.run_round(round.clone()).await;
        for key in round.keys() {
            outcomes
                .entry(key.clone())
                .or_insert_with(|| Outcome::Synchronous("no outcome from the batch".into()));
        }
        self.lock().done.extend(outcomes);
        drop(guard);
    }

    /// Settle `todo`: resume the persisted submissions that cover any of it, submit the rest.
    async fn run_round(&self, mut todo: BTreeMap<String, ChatRequest>) -> HashMap<String, Outcome> {
        let mut outcomes = HashMap::new();
        for (path, sub) in self.persisted() {
            if !sub.requests.iter().any(|r| todo.contains_key(&r.key())) {
                continue;
            }
            for r in &sub.requests {
                todo.remove(&r.key());
            }
            tracing::info!(batch = ?sub.batch_id, requests = sub.requests.len(), "resuming a batch submission");
            let jsonl = match jsonl(&sub.requests) {
                Ok(j) => j,
                Err(e) => {
                    for r in &sub.requests {
                        outcomes.insert(r.key(), Outcome::Synchronous(e.clone()));
                    }
                    continue;
                }
            };
            self.drive(Some(path), sub, jsonl, &mut outcomes).await;
        }
        if !todo.is_empty() {
            let requests: Vec<ChatRequest> = todo.into_values().collect();
            match Submission::new(requests.clone(), 0) {
                Ok((sub, jsonl)) => {
                    for r in &sub.requests {
                        self.inner.accounting().record(r.stage, &r.model, Event::Sent);
                    }
                    self.drive(None, sub, jsonl, &mut outcomes).await;
                }
                Err(e) => {
                    for r in &requests {
                        outcomes.insert(r.key(), Outcome::Synchronous(e.clone()));
                    }
                }
            }
        }
        outcomes
    }

    /// The submissions on disk (unreadable ones are skipped with a warning).
    fn persisted(&self) -> Vec<(PathBuf, Submission)> {
        let Ok(dir) = std::fs::read_dir(&self.states) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .filter_map(|p| match std::fs::read(&p).map_err(|e| e.to_string()).and_then(|b| serde_json::from_slice::<Submission>(&b).map_err(|e| e.to_string())) {
                Ok(s) if s.format == FORMAT => Some((p, s)),
                Ok(s) => {
                    tracing::warn!(path = %p.display(), format = %s.format, "skipping a batch submission of another format");
                    None
                }
                Err(e) => {
                    tracing::warn!(path = %p.display(), error = %e, "skipping an unreadable batch submission");
                    None
                }
            })
            .collect()
    }

    fn persist(&self, sub: &Submission) -> Result<PathBuf, ApiError> {
        let path = self.states.join(format!("{}.json", sub.submission));
        let mut text = serde_json::to_string_pretty(sub).unwrap_or_default();
        text.push('\n');
        coreb_base::durable::write(&path, text.as_bytes()).map_err(|e| ApiError::Failed {
            attempts: 1,
            reason: format!("writing `{}`: {e}", path.display()),
        })?;
        Ok(path)
    }

    /// Take one submission to its end: upload, create, poll, read its files, store the
    /// answers; an expired batch's unanswered requests go round again.
    async fn drive(
        &self,
        mut path: Option<PathBuf>,
        mut sub: Submission,
        mut jsonl: Vec<u8>,
        outcomes: &mut HashMap<String, Outcome>,
    ) {
        loop {
            let keys: Vec<String> = sub.requests.iter().map(ChatRequest::key).collect();
            let fail = |outcomes: &mut HashMap<String, Outcome>, o: Outcome| {
                for k in &keys {
                    outcomes.insert(k.clone(), o.clone());
                }
            };
            let batch = match self.submit(&mut path, &mut sub, &jsonl).await {
                Ok(b) => b,
                Err(e) => return fail(outcomes, e.outcome("submitting")),
            };
            let ended = match self.poll(&batch).await {
                Ok(b) => b,
                Err(e) => {
                    return fail(
                        outcomes,
                        e.outcome(&format!("polling batch `{batch}` (a rerun resumes it)")),
                    );
                }
            };
            let unanswered = match self.ingest(&ended, &sub, outcomes).await {
                Ok(u) => u,
                Err(e) => {
                    return fail(
                        outcomes,
                        e.outcome(&format!(
                            "reading the files of batch `{batch}` (a rerun resumes it)"
                        )),
                    );
                }
            };
            let leftover: Vec<ChatRequest> =
                sub.requests.iter().filter(|r| unanswered.contains(&r.key())).cloned().collect();
            let next = match ended.status.as_str() {
                "expired" if !leftover.is_empty() && sub.round < self.config.max_resubmits => {
                    Submission::new(leftover, sub.round + 1).ok()
                }
                "expired" => {
                    for r in &leftover {
                        outcomes.insert(
                            r.key(),
                            Outcome::Synchronous(format!(
                                "batch `{batch}` expired {} times",
                                sub.round + 1
                            )),
                        );
                    }
                    None
                }
                "cancelled" => {
                    for r in &leftover {
                        outcomes.insert(
                            r.key(),
                            Outcome::Failed {
                                attempts: 1,
                                reason: format!("batch `{batch}` was cancelled"),
                            },
                        );
                    }
                    None
                }
                "failed" => {
                    let why = ended
                        .errors
                        .as_ref()
                        .map(|e| snippet(e.to_string().as_bytes()))
                        .unwrap_or_default();
                    for r in &leftover {
                        outcomes.insert(
                            r.key(),
                            Outcome::Synchronous(format!("batch `{batch}` failed: {why}")),
                        );
                    }
                    None
                }
                _ => {
                    for r in &leftover {
                        outcomes.insert(
                            r.key(),
                            Outcome::Synchronous(format!("not in the output of batch `{batch}`")),
                        );
                    }
                    None
                }
            };
            // The next submission is on disk before this one goes: a crash in between
            // resumes the next, never resends what was answered.
            let next = match next {
                Some((next, next_jsonl)) => {
                    tracing::info!(batch = %batch, resubmitted = next.requests.len(), "batch expired; submitting its unanswered requests again");
                    match self.persist(&next) {
                        Ok(p) => Some((p, next, next_jsonl)),
                        Err(e) => {
                            let o = e.outcome("recording the resubmission");
                            for r in &next.requests {
                                outcomes.insert(r.key(), o.clone());
                            }
                            None
                        }
                    }
                }
                None => None,
            };
            if let Some(p) = &path
                && let Err(e) = std::fs::remove_file(p)
            {
                tracing::warn!(path = %p.display(), error = %e, "could not remove a finished batch submission");
            }
            let Some((p, n, j)) = next else { return };
            (path, sub, jsonl) = (Some(p), n, j);
        }
    }

    /// Upload and create as far as not done yet, recording each step durably; the batch id.
    async fn submit(
        &self,
        path: &mut Option<PathBuf>,
        sub: &mut Submission,
        jsonl: &[u8],
    ) -> Result<String, ApiError> {
        if let Some(id) = &sub.batch_id {
            return Ok(id.clone());
        }
        let resumed = path.is_some();
        *path = Some(self.persist(sub)?);
        if resumed && let Some(found) = self.api.find(&sub.submission).await? {
            tracing::info!(batch = %found.id, "found the batch of an interrupted submission");
            sub.batch_id = Some(found.id.clone());
            self.persist(sub)?;
            return Ok(found.id);
        }
        if sub.input_file_id.is_none() {
            sub.input_file_id = Some(self.api.upload(&sub.submission, jsonl).await?);
            self.persist(sub)?;
        }
        let file = sub.input_file_id.clone().unwrap_or_default();
        let created =
            self.api.create(&file, &sub.submission, &self.config.completion_window).await?;
        tracing::info!(batch = %created.id, requests = sub.requests.len(), "batch created");
        sub.batch_id = Some(created.id.clone());
        self.persist(sub)?;
        Ok(created.id)
    }

    /// Poll until the batch ends.
    async fn poll(&self, id: &str) -> Result<BatchObject, ApiError> {
        let interval = secs(self.config.poll_interval_secs);
        loop {
            let b = self.api.status(id).await?;
            match b.status.as_str() {
                "completed" | "expired" | "cancelled" | "failed" => return Ok(b),
                status => {
                    tracing::info!(batch = %id, %status, "batch not finished");
                    tokio::time::sleep(interval).await;
                }
            }
        }
    }

    /// Read the output and error files of an ended batch: store each answer, note each error;
    /// the keys neither file settled.
    async fn ingest(
        &self,
        batch: &BatchObject,
        sub: &Submission,
        outcomes: &mut HashMap<String, Outcome>,
    ) -> Result<BTreeSet<String>, ApiError> {
        let by_key: HashMap<String, &ChatRequest> =
            sub.requests.iter().map(|r| (r.key(), r)).collect();
        let mut unanswered: BTreeSet<String> = by_key.keys().cloned().collect();
        for file in [&batch.output_file_id, &batch.error_file_id].into_iter().flatten() {
            let bytes = self.api.content(file).await?;
            for (n, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let Some((key, settled)) = read_line(line) else {
                    tracing::warn!(file = %file, line = n + 1, "skipping a batch result line that is not JSON with a custom_id");
                    continue;
                };
                let Some(request) = by_key.get(&key) else {
                    continue;
                };
                // `batch_expired`: not run before the batch expired; it stays unanswered.
                let Some(outcome) = settled else { continue };
                if !unanswered.remove(&key) {
                    continue;
                }
                if let Outcome::Answered { text, finish_reason, usage } = &outcome {
                    let entry = StoreEntry::of(
                        request,
                        StoredResponse {
                            text: text.clone(),
                            finish_reason: finish_reason.clone(),
                            usage: *usage,
                            provenance: Provenance::Endpoint,
                        },
                    );
                    if let Err(e) = self.inner.store().put(&entry) {
                        return Err(ApiError::Failed {
                            attempts: 1,
                            reason: format!("storing the answer of `{key}`: {e}"),
                        });
                    }
                }
                outcomes.insert(key, outcome);
            }
        }
        Ok(unanswered)
    }
}

/// One line of an output or error file: its key and what it says (`None`: the request was
/// not run before the batch expired).
fn read_line(line: &str) -> Option<(String, Option<Outcome>)> {
    let v: Value = serde_json::from_str(line).ok()?;
    let key = v.get("custom_id")?.as_str()?.to_owned();
    let response = v.get("response").filter(|r| !r.is_null());
    let status = response.and_then(|r| r.get("status_code")).and_then(Value::as_u64).unwrap_or(0);
    let outcome = match (response, v.get("error").filter(|e| !e.is_null())) {
        (Some(r), None) if status == 200 => {
            let body = r.get("body").map(Value::to_string).unwrap_or_default();
            match classify(200, None, &body) {
                Attempt::Answer { text, finish_reason, usage } => {
                    Outcome::Answered { text, finish_reason, usage }
                }
                Attempt::Retry { reason, .. }
                | Attempt::Rejected { body: reason, .. }
                | Attempt::NotFound { body: reason } => Outcome::Synchronous(reason),
                Attempt::Unauthorized { status } => Outcome::Unauthorized(status),
            }
        }
        (_, Some(e)) if e.get("code").and_then(Value::as_str) == Some("batch_expired") => {
            return Some((key, None));
        }
        (_, Some(e)) => Outcome::Synchronous(format!(
            "batch error `{}`: {}",
            e.get("code").and_then(Value::as_str).unwrap_or("?"),
            e.get("message").and_then(Value::as_str).unwrap_or_default()
        )),
        (r, None) => Outcome::Synchronous(format!(
            "HTTP {status} in the batch: {}",
            snippet(
                r.and_then(|r| r.get("body")).map(Value::to_string).unwrap_or_default().as_bytes()
            )
        )),
    };
    Some((key, Some(outcome)))
}

impl LlmGateway for BatchGateway {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete_inner(request))
    }

    fn usage(&self) -> Vec<UsageRow> {
        self.inner.accounting().rows()
    }

    fn answers_used(&self, stage: crate::LlmStage) -> Vec<String> {
        self.inner.answers_used(stage)
    }

    fn verdict<'a>(
        &'a self,
        completion: &'a Completion,
        rejection: Option<&'a crate::run::RejectReason>,
    ) -> BoxFuture<'a, ()> {
        self.inner.verdict(completion, rejection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_are_read_as_answers_or_synchronous_retries() {
        let ok = r#"{"id":"r1","custom_id":"k1","response":{"status_code":200,"request_id":"q","body":{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}},"error":null}"#;
        let read = |l: &str| read_line(l).and_then(|(k, o)| Some((k, o?)));
        let (key, o) = read(ok).unwrap();
        assert_eq!(key, "k1");
        assert!(
            matches!(o, Outcome::Answered { ref text, finish_reason: FinishReason::Stop, usage: TokenUsage { prompt_tokens: 3, completion_tokens: 1 } } if text == "hi"),
            "{o:?}"
        );
        let cut = ok.replace("\"stop\"", "\"length\"");
        assert!(matches!(
            read(&cut).unwrap().1,
            Outcome::Answered { finish_reason: FinishReason::Length, .. }
        ));
        let server_error = r#"{"custom_id":"k2","response":{"status_code":500,"body":{"error":{"message":"boom"}}},"error":null}"#;
        assert!(
            matches!(read(server_error).unwrap().1, Outcome::Synchronous(ref r) if r.contains("HTTP 500") && r.contains("boom"))
        );
        let error_line = r#"{"custom_id":"k3","response":null,"error":{"code":"invalid_request","message":"bad model"}}"#;
        assert!(
            matches!(read(error_line).unwrap().1, Outcome::Synchronous(ref r) if r == "batch error `invalid_request`: bad model")
        );
        let expired = r#"{"custom_id":"k4","response":null,"error":{"code":"batch_expired","message":"not run in time"}}"#;
        assert!(
            matches!(read_line(expired), Some((ref k, None)) if k == "k4"),
            "left for the resubmission"
        );
        assert!(read_line("{\"custom_id\": 3}").is_none() && read_line("not json").is_none());
    }

    #[test]
    fn the_state_dir_sits_beside_the_store() {
        assert_eq!(state_dir_of(Path::new("/a/b/store")), Path::new("/a/b/store.batches"));
    }
}
