//! `fetch`: bring every source file of a manifest onto local disk with its sha256.
//!
//! HTTP(S) sources are streamed to `<dir>/<name>.part` with reqwest, hashed while streaming,
//! resumed with a `Range` request after a cut connection or an interrupted run, retried with
//! exponential backoff and jitter (honouring `Retry-After`), checked against the expected
//! sha256 when one is given, and only then renamed to `<dir>/<name>`. Local paths and
//! `file://` URLs are hashed in place, not copied (LiveCodeBench files are large).
//!
//! This is the one stage whose job is I/O. It does not decode anything.

use std::path::{Path, PathBuf};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures_util::StreamExt;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::hashing::{is_sha256_hex, sha256_file};

/// `[stages.fetch]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// Retries after the first attempt, per file.
    pub retries: u32,
    /// First backoff delay (ms); doubled each retry, with jitter.
    pub initial_backoff_ms: u64,
    /// Longest backoff delay (ms).
    pub max_backoff_ms: u64,
    /// Connection timeout (s).
    pub connect_timeout_secs: u64,
    /// Longest silence while reading a body (s) before the attempt counts as failed.
    pub read_timeout_secs: u64,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig { retries: 8, initial_backoff_ms: 500, max_backoff_ms: 30_000, connect_timeout_secs: 30, read_timeout_secs: 60 }
    }
}

/// Where a source lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// An `http://` or `https://` URL.
    Http(String),
    /// A local file (from a path or a `file://` URL), absolute.
    Local(PathBuf),
}

/// A resolved source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// Short name; the downloaded file is called so.
    pub name: String,
    /// Where to read it.
    pub location: Location,
    /// Expected sha256, lower-case hex.
    pub sha256: Option<String>,
}

impl Source {
    /// Resolve a manifest entry; relative paths are taken from `base`.
    pub fn resolve(name: &str, url: &str, sha256: Option<&str>, base: &Path) -> Result<Source, String> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) || name.starts_with('.') {
            return Err(format!("`name`: `{name}` must be letters, digits, `.`, `_` or `-`"));
        }
        if let Some(h) = sha256
            && !is_sha256_hex(h) {
                return Err(format!("`sha256`: `{h}` is not a 64-digit hex sha256"));
            }
        let location = if url.starts_with("http://") || url.starts_with("https://") {
            Location::Http(url.to_owned())
        } else if let Some(path) = url.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(format!("`url`: `{url}`: a file:// URL needs an absolute path"));
            }
            Location::Local(PathBuf::from(path))
        } else if url.contains("://") {
            return Err(format!("`url`: `{url}`: only http, https and file URLs are supported"));
        } else {
            Location::Local(base.join(url))
        };
        Ok(Source { name: name.to_owned(), location, sha256: sha256.map(str::to_ascii_lowercase) })
    }
}

/// A source on local disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    /// The source's name.
    pub name: String,
    /// The local file.
    pub path: PathBuf,
    /// Its sha256.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
    /// Bytes transferred over the network by this run (0 for local files and cache hits).
    pub downloaded: u64,
}

/// Why a source could not be fetched.
#[derive(Debug, Error)]
pub enum FetchError {
    /// A local file is missing or unreadable.
    #[error("source `{name}`: `{}`", path.display())]
    Local {
        /// Source name.
        name: String,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Writing the download failed.
    #[error("source `{name}`: writing `{}`", path.display())]
    Write {
        /// Source name.
        name: String,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The server answered with a status that retrying will not change (404, 401 …).
    #[error("source `{name}`: `{url}` answered HTTP {status}")]
    Status {
        /// Source name.
        name: String,
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// Every attempt failed.
    #[error("source `{name}`: `{url}`: gave up after {attempts} attempts; last error: {last}")]
    GaveUp {
        /// Source name.
        name: String,
        /// The URL.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// The file's sha256 is not the one the manifest expects.
    #[error("source `{name}`: checksum mismatch for `{}`: expected sha256 `{expected}`, got `{actual}`", path.display())]
    Checksum {
        /// Source name.
        name: String,
        /// The file checked (a failed download is removed).
        path: PathBuf,
        /// From the manifest.
        expected: String,
        /// Computed.
        actual: String,
    },
    /// The HTTP client could not be built.
    #[error("building the HTTP client")]
    Client(#[source] reqwest::Error),
}

/// Fetch one source. HTTP downloads go to `dir`; local files stay where they are.
pub async fn fetch_source(config: &FetchConfig, source: &Source, dir: &Path, bar: &ProgressBar) -> Result<Fetched, FetchError> {
    match &source.location {
        Location::Local(path) => fetch_local(source, path, bar).await,
        Location::Http(url) => fetch_http(config, source, url, dir, bar).await,
    }
}

async fn fetch_local(source: &Source, path: &Path, bar: &ProgressBar) -> Result<Fetched, FetchError> {
    let local = |e| FetchError::Local { name: source.name.clone(), path: path.to_owned(), source: e };
    let meta = tokio::fs::metadata(path).await.map_err(local)?;
    bar.set_length(meta.len());
    let p = path.to_owned();
    let sha = tokio::task::spawn_blocking(move || sha256_file(&p))
        .await
        .map_err(|e| local(std::io::Error::other(e)))?
        .map_err(local)?;
    bar.set_position(meta.len());
    check(source, path, &sha)?;
    Ok(Fetched { name: source.name.clone(), path: path.to_owned(), sha256: sha, bytes: meta.len(), downloaded: 0 })
}

fn check(source: &Source, path: &Path, actual: &str) -> Result<(), FetchError> {
    match &source.sha256 {
        Some(expected) if expected != actual => Err(FetchError::Checksum {
            name: source.name.clone(),
            path: path.to_owned(),
            expected: expected.clone(),
            actual: actual.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// What one attempt at a download ended with.
enum Attempt {
    Done,
    /// Worth another try (cut connection, 429, 5xx, timeout); maybe after `Retry-After`.
    Retry { reason: String, after: Option<Duration> },
}

async fn fetch_http(config: &FetchConfig, source: &Source, url: &str, dir: &Path, bar: &ProgressBar) -> Result<Fetched, FetchError> {
    let name = &source.name;
    let final_path = dir.join(name);
    let part = dir.join(format!("{name}.part"));
    let origin = dir.join(format!("{name}.url"));
    let write_err = |path: &Path, e| FetchError::Write { name: name.clone(), path: path.to_owned(), source: e };
    tokio::fs::create_dir_all(dir).await.map_err(|e| write_err(dir, e))?;

    // A finished download of the same URL is reused when its checksum still holds.
    let same_origin = tokio::fs::read_to_string(&origin).await.is_ok_and(|u| u == url);
    if same_origin && final_path.exists() {
        let p = final_path.clone();
        if let Ok(Ok(sha)) = tokio::task::spawn_blocking(move || sha256_file(&p)).await
            && source.sha256.as_deref().is_none_or(|e| e == sha) {
                let bytes = tokio::fs::metadata(&final_path).await.map_err(|e| write_err(&final_path, e))?.len();
                return Ok(Fetched { name: name.clone(), path: final_path, sha256: sha, bytes, downloaded: 0 });
            }
    }
    if !same_origin {
        // A partial file of another URL must not be resumed.
        let _ = tokio::fs::remove_file(&part).await;
        tokio::fs::write(&origin, url).await.map_err(|e| write_err(&origin, e))?;
    }

    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(config.connect_timeout_secs))
        .read_timeout(Duration::from_secs(config.read_timeout_secs))
        .user_agent(concat!("coreb/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(FetchError::Client)?;
    let mut delays = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(config.initial_backoff_ms))
        .with_max_delay(Duration::from_millis(config.max_backoff_ms))
        .with_max_times(config.retries as usize)
        .with_jitter()
        .build();
    let mut downloaded = 0u64;
    let mut attempts = 0u32;
    let hasher = loop {
        attempts += 1;
        let mut hasher = Sha256::new();
        let outcome = attempt(&client, source, url, &part, &mut hasher, &mut downloaded, bar).await?;
        match outcome {
            Attempt::Done => break hasher,
            Attempt::Retry { reason, after } => {
                let Some(delay) = delays.next() else {
                    return Err(FetchError::GaveUp { name: name.clone(), url: url.to_owned(), attempts, last: reason });
                };
                let delay = after.map_or(delay, |a| a.max(delay));
                tracing::warn!(source = %name, attempt = attempts, ?delay, "retrying download: {reason}");
                tokio::time::sleep(delay).await;
            }
        }
    };
    let sha = hex::encode(hasher.finalize());
    if let Err(e) = check(source, &part, &sha) {
        // A complete file with the wrong content: resuming it can never succeed.
        let _ = tokio::fs::remove_file(&part).await;
        return Err(e);
    }
    tokio::fs::rename(&part, &final_path).await.map_err(|e| write_err(&final_path, e))?;
    let bytes = tokio::fs::metadata(&final_path).await.map_err(|e| write_err(&final_path, e))?.len();
    Ok(Fetched { name: name.clone(), path: final_path, sha256: sha, bytes, downloaded })
}

/// One request: resume `part` from its current length when the server allows it.
async fn attempt(
    client: &reqwest::Client,
    source: &Source,
    url: &str,
    part: &Path,
    hasher: &mut Sha256,
    downloaded: &mut u64,
    bar: &ProgressBar,
) -> Result<Attempt, FetchError> {
    let write_err = |e| FetchError::Write { name: source.name.clone(), path: part.to_owned(), source: e };
    let have = tokio::fs::metadata(part).await.map(|m| m.len()).unwrap_or(0);
    let mut request = client.get(url);
    if have > 0 {
        request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => return Ok(Attempt::Retry { reason: crate::errors::chain(&e), after: None }),
    };
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    if status.as_u16() == 429 || status.is_server_error() || status.as_u16() == 408 {
        return Ok(Attempt::Retry { reason: format!("HTTP {status}"), after: retry_after });
    }
    if status.as_u16() == 416 {
        // Our partial file is not a prefix the server recognises: start over.
        tokio::fs::remove_file(part).await.map_err(write_err)?;
        return Ok(Attempt::Retry { reason: "HTTP 416 for a resumed range; restarting".into(), after: None });
    }
    if !status.is_success() {
        return Err(FetchError::Status { name: source.name.clone(), url: url.to_owned(), status: status.as_u16() });
    }
    let resumed = status.as_u16() == 206 && have > 0 && content_range_start(&response) == Some(have);
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resumed)
        .truncate(!resumed)
        .open(part)
        .await
        .map_err(write_err)?;
    let mut offset = 0u64;
    if resumed {
        // Hash what we already have, so the digest covers the whole file.
        let mut old = tokio::fs::File::open(part).await.map_err(write_err)?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = old.read(&mut buf).await.map_err(write_err)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        offset = have;
    }
    let expected_total = response.content_length().map(|n| n + offset);
    bar.set_length(expected_total.unwrap_or(0));
    bar.set_position(offset);
    let mut stream = response.bytes_stream();
    let mut written = offset;
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                file.flush().await.map_err(write_err)?;
                return Ok(Attempt::Retry { reason: format!("connection broken after {written} bytes: {}", crate::errors::chain(&e)), after: None });
            }
        };
        file.write_all(&chunk).await.map_err(write_err)?;
        hasher.update(&chunk);
        written += chunk.len() as u64;
        *downloaded += chunk.len() as u64;
        bar.set_position(written);
    }
    file.flush().await.map_err(write_err)?;
    file.sync_all().await.map_err(write_err)?;
    if let Some(total) = expected_total
        && written != total {
            return Ok(Attempt::Retry { reason: format!("body ended after {written} of {total} bytes"), after: None });
        }
    Ok(Attempt::Done)
}

fn content_range_start(response: &reqwest::Response) -> Option<u64> {
    let v = response.headers().get(reqwest::header::CONTENT_RANGE)?.to_str().ok()?;
    let range = v.strip_prefix("bytes ")?;
    range.split('-').next()?.trim().parse().ok()
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_locations() {
        let base = Path::new("/m");
        let s = Source::resolve("a", "data/x.jsonl", None, base).unwrap();
        assert_eq!(s.location, Location::Local(PathBuf::from("/m/data/x.jsonl")));
        let s = Source::resolve("a", "file:///d/x.jsonl", None, base).unwrap();
        assert_eq!(s.location, Location::Local(PathBuf::from("/d/x.jsonl")));
        let s = Source::resolve("a", "https://h/x", Some(&"AB".repeat(32)), base).unwrap();
        assert_eq!(s.location, Location::Http("https://h/x".into()));
        assert_eq!(s.sha256.unwrap(), "ab".repeat(32));
        assert!(Source::resolve("a", "ftp://h/x", None, base).is_err());
        assert!(Source::resolve("../a", "x", None, base).is_err());
        assert!(Source::resolve("a", "x", Some("123"), base).unwrap_err().contains("sha256"));
    }
}
