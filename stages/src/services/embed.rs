//! Client for OpenAI-compatible `POST /v1/embeddings` and Jina/Cohere-style `POST /v1/rerank`
//! endpoints, with an on-disk embedding cache and bounded retries.
//!
//! - Embeddings are requested in batches; each vector is cached under
//!   `sha256(model, text)` (one small binary file: magic `CRBE`, format version, dimension,
//!   little-endian `f32`s), so a rerun sends nothing for texts already embedded.
//! - 429, 5xx, timeouts and connection errors are retried up to `max_retries` times with
//!   exponential backoff (deterministic jitter), honouring a `Retry-After` header in seconds.
//!   Other statuses fail at once with the start of the body.
//! - The API key is passed in by the caller (read from the environment at the edge) and is
//!   never logged or stored.
//!
//! Does NOT talk to chat/completion endpoints (that is the LLM gateway's job) and does NOT
//! rate-limit beyond the retries.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Errors of the embedding/rerank client.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The HTTP client could not be built.
    #[error("building the HTTP client")]
    Client(#[source] reqwest::Error),
    /// The request failed after every retry (transport error).
    #[error("`{url}`: request failed after {attempts} attempts")]
    Transport {
        /// Endpoint.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// Last error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("`{url}`: HTTP {status} after {attempts} attempts: {body}")]
    Status {
        /// Endpoint.
        url: String,
        /// HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// Start of the response body.
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
    /// Bearer token, if the endpoint needs one.
    pub api_key: Option<String>,
    /// Texts per embeddings request.
    pub batch_size: usize,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff delay.
    pub initial_backoff: Duration,
    /// Longest backoff delay (also caps `Retry-After`).
    pub max_backoff: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Embedding cache directory (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
}

impl EmbedConfig {
    /// Defaults for `base_url`: batches of 64, 5 retries, 0.5 s → 30 s backoff, 120 s timeout.
    pub fn new(base_url: impl Into<String>) -> EmbedConfig {
        EmbedConfig {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            batch_size: 64,
            max_retries: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            timeout: Duration::from_secs(120),
            cache_dir: None,
        }
    }
}

/// Counters of what the client did.
#[derive(Debug, Default)]
pub struct EmbedStats {
    /// HTTP requests sent (including retries).
    pub requests: AtomicU64,
    /// Retried attempts.
    pub retries: AtomicU64,
    /// Texts served from the cache.
    pub cache_hits: AtomicU64,
    /// Texts embedded by the endpoint.
    pub embedded: AtomicU64,
}

/// The client.
#[derive(Debug)]
pub struct EmbedClient {
    cfg: EmbedConfig,
    http: reqwest::Client,
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

const MAGIC: &[u8; 4] = b"CRBE";
const VERSION: u32 = 1;

/// The cache key of `(model, text)`: hex sha256 over the model, a NUL byte and the text.
pub fn cache_key(model: &str, text: &str) -> String {
    let mut h = Sha256::new();
    h.update(model.as_bytes());
    h.update([0u8]);
    h.update(text.as_bytes());
    hex::encode(h.finalize())
}

impl EmbedClient {
    /// A client for `cfg`.
    pub fn new(cfg: EmbedConfig) -> Result<EmbedClient, EmbedError> {
        let http = reqwest::Client::builder().timeout(cfg.timeout).build().map_err(EmbedError::Client)?;
        Ok(EmbedClient { cfg, http, stats: EmbedStats::default() })
    }

    fn cache_path(&self, key: &str) -> Option<PathBuf> {
        self.cfg.cache_dir.as_ref().map(|d| d.join(&key[..2]).join(format!("{key}.emb")))
    }

    fn cache_get(&self, key: &str) -> Result<Option<Vec<f32>>, EmbedError> {
        let Some(path) = self.cache_path(key) else { return Ok(None) };
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
        Ok(Some(bytes[12..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()))
    }

    fn cache_put(&self, key: &str, v: &[f32]) -> Result<(), EmbedError> {
        let Some(path) = self.cache_path(key) else { return Ok(()) };
        let dir = path.parent().unwrap_or(Path::new("."));
        fs_err::create_dir_all(dir).map_err(EmbedError::Cache)?;
        let mut bytes = Vec::with_capacity(12 + 4 * v.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&(v.len() as u32).to_le_bytes());
        for x in v {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let tmp = path.with_extension("emb.tmp");
        fs_err::write(&tmp, bytes).map_err(EmbedError::Cache)?;
        fs_err::rename(&tmp, &path).map_err(EmbedError::Cache)
    }

    /// Embeddings of `texts` (in order), from the cache where possible.
    pub async fn embed(&self, model: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<String> = texts.iter().map(|t| cache_key(model, t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        for k in &keys {
            out.push(self.cache_get(k)?);
        }
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        self.stats.cache_hits.fetch_add((texts.len() - missing.len()) as u64, Ordering::Relaxed);
        let url = format!("{}/embeddings", self.cfg.base_url);
        for batch in missing.chunks(self.cfg.batch_size.max(1)) {
            let input: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            let body = serde_json::json!({ "model": model, "input": input });
            let bytes = self.post(&url, &body).await?;
            let resp: EmbeddingsResponse = serde_json::from_slice(&bytes)
                .map_err(|e| EmbedError::Response { url: url.clone(), why: e.to_string() })?;
            if resp.data.len() != batch.len() {
                return Err(EmbedError::Response {
                    url,
                    why: format!("{} embeddings for {} inputs", resp.data.len(), batch.len()),
                });
            }
            for (pos, item) in resp.data.into_iter().enumerate() {
                let slot = item.index.unwrap_or(pos);
                let Some(&i) = batch.get(slot) else {
                    return Err(EmbedError::Response { url, why: format!("index {slot} out of range") });
                };
                self.cache_put(&keys[i], &item.embedding)?;
                out[i] = Some(item.embedding);
            }
            self.stats.embedded.fetch_add(batch.len() as u64, Ordering::Relaxed);
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| EmbedError::Response { url: url.clone(), why: format!("no embedding for input {i}") }))
            .collect()
    }

    /// Rerank `documents` for `query`: `(document index, relevance score)` as the endpoint
    /// returns them.
    pub async fn rerank(&self, model: &str, query: &str, documents: &[String]) -> Result<Vec<(usize, f64)>, EmbedError> {
        let url = format!("{}/rerank", self.cfg.base_url);
        let body = serde_json::json!({ "model": model, "query": query, "documents": documents, "top_n": documents.len() });
        let bytes = self.post(&url, &body).await?;
        let resp: RerankResponse = serde_json::from_slice(&bytes)
            .map_err(|e| EmbedError::Response { url: url.clone(), why: e.to_string() })?;
        if let Some(bad) = resp.results.iter().find(|r| r.index >= documents.len()) {
            return Err(EmbedError::Response { url, why: format!("index {} out of range", bad.index) });
        }
        Ok(resp.results.into_iter().map(|r| (r.index, r.relevance_score)).collect())
    }

    async fn post(&self, url: &str, body: &serde_json::Value) -> Result<Vec<u8>, EmbedError> {
        let payload = serde_json::to_vec(body).map_err(|e| EmbedError::Response { url: url.to_owned(), why: e.to_string() })?;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.stats.requests.fetch_add(1, Ordering::Relaxed);
            let mut req = self.http.post(url).header("content-type", "application/json").body(payload.clone());
            if let Some(key) = &self.cfg.api_key {
                req = req.header("authorization", format!("Bearer {key}"));
            }
            let retry_after;
            match req.send().await {
                Ok(resp) => {
                    let status = resp.status();
                    retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .map(|s| Duration::from_secs_f64(s.max(0.0)));
                    let bytes = resp.bytes().await.map(|b| b.to_vec());
                    if status.is_success() {
                        match bytes {
                            Ok(b) => return Ok(b),
                            Err(e) if attempt > self.cfg.max_retries => {
                                return Err(EmbedError::Transport { url: url.to_owned(), attempts: attempt, source: e });
                            }
                            Err(_) => {}
                        }
                    } else {
                        let retryable = status.as_u16() == 429 || status.is_server_error();
                        if !retryable || attempt > self.cfg.max_retries {
                            let text = bytes.map(|b| String::from_utf8_lossy(&b).chars().take(300).collect()).unwrap_or_default();
                            return Err(EmbedError::Status { url: url.to_owned(), status: status.as_u16(), attempts: attempt, body: text });
                        }
                    }
                }
                Err(e) => {
                    retry_after = None;
                    let retryable = e.is_timeout() || e.is_connect() || e.is_request();
                    if !retryable || attempt > self.cfg.max_retries {
                        return Err(EmbedError::Transport { url: url.to_owned(), attempts: attempt, source: e });
                    }
                }
            }
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(self.backoff(attempt, retry_after)).await;
        }
    }

    /// Delay before retry `attempt` (1-based): `Retry-After` when given, else exponential with
    /// ±25 % jitter derived from the attempt number; both capped at `max_backoff`.
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(self.cfg.max_backoff);
        }
        let base = self.cfg.initial_backoff.as_secs_f64() * 2f64.powi(attempt.saturating_sub(1).min(20) as i32);
        let mut x = u64::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 29;
        let jitter = 0.75 + 0.5 * ((x % 1000) as f64 / 1000.0);
        Duration::from_secs_f64((base * jitter).min(self.cfg.max_backoff.as_secs_f64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_roundtrip_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = EmbedConfig::new("http://127.0.0.1:9/v1/");
        assert_eq!(cfg.base_url, "http://127.0.0.1:9/v1");
        cfg.cache_dir = Some(dir.path().to_owned());
        let c = EmbedClient::new(cfg).unwrap();
        let k = cache_key("m", "hello");
        assert_ne!(k, cache_key("m2", "hello"));
        assert_eq!(c.cache_get(&k).unwrap(), None);
        c.cache_put(&k, &[1.0, -2.5]).unwrap();
        assert_eq!(c.cache_get(&k).unwrap(), Some(vec![1.0, -2.5]));
    }

    #[test]
    fn backoff_honours_retry_after_and_caps() {
        let c = EmbedClient::new(EmbedConfig::new("http://x/v1")).unwrap();
        assert_eq!(c.backoff(1, Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(c.backoff(1, Some(Duration::from_secs(999))), Duration::from_secs(30));
        assert!(c.backoff(20, None) <= Duration::from_secs(30));
        assert!(c.backoff(1, None) < c.backoff(3, None));
    }
}
