//! Client for OpenAI-compatible `POST /v1/embeddings`, Cohere/Jina/vLLM-style `POST /v1/rerank`
//! and vLLM's `POST /v1/score`, with an on-disk embedding cache.
//!
//! - Texts are embedded in batches of `batch_size`, up to `concurrency` requests in flight.
//!   Identical inputs are sent once per run (an in-memory table keyed like the cache), so a
//!   task whose queries repeat corpus texts, or two tasks sharing a corpus, cost nothing more.
//! - Each vector is cached under [`cache_key`]: sha256 over the endpoint, the model, the
//!   requested `dimensions`, the normalisation, the provider fields of the request
//!   (`input_type`, `task` …) and the text as sent (prompt included), one small binary file
//!   (magic `CRBE`, format version, dimension, little-endian `f32`s). Another server, model,
//!   prompt or setting never reuses a vector; `cache_dir = None` turns the cache off.
//! - Every request goes through the LLM gateway's retry loop and limits
//!   ([`coreb_http::retry`]): 429, 408, 409, 425, 5xx, timeouts, refused connections
//!   and cut bodies are retried with exponential backoff and jitter, honouring `Retry-After`
//!   (the same parser as the gateway); 401/403 and other 4xx fail at once with the start of the
//!   body.
//! - The API key is passed in by the caller (read from the environment at the edge); it is
//!   sent only to `base_url`: redirects are never followed (a 3xx is an error naming where it
//!   pointed), and it is never logged or stored.
//!
//! Does NOT talk to chat/completion endpoints (that is the LLM gateway's job).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use coreb_http::RetryConfig;
use coreb_http::retry::{
    GaveUp, Limits, Step, is_retryable_status, retry_after, send_with_retries,
};

/// Errors of the embedding/rerank client.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The HTTP client could not be built.
    #[error("building the HTTP client")]
    Client(#[source] reqwest::Error),
    /// A transport error retrying cannot help.
    #[error("`{url}`: request failed after {attempts} attempts")]
    Transport {
        /// Endpoint.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The error.
        #[source]
        source: reqwest::Error,
    },
    /// Every attempt failed with a retryable error.
    #[error("`{url}`: gave up after {attempts} attempts; last error: {last}")]
    RetriesExhausted {
        /// Endpoint.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: String,
    },
    /// The server answered with an error status that retrying cannot help.
    #[error("`{url}`: HTTP {status} after {attempts} attempts: {body}")]
    Status {
        /// Endpoint.
        url: String,
        /// HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// Start of the response body (or where a redirect pointed).
        body: String,
    },
    /// The response body is not the expected JSON.
    #[error("`{url}`: unexpected response: {why}")]
    Response {
        /// Endpoint.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// The cache could not be read or written (the error names the path).
    #[error("embedding cache")]
    Cache(#[source] std::io::Error),
}

/// Client settings.
#[derive(Debug, Clone)]
pub struct EmbedConfig {
    /// Base URL including `/v1`, without a trailing slash.
    pub base_url: String,
    /// Bearer token, if the endpoint needs one (sent to `base_url` only).
    pub api_key: Option<String>,
    /// Texts per embeddings request.
    pub batch_size: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Requests per minute (0: unlimited).
    pub requests_per_minute: u64,
    /// Retry policy (the LLM gateway's: attempts, backoff, `Retry-After` cap).
    pub retry: RetryConfig,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Embedding cache directory (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// The vectors asked for and kept.
    pub vectors: VectorForm,
}

/// The form of the vectors a client asks for and keeps; part of every embedding's cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorForm {
    /// `dimensions` asked of the endpoint (OpenAI's Matryoshka truncation); `None`: not sent.
    pub dimensions: Option<u32>,
    /// L2-normalise every vector (cosine similarity); else vectors stay as returned (dot product).
    pub normalize: bool,
}

impl EmbedConfig {
    /// Defaults for `base_url`: batches of 64, 4 requests in flight, the gateway's retry
    /// policy, 120 s timeout, no cache, normalised vectors.
    pub fn new(base_url: impl Into<String>) -> EmbedConfig {
        EmbedConfig {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            batch_size: 64,
            concurrency: 4,
            requests_per_minute: 0,
            retry: RetryConfig::default(),
            timeout: Duration::from_secs(120),
            cache_dir: None,
            vectors: VectorForm { dimensions: None, normalize: true },
        }
    }
}

/// Counters of what the client did.
#[derive(Debug, Default)]
pub struct EmbedStats {
    /// HTTP attempts sent (including retries).
    pub requests: AtomicU64,
    /// Retried attempts.
    pub retries: AtomicU64,
    /// Distinct texts served from the disk cache.
    pub cache_hits: AtomicU64,
    /// Texts that repeated a text already embedded in this run (sent once).
    pub duplicates: AtomicU64,
    /// Texts embedded by the endpoint.
    pub embedded: AtomicU64,
}

/// Extra JSON fields of an embeddings request: the provider's input type for one side
/// (`input_type = "search_query"` for Cohere, `"query"` for Voyage and NVIDIA, `task =
/// "retrieval.query"` for Jina).
pub type RequestFields = BTreeMap<String, String>;

/// The client.
#[derive(Debug)]
pub struct EmbedClient {
    cfg: EmbedConfig,
    http: reqwest::Client,
    limits: Limits,
    memo: Mutex<HashMap<String, std::sync::Arc<Vec<f32>>>>,
    /// What the client did so far.
    pub stats: EmbedStats,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

#[derive(Deserialize)]
struct RerankResponse {
    results: Vec<RerankItem>,
}

#[derive(Deserialize)]
struct RerankItem {
    index: usize,
    #[serde(alias = "score")]
    relevance_score: f64,
}

#[derive(Deserialize)]
struct ScoreResponse {
    data: Vec<ScoreItem>,
}

#[derive(Deserialize)]
struct ScoreItem {
    index: usize,
    score: f64,
}

const MAGIC: &[u8; 4] = b"CRBE";
const VERSION: u32 = 2;

/// What makes two embeddings the same: everything but the text.
#[derive(Debug, Clone, Copy)]
pub struct KeyParts<'a> {
    /// The endpoint's base URL.
    pub endpoint: &'a str,
    /// The model.
    pub model: &'a str,
    /// `dimensions` asked, normalised or not.
    pub vectors: VectorForm,
    /// Provider fields of the request.
    pub fields: &'a RequestFields,
}

/// The cache key of one text: hex sha256 over the format version, endpoint, model,
/// dimensions, normalisation, request fields and the text, each length-prefixed.
pub fn cache_key(parts: &KeyParts<'_>, text: &str) -> String {
    let mut h = Sha256::new();
    let mut put = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    put(&VERSION.to_le_bytes());
    put(parts.endpoint.as_bytes());
    put(parts.model.as_bytes());
    put(parts.vectors.dimensions.map_or_else(String::new, |d| d.to_string()).as_bytes());
    put(if parts.vectors.normalize { b"l2" } else { b"raw" });
    for (k, v) in parts.fields {
        put(k.as_bytes());
        put(v.as_bytes());
    }
    put(text.as_bytes());
    hex::encode(h.finalize())
}

/// A cache entry: magic, format version, dimension, little-endian `f32`s.
fn encode_entry(v: &[f32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(12 + 4 * v.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for x in v {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes
}

fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

impl EmbedClient {
    /// A client for `cfg`.
    pub fn new(cfg: EmbedConfig) -> Result<EmbedClient, EmbedError> {
        let http = coreb_http::client_builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(30)))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(EmbedError::Client)?;
        let limits = Limits::new(cfg.concurrency, cfg.requests_per_minute, 0);
        Ok(EmbedClient {
            cfg,
            http,
            limits,
            memo: Mutex::new(HashMap::new()),
            stats: EmbedStats::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &EmbedConfig {
        &self.cfg
    }

    fn cache_path(&self, key: &str) -> Option<PathBuf> {
        self.cfg.cache_dir.as_ref().map(|d| d.join(&key[..2]).join(format!("{key}.emb")))
    }

    fn cache_get(&self, key: &str) -> Result<Option<Vec<f32>>, EmbedError> {
        let Some(path) = self.cache_path(key) else {
            return Ok(None);
        };
        let bytes = match fs_err::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(EmbedError::Cache(e)),
        };
        if bytes.len() < 12 || &bytes[..4] != MAGIC || bytes[4..8] != VERSION.to_le_bytes() {
            return Ok(None);
        }
        let dim = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        if bytes.len() != 12 + 4 * dim {
            return Ok(None);
        }
        Ok(Some(
            bytes[12..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ))
    }

    /// Write the cache entries of `vectors` (durably: a torn entry never appears under its
    /// name), off the async threads since every entry is fsynced.
    async fn cache_put(&self, vectors: &[(String, Vec<f32>)]) -> Result<(), EmbedError> {
        let entries: Vec<(PathBuf, Vec<u8>)> = vectors
            .iter()
            .filter_map(|(key, v)| Some((self.cache_path(key)?, encode_entry(v))))
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        tokio::task::spawn_blocking(move || {
            entries.iter().try_for_each(|(path, bytes)| coreb_base::durable::write(path, bytes))
        })
        .await
        .map_err(|e| EmbedError::Cache(std::io::Error::other(e)))?
        .map_err(EmbedError::Cache)
    }

    /// Embeddings of `texts` (in order) with no provider fields; see [`EmbedClient::embed_with`].
    pub async fn embed(&self, model: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let out = self.embed_with(model, &RequestFields::new(), texts, &|_| {}).await?;
        Ok(out.into_iter().map(|v| v.as_ref().clone()).collect())
    }

    /// Embeddings of `texts` (in order), each distinct text sent once, from the run's memory
    /// or the cache where possible; `fields` go into every request; `progress` is told how
    /// many texts each finished request (or cache lookup) settled.
    pub async fn embed_with(
        &self,
        model: &str,
        fields: &RequestFields,
        texts: &[String],
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<std::sync::Arc<Vec<f32>>>, EmbedError> {
        let parts =
            KeyParts { endpoint: &self.cfg.base_url, model, vectors: self.cfg.vectors, fields };
        let keys: Vec<String> = texts.iter().map(|t| cache_key(&parts, t)).collect();
        // First occurrence of each key, in order.
        let mut first: HashMap<&str, usize> = HashMap::new();
        let mut distinct = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            if first.insert(k.as_str(), i).is_none() {
                distinct.push(i);
            }
        }
        self.stats.duplicates.fetch_add((texts.len() - distinct.len()) as u64, Ordering::Relaxed);
        let mut missing = Vec::new();
        let mut settled = 0u64;
        for &i in &distinct {
            if self.memo.lock().map_err(|_| self.poisoned())?.contains_key(&keys[i]) {
                settled += 1;
                continue;
            }
            match self.cache_get(&keys[i])? {
                Some(v) => {
                    self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                    self.memo
                        .lock()
                        .map_err(|_| self.poisoned())?
                        .insert(keys[i].clone(), std::sync::Arc::new(v));
                    settled += 1;
                }
                None => missing.push(i),
            }
        }
        progress(settled + (texts.len() - distinct.len()) as u64);
        let url = format!("{}/embeddings", self.cfg.base_url);
        let batches: Vec<&[usize]> = missing.chunks(self.cfg.batch_size.max(1)).collect();
        let mut stream = stream::iter(batches.into_iter().map(|batch| {
            let url = url.clone();
            let keys = &keys;
            async move {
                let input: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
                let mut body = serde_json::json!({ "model": model, "input": input });
                if let Some(d) = self.cfg.vectors.dimensions {
                    body["dimensions"] = d.into();
                }
                for (k, v) in fields {
                    body[k.as_str()] = v.as_str().into();
                }
                let estimate = input.iter().map(|t| t.len() as u64 / 4 + 1).sum();
                let bytes = self.post(&url, &body, estimate).await?;
                let resp: EmbeddingsResponse = parse_response(&url, &bytes)?;
                if resp.data.len() != batch.len() {
                    return Err(EmbedError::Response {
                        url,
                        why: format!("{} embeddings for {} inputs", resp.data.len(), batch.len()),
                    });
                }
                let mut got: Vec<Option<Vec<f32>>> = vec![None; batch.len()];
                for (pos, item) in resp.data.into_iter().enumerate() {
                    let slot = item.index.unwrap_or(pos);
                    match got.get_mut(slot) {
                        Some(s @ None) => *s = Some(item.embedding),
                        _ => {
                            return Err(EmbedError::Response {
                                url,
                                why: format!("index {slot} out of range or repeated"),
                            });
                        }
                    }
                }
                let mut out = Vec::with_capacity(batch.len());
                for (&i, v) in batch.iter().zip(got) {
                    let mut v = v.ok_or_else(|| EmbedError::Response {
                        url: url.clone(),
                        why: "an input got no embedding".into(),
                    })?;
                    if self.cfg.vectors.normalize {
                        normalize(&mut v);
                    }
                    out.push((keys[i].clone(), v));
                }
                self.cache_put(&out).await?;
                Ok::<_, EmbedError>(out)
            }
        }))
        .buffer_unordered(self.cfg.concurrency.max(1));
        while let Some(done) = stream.next().await {
            let done = done?;
            self.stats.embedded.fetch_add(done.len() as u64, Ordering::Relaxed);
            progress(done.len() as u64);
            let mut memo = self.memo.lock().map_err(|_| self.poisoned())?;
            for (k, v) in done {
                memo.insert(k, std::sync::Arc::new(v));
            }
        }
        let memo = self.memo.lock().map_err(|_| self.poisoned())?;
        keys.iter()
            .enumerate()
            .map(|(i, k)| {
                memo.get(k).cloned().ok_or_else(|| EmbedError::Response {
                    url: url.clone(),
                    why: format!("no embedding for input {i}"),
                })
            })
            .collect()
    }

    fn poisoned(&self) -> EmbedError {
        EmbedError::Response {
            url: self.cfg.base_url.clone(),
            why: "a request task panicked".into(),
        }
    }

    /// Rerank `documents` for `query` through `/rerank` (Cohere, Jina, vLLM): `(document
    /// index, relevance score)` for every document.
    pub async fn rerank(
        &self,
        model: &str,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<(usize, f64)>, EmbedError> {
        let body = serde_json::json!({ "model": model, "query": query, "documents": documents, "top_n": documents.len() });
        self.scores("rerank", &body, query, documents, |resp: RerankResponse| {
            resp.results.into_iter().map(|r| (r.index, r.relevance_score)).collect()
        })
        .await
    }

    /// Score `documents` against `query` through vLLM's `/score` (`text_1`, `text_2`):
    /// `(document index, score)` for every document.
    pub async fn score(
        &self,
        model: &str,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<(usize, f64)>, EmbedError> {
        let body = serde_json::json!({ "model": model, "text_1": query, "text_2": documents });
        self.scores("score", &body, query, documents, |resp: ScoreResponse| {
            resp.data.into_iter().map(|r| (r.index, r.score)).collect()
        })
        .await
    }

    /// POST a request that scores `documents` against `query` to `<base_url>/<endpoint>` and
    /// read the answer (`R`, turned into `(document index, score)` by `pairs`): a score for
    /// every document, each exactly once.
    async fn scores<R: serde::de::DeserializeOwned>(
        &self,
        endpoint: &str,
        body: &serde_json::Value,
        query: &str,
        documents: &[String],
        pairs: impl FnOnce(R) -> Vec<(usize, f64)>,
    ) -> Result<Vec<(usize, f64)>, EmbedError> {
        let url = format!("{}/{endpoint}", self.cfg.base_url);
        let bytes = self.post(&url, body, estimate(query, documents)).await?;
        let resp: R = parse_response(&url, &bytes)?;
        every_index(&url, pairs(resp), documents.len())
    }

    /// One POST under the gateway's retry loop and this client's limits.
    async fn post(
        &self,
        url: &str,
        body: &serde_json::Value,
        estimated_tokens: u64,
    ) -> Result<Vec<u8>, EmbedError> {
        let payload = serde_json::to_vec(body)
            .map_err(|e| EmbedError::Response { url: url.to_owned(), why: e.to_string() })?;
        let outcome = send_with_retries(&self.cfg.retry, &self.limits, estimated_tokens, |attempt| {
            let payload = payload.clone();
            async move {
                self.stats.requests.fetch_add(1, Ordering::Relaxed);
                if attempt > 1 {
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                }
                let mut req = self.http.post(url).header("content-type", "application/json").body(payload);
                if let Some(key) = &self.cfg.api_key {
                    req = req.header("authorization", format!("Bearer {key}"));
                }
                let resp = match req.send().await {
                    Ok(r) => r,
                    Err(e) if e.is_timeout() || e.is_connect() || e.is_request() || e.is_body() => {
                        return Step::Retry { reason: coreb_base::errors::chain(&e), after: None };
                    }
                    Err(source) => return Step::Fail(EmbedError::Transport { url: url.to_owned(), attempts: attempt, source }),
                };
                let status = resp.status().as_u16();
                let after = retry_after(resp.headers());
                let location = resp.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
                let bytes = resp.bytes().await;
                match (status, bytes) {
                    (200..=299, Ok(b)) => Step::Done(b.to_vec()),
                    (200..=299, Err(e)) => Step::Retry { reason: format!("body cut: {}", coreb_base::errors::chain(&e)), after },
                    (300..=399, _) => Step::Fail(EmbedError::Status {
                        url: url.to_owned(),
                        status,
                        attempts: attempt,
                        body: format!("redirect to `{}` not followed (the key goes to the configured base URL only); point the base URL there", location.unwrap_or_default()),
                    }),
                    (s, b) => {
                        let text: String = b.map(|b| String::from_utf8_lossy(&b).chars().take(300).collect()).unwrap_or_default();
                        if is_retryable_status(s) {
                            Step::Retry { reason: format!("HTTP {s}: {text}"), after }
                        } else {
                            Step::Fail(EmbedError::Status { url: url.to_owned(), status: s, attempts: attempt, body: text })
                        }
                    }
                }
            }
        })
        .await;
        outcome.map_err(|g| match g {
            GaveUp::Failed(e) => e,
            GaveUp::Exhausted { attempts, last } => {
                EmbedError::RetriesExhausted { url: url.to_owned(), attempts, last }
            }
        })
    }
}

fn estimate(query: &str, documents: &[String]) -> u64 {
    (query.len() + documents.iter().map(String::len).sum::<usize>()) as u64 / 4 + 1
}

/// An endpoint's JSON answer, or why it is not the one expected.
fn parse_response<R: serde::de::DeserializeOwned>(
    url: &str,
    bytes: &[u8],
) -> Result<R, EmbedError> {
    serde_json::from_slice(bytes)
        .map_err(|e| EmbedError::Response { url: url.to_owned(), why: e.to_string() })
}

/// Check that a reranker scored every document exactly once.
fn every_index(
    url: &str,
    scored: Vec<(usize, f64)>,
    n: usize,
) -> Result<Vec<(usize, f64)>, EmbedError> {
    let mut seen = vec![false; n];
    for &(i, _) in &scored {
        match seen.get_mut(i) {
            Some(s @ false) => *s = true,
            _ => {
                return Err(EmbedError::Response {
                    url: url.to_owned(),
                    why: format!("index {i} out of range or repeated"),
                });
            }
        }
    }
    if scored.len() != n {
        return Err(EmbedError::Response {
            url: url.to_owned(),
            why: format!("{} scores for {n} documents", scored.len()),
        });
    }
    Ok(scored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cache_roundtrip_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = EmbedConfig::new("http://127.0.0.1:9/v1/");
        assert_eq!(cfg.base_url, "http://127.0.0.1:9/v1");
        cfg.cache_dir = Some(dir.path().to_owned());
        let c = EmbedClient::new(cfg).unwrap();
        let none = RequestFields::new();
        let query = RequestFields::from([("input_type".to_owned(), "query".to_owned())]);
        let parts = |endpoint, model, dimensions, normalize, fields| KeyParts {
            endpoint,
            model,
            vectors: VectorForm { dimensions, normalize },
            fields,
        };
        let k = cache_key(&parts("http://a/v1", "m", None, true, &none), "hello");
        assert_ne!(k, cache_key(&parts("http://a/v1", "m2", None, true, &none), "hello"));
        assert_ne!(k, cache_key(&parts("http://b/v1", "m", None, true, &none), "hello"));
        assert_ne!(k, cache_key(&parts("http://a/v1", "m", Some(256), true, &none), "hello"));
        assert_ne!(k, cache_key(&parts("http://a/v1", "m", None, false, &none), "hello"));
        assert_ne!(k, cache_key(&parts("http://a/v1", "m", None, true, &query), "hello"));
        assert_ne!(k, cache_key(&parts("http://a/v1", "m", None, true, &none), "query: hello"));
        assert_eq!(c.cache_get(&k).unwrap(), None);
        c.cache_put(&[(k.clone(), vec![1.0, -2.5])]).await.unwrap();
        assert_eq!(c.cache_get(&k).unwrap(), Some(vec![1.0, -2.5]));
    }

    #[test]
    fn rerankers_must_score_every_document_once() {
        assert!(every_index("u", vec![(1, 0.5), (0, 0.1)], 2).is_ok());
        assert!(
            every_index("u", vec![(1, 0.5)], 2).unwrap_err().to_string().contains("1 scores for 2")
        );
        assert!(
            every_index("u", vec![(1, 0.5), (1, 0.4)], 2)
                .unwrap_err()
                .to_string()
                .contains("repeated")
        );
        assert!(every_index("u", vec![(2, 0.5), (0, 0.4)], 2).is_err());
    }
}
