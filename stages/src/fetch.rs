//! `fetch`: bring every source file of a manifest onto local disk with its sha256.
//!
//! HTTP(S) sources are streamed to `<dir>/<name>.part` with reqwest, hashed while streaming,
//! resumed with a `Range` request after a cut connection or an interrupted run, retried
//! under the LLM gateway's retry loop (exponential backoff with jitter, `Retry-After`
//! honoured up to `max_retry_after_secs`), checked against the expected sha256 when one is
//! given, and only then renamed (durably) to `<dir>/<name>`. A resumed request carries
//! `If-Range` with the `ETag` or `Last-Modified` the partial file was downloaded under, so a
//! file that changed upstream comes whole and is never spliced from two versions; a partial
//! file with neither and no sha256 pin is started over. Local paths and `file://` URLs are
//! hashed in place, not copied (LiveCodeBench files are large).
//!
//! This is the one stage whose job is I/O. It does not decode anything.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::atomic::{AtomicU64, Ordering};

use coreb_base::report::Meter;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use coreb_base::durable;
use coreb_base::hashing::{is_sha256_hex, sha256_file};
use coreb_http::RetryConfig;
use coreb_http::retry::{
    GaveUp, Limits, Step, is_retryable_status, retry_after, send_with_retries,
};

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
    /// Longest `Retry-After` honoured (s); a longer one is capped to this.
    pub max_retry_after_secs: u64,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            retries: 8,
            initial_backoff_ms: 500,
            max_backoff_ms: 30_000,
            connect_timeout_secs: 30,
            read_timeout_secs: 60,
            max_retry_after_secs: 300,
        }
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
    pub fn resolve(
        name: &str,
        url: &str,
        sha256: Option<&str>,
        base: &Path,
    ) -> Result<Source, String> {
        if name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            || name.starts_with('.')
        {
            return Err(format!("`name`: `{name}` must be letters, digits, `.`, `_` or `-`"));
        }
        if let Some(h) = sha256
            && !is_sha256_hex(h)
        {
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
pub async fn fetch_source(
    config: &FetchConfig,
    source: &Source,
    dir: &Path,
    bar: &dyn Meter,
) -> Result<Fetched, FetchError> {
    match &source.location {
        Location::Local(path) => fetch_local(source, path, bar).await,
        Location::Http(url) => fetch_http(config, source, url, dir, bar).await,
    }
}

async fn fetch_local(source: &Source, path: &Path, bar: &dyn Meter) -> Result<Fetched, FetchError> {
    let local =
        |e| FetchError::Local { name: source.name.clone(), path: path.to_owned(), source: e };
    let meta = tokio::fs::metadata(path).await.map_err(local)?;
    bar.set_length(meta.len());
    let p = path.to_owned();
    let sha = tokio::task::spawn_blocking(move || sha256_file(&p))
        .await
        .map_err(|e| local(std::io::Error::other(e)))?
        .map_err(local)?;
    bar.set_position(meta.len());
    checked_in_place(source, path, sha, meta.len())
}

/// A local source that its reader hashed (`ingest` hashes a local file as it decodes it on a
/// first build, so the file is read once): the [`Fetched`] that [`fetch_source`] gives for it,
/// checked against the manifest's sha256 pin the same way. `None` for a source that is not a
/// local file.
pub fn hashed_in_place(
    source: &Source,
    sha256: String,
    bytes: u64,
) -> Option<Result<Fetched, FetchError>> {
    let Location::Local(path) = &source.location else {
        return None;
    };
    Some(checked_in_place(source, path, sha256, bytes))
}

/// The local file `path` of `source`, hashed, once checked against the manifest's pin.
fn checked_in_place(
    source: &Source,
    path: &Path,
    sha256: String,
    bytes: u64,
) -> Result<Fetched, FetchError> {
    check(source, path, &sha256)?;
    Ok(Fetched { name: source.name.clone(), path: path.to_owned(), sha256, bytes, downloaded: 0 })
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

/// What a partial download holds, saved beside it (`<name>.part.state`): the version of the
/// file its bytes come from (a strong `ETag`, else `Last-Modified`) and how many of its bytes
/// are known to be on disk (fsynced). A resumed request sends the version as `If-Range`, so a
/// server whose file has changed sends the whole new file instead of the rest of the old
/// one, and resumes from the synced length, so a tail torn by a power cut is fetched again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct PartState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_modified: Option<String>,
    /// Bytes of the partial file fsynced so far.
    #[serde(default)]
    synced: u64,
}

impl PartState {
    /// The state of a new download from the headers of a full (200) response: its strong
    /// `ETag` (a weak one cannot be used in `If-Range`), else its `Last-Modified`.
    fn of(headers: &reqwest::header::HeaderMap) -> PartState {
        let text = |name| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let etag = text(reqwest::header::ETAG).filter(|e| !e.starts_with("W/"));
        let last_modified =
            if etag.is_some() { None } else { text(reqwest::header::LAST_MODIFIED) };
        PartState { etag, last_modified, synced: 0 }
    }

    /// The `If-Range` value, if the version is known.
    fn if_range(&self) -> Option<&str> {
        self.etag.as_deref().or(self.last_modified.as_deref())
    }

    /// Does a 206 answer describe the same version? A server that ignored `If-Range` but
    /// names another version is caught here; one that names none is taken at its word.
    fn same_version(&self, headers: &reqwest::header::HeaderMap) -> bool {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        match (&self.etag, &self.last_modified) {
            (Some(etag), _) => text(reqwest::header::ETAG).is_none_or(|e| e == etag),
            (None, Some(date)) => text(reqwest::header::LAST_MODIFIED).is_none_or(|d| d == date),
            (None, None) => true,
        }
    }
}

/// Bytes written between two fsyncs of a partial download (and of its state).
const SYNC_EVERY: u64 = 64 << 20;

/// The retry policy of downloads: the LLM gateway's loop and backoff with jitter
/// ([`coreb_http::retry`]), with the attempts and delays of `[stages.fetch]`.
fn retry_config(config: &FetchConfig) -> RetryConfig {
    RetryConfig {
        max_attempts: config.retries.saturating_add(1),
        min_delay_ms: config.initial_backoff_ms,
        max_delay_ms: config.max_backoff_ms,
        max_retry_after_secs: config.max_retry_after_secs,
        ..RetryConfig::default()
    }
}

/// One HTTP download in progress: `part` (and its validator) beside `final_path`.
struct Download<'a> {
    client: reqwest::Client,
    source: &'a Source,
    url: &'a str,
    part: PathBuf,
    state: PathBuf,
    bar: &'a dyn Meter,
    /// Bytes received over the network, over all attempts.
    downloaded: AtomicU64,
}

async fn fetch_http(
    config: &FetchConfig,
    source: &Source,
    url: &str,
    dir: &Path,
    bar: &dyn Meter,
) -> Result<Fetched, FetchError> {
    let name = &source.name;
    let final_path = dir.join(name);
    let origin = dir.join(format!("{name}.url"));
    let write_err =
        |path: &Path, e| FetchError::Write { name: name.clone(), path: path.to_owned(), source: e };
    tokio::fs::create_dir_all(dir).await.map_err(|e| write_err(dir, e))?;

    // A finished download of the same URL is reused when its checksum still holds.
    let same_origin = tokio::fs::read_to_string(&origin).await.is_ok_and(|u| u == url);
    if same_origin && final_path.exists() {
        let p = final_path.clone();
        if let Ok(Ok(sha)) = tokio::task::spawn_blocking(move || sha256_file(&p)).await
            && source.sha256.as_deref().is_none_or(|e| e == sha)
        {
            let bytes = tokio::fs::metadata(&final_path)
                .await
                .map_err(|e| write_err(&final_path, e))?
                .len();
            return Ok(Fetched {
                name: name.clone(),
                path: final_path,
                sha256: sha,
                bytes,
                downloaded: 0,
            });
        }
    }
    let download = Download {
        client: coreb_http::client_builder()
            .connect_timeout(Duration::from_secs(config.connect_timeout_secs))
            .read_timeout(Duration::from_secs(config.read_timeout_secs))
            .user_agent(concat!("coreb/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(FetchError::Client)?,
        source,
        url,
        part: dir.join(format!("{name}.part")),
        state: dir.join(format!("{name}.part.state")),
        bar,
        downloaded: AtomicU64::new(0),
    };
    if !same_origin {
        // A partial file of another URL must not be resumed.
        download.restart().await?;
        durable::write(&origin, url.as_bytes()).map_err(|e| write_err(&origin, e))?;
    }

    let outcome =
        send_with_retries(&retry_config(config), &Limits::new(1, 0, 0), 0, |_| download.attempt())
            .await;
    let hasher = outcome.map_err(|g| match g {
        GaveUp::Failed(e) => e,
        GaveUp::Exhausted { attempts, last } => {
            FetchError::GaveUp { name: name.clone(), url: url.to_owned(), attempts, last }
        }
    })?;
    let sha = hex::encode(hasher.finalize());
    let part = &download.part;
    if let Err(e) = check(source, part, &sha) {
        // A complete file with the wrong content: resuming it can never succeed.
        download.restart().await?;
        return Err(e);
    }
    tokio::fs::rename(part, &final_path).await.map_err(|e| write_err(&final_path, e))?;
    durable::sync_dir(dir).map_err(|e| write_err(dir, e))?;
    let _ = tokio::fs::remove_file(&download.state).await;
    let bytes =
        tokio::fs::metadata(&final_path).await.map_err(|e| write_err(&final_path, e))?.len();
    Ok(Fetched {
        name: name.clone(),
        path: final_path,
        sha256: sha,
        bytes,
        downloaded: download.downloaded.into_inner(),
    })
}

impl Download<'_> {
    fn write_err(&self, path: &Path, source: std::io::Error) -> FetchError {
        FetchError::Write { name: self.source.name.clone(), path: path.to_owned(), source }
    }

    /// Forget the partial file and its state: the next attempt starts from byte 0.
    async fn restart(&self) -> Result<(), FetchError> {
        for path in [&self.part, &self.state] {
            match tokio::fs::remove_file(path).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(self.write_err(path, e));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The saved state of the partial file, if any (an unreadable one counts as none).
    async fn saved_state(&self) -> Option<PartState> {
        serde_json::from_slice(&tokio::fs::read(&self.state).await.ok()?).ok()
    }

    fn save_state(&self, state: &PartState) -> Result<(), FetchError> {
        durable::write(&self.state, &serde_json::to_vec(state).unwrap_or_default())
            .map_err(|e| self.write_err(&self.state, e))
    }

    /// One request; see [`Download::try_attempt`].
    async fn attempt(&self) -> Step<Sha256, FetchError> {
        self.try_attempt().await.unwrap_or_else(Step::Fail)
    }

    /// One request. The partial file is resumed only when what it holds is known to be a
    /// prefix of what the server has: its version goes out as `If-Range` (a changed file
    /// then comes whole, with a 200), or the source is pinned by sha256 (a splice fails the
    /// checksum). Otherwise it is started over rather than spliced.
    async fn try_attempt(&self) -> Result<Step<Sha256, FetchError>, FetchError> {
        let (have, saved) = self.resumable().await?;
        let response = match self.request(have, saved.as_ref()).await? {
            Ok(r) => r,
            Err(step) => return Ok(step),
        };
        let resumed = response.status().as_u16() == 206;
        let state = if resumed {
            saved.unwrap_or_default()
        } else {
            // The whole file, perhaps a new version: the old bytes go before the new state
            // is saved, so the state never describes bytes of another version.
            self.restart().await?;
            PartState::of(response.headers())
        };
        let (file, hasher) = self.open_part(resumed, have).await?;
        self.receive(response, file, hasher, state, have).await
    }

    /// How many bytes of the partial file can be resumed from (only what was fsynced, and
    /// only when a version or a pin vouches for them; otherwise it is started over), and its
    /// saved state.
    async fn resumable(&self) -> Result<(u64, Option<PartState>), FetchError> {
        let source = self.source;
        let on_disk = tokio::fs::metadata(&self.part).await.map(|m| m.len()).unwrap_or(0);
        let saved = if on_disk > 0 { self.saved_state().await } else { None };
        let have = match &saved {
            // Only what was fsynced: a tail torn by a power cut is fetched again.
            Some(state) if state.if_range().is_some() || source.sha256.is_some() => {
                on_disk.min(state.synced)
            }
            // A partial file of an unknown version: only a sha256 pin can catch a splice.
            _ if source.sha256.is_some() => on_disk,
            _ => 0,
        };
        if have == 0 && on_disk > 0 {
            tracing::warn!(source = %source.name, "the partial download cannot be checked against the server's version (no ETag, Last-Modified or sha256 pin): starting over");
            self.restart().await?;
        }
        Ok((have, saved))
    }

    /// Send the request (a range from `have` when resuming) and sort its response: `Ok(Err)`
    /// is the step to take instead of reading a body (a retry, or a restart for a range the
    /// server does not recognise or that belongs to another version).
    async fn request(
        &self,
        have: u64,
        saved: Option<&PartState>,
    ) -> Result<Result<reqwest::Response, Step<Sha256, FetchError>>, FetchError> {
        let mut request = self.client.get(self.url);
        if have > 0 {
            request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
            if let Some(v) = saved.and_then(PartState::if_range) {
                request = request.header(reqwest::header::IF_RANGE, v);
            }
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                return Ok(Err(Step::Retry { reason: coreb_base::errors::chain(&e), after: None }));
            }
        };
        let status = response.status();
        if is_retryable_status(status.as_u16()) {
            return Ok(Err(Step::Retry {
                reason: format!("HTTP {status}"),
                after: retry_after(response.headers()),
            }));
        }
        if status.as_u16() == 416 {
            // Our partial file is not a prefix the server recognises: start over.
            self.restart().await?;
            return Ok(Err(Step::Retry {
                reason: "HTTP 416 for a resumed range; restarting".into(),
                after: None,
            }));
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                name: self.source.name.clone(),
                url: self.url.to_owned(),
                status: status.as_u16(),
            });
        }
        let same = saved.is_none_or(|s| s.same_version(response.headers()));
        if status.as_u16() == 206
            && !(have > 0 && content_range_start(&response) == Some(have) && same)
        {
            // A range we did not ask for, or of another version of the file: never splice.
            self.restart().await?;
            return Ok(Err(Step::Retry {
                reason: "HTTP 206 for another range or version of the file; restarting".into(),
                after: None,
            }));
        }
        Ok(Ok(response))
    }

    /// The partial file opened for writing: from `have` with the hash of the bytes kept
    /// (a torn tail dropped) when resuming, else empty.
    async fn open_part(
        &self,
        resumed: bool,
        have: u64,
    ) -> Result<(tokio::fs::File, Sha256), FetchError> {
        let part = &self.part;
        let write_err = |e| self.write_err(part, e);
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(!resumed)
            .open(part)
            .await
            .map_err(write_err)?;
        let mut hasher = Sha256::new();
        if resumed {
            // Drop a torn tail, then hash what we keep so that the digest covers the whole file.
            file.set_len(have).await.map_err(write_err)?;
            let mut old = tokio::fs::File::open(part).await.map_err(write_err)?;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = old.read(&mut buf).await.map_err(write_err)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            file.seek(std::io::SeekFrom::Start(have)).await.map_err(write_err)?;
        }
        Ok((file, hasher))
    }

    /// Stream the body into the partial file after its first `have` bytes, fsyncing and
    /// saving the state every [`SYNC_EVERY`] bytes; a broken or short body keeps what arrived
    /// for the next attempt.
    async fn receive(
        &self,
        response: reqwest::Response,
        mut file: tokio::fs::File,
        mut hasher: Sha256,
        mut state: PartState,
        have: u64,
    ) -> Result<Step<Sha256, FetchError>, FetchError> {
        let part = &self.part;
        let write_err = |e| self.write_err(part, e);
        state.synced = have;
        self.save_state(&state)?;
        let expected_total = response.content_length().map(|n| n + have);
        self.bar.set_length(expected_total.unwrap_or(0));
        self.bar.set_position(have);
        let mut stream = response.bytes_stream();
        let mut written = have;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    // Keep what arrived: the next attempt resumes from here.
                    file.flush().await.map_err(write_err)?;
                    file.sync_data().await.map_err(write_err)?;
                    state.synced = written;
                    self.save_state(&state)?;
                    return Ok(Step::Retry {
                        reason: format!(
                            "connection broken after {written} bytes: {}",
                            coreb_base::errors::chain(&e)
                        ),
                        after: None,
                    });
                }
            };
            file.write_all(&chunk).await.map_err(write_err)?;
            hasher.update(&chunk);
            written += chunk.len() as u64;
            self.downloaded.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            self.bar.set_position(written);
            if written - state.synced >= SYNC_EVERY {
                file.sync_data().await.map_err(write_err)?;
                state.synced = written;
                self.save_state(&state)?;
            }
        }
        file.flush().await.map_err(write_err)?;
        file.sync_all().await.map_err(write_err)?;
        if let Some(total) = expected_total
            && written != total
        {
            state.synced = written;
            self.save_state(&state)?;
            return Ok(Step::Retry {
                reason: format!("body ended after {written} of {total} bytes"),
                after: None,
            });
        }
        Ok(Step::Done(hasher))
    }
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
