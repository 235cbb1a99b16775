//! `coreb fetch` against a local HTTP server started by each test: resume after a cut
//! connection, retries on 429/503 with `Retry-After`, read timeouts, checksums, 404s,
//! unreachable hosts, the cache of finished downloads, and `If-Range`: a file that changed
//! upstream between two attempts is never spliced from two versions.

use std::collections::VecDeque;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::http::serve;
use crate::support::{Reply, coreb, run, text, written};

/// What the server does with one request.
#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// Serve the (ranged) body in full.
    Normal,
    /// Send the headers and `n` body bytes, then close the connection.
    CutAfter(usize),
    /// Send the headers and `n` body bytes, then go silent for a while.
    HangAfter(usize),
    /// Answer with this status (and `Retry-After: 1` for 429/503) and no body.
    Status(u16),
    /// Like `CutAfter`, then the file changes upstream: the next version (another `ETag`)
    /// is served from then on.
    CutAfterAndChange(usize),
}

/// The file the server serves: its bytes and its strong `ETag`.
struct Version {
    body: Vec<u8>,
    etag: String,
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    /// Start of the `Range` header (`None` when absent).
    range: Option<String>,
    /// The `If-Range` header.
    if_range: Option<String>,
}

struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start(body: Vec<u8>, script: Vec<Behaviour>) -> Server {
        Server::with_versions(vec![body], script, true)
    }

    /// A server whose file goes through `versions` (ETags `"v1"`, `"v2"` …) at each
    /// `CutAfterAndChange`; one that does not `honour_if_range` answers every `Range` with a
    /// 206 of the current version (carrying its `ETag`), as a careless server would.
    fn with_versions(
        versions: Vec<Vec<u8>>,
        script: Vec<Behaviour>,
        honour_if_range: bool,
    ) -> Server {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        let script = Mutex::new(VecDeque::from(script));
        let mut versions: VecDeque<Version> = versions
            .into_iter()
            .enumerate()
            .map(|(i, body)| Version { body, etag: format!("\"v{}\"", i + 1) })
            .collect();
        let current = Mutex::new(Arc::new(versions.pop_front().unwrap()));
        let next = Mutex::new(versions);
        let server = serve(move |request| {
            let range = request
                .header("range")
                .and_then(|r| r.strip_prefix("bytes="))
                .map(|r| r.trim_end_matches('-').to_owned());
            let seen = Seen { range, if_range: request.header("if-range").map(str::to_owned) };
            log.lock().unwrap().push(seen.clone());
            let behaviour = script.lock().unwrap().pop_front().unwrap_or(Behaviour::Normal);
            let version = Arc::clone(&current.lock().unwrap());
            if let Behaviour::CutAfterAndChange(_) = behaviour
                && let Some(v) = next.lock().unwrap().pop_front()
            {
                // Changed before the cut reaches the client: no retry can see the old file.
                *current.lock().unwrap() = Arc::new(v);
            }
            reply(&version, &seen, behaviour, honour_if_range)
        });
        Server { port: server.addr.port(), requests }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/test6.jsonl", self.port)
    }

    fn ranges(&self) -> Vec<Option<String>> {
        self.requests.lock().unwrap().iter().map(|s| s.range.clone()).collect()
    }

    fn seen(&self) -> Vec<Seen> {
        self.requests.lock().unwrap().clone()
    }
}

fn reply(version: &Version, seen: &Seen, behaviour: Behaviour, honour_if_range: bool) -> Reply {
    if let Behaviour::Status(code) = behaviour {
        let status = Reply::new(&format!("{code} Status"), Vec::new());
        return if code == 429 || code == 503 { status.header("Retry-After: 1") } else { status };
    }
    // RFC 9110 §13.1.5: a `Range` whose `If-Range` names another version gets the whole file.
    let stale = honour_if_range && seen.if_range.as_ref().is_some_and(|v| *v != version.etag);
    let body = &version.body;
    let start: usize = if stale {
        0
    } else {
        seen.range.as_deref().and_then(|r| r.parse().ok()).unwrap_or(0).min(body.len())
    };
    let etag = format!("ETag: {}", version.etag);
    let whole = if start > 0 {
        Reply::new("206 Partial Content", &body[start..])
            .header(format!("Content-Range: bytes {start}-{}/{}", body.len() - 1, body.len()))
            .header(etag)
    } else {
        Reply::new("200 OK", body.clone()).header("Accept-Ranges: bytes").header(etag)
    };
    match behaviour {
        Behaviour::Normal | Behaviour::Status(_) => whole,
        Behaviour::CutAfter(n) | Behaviour::CutAfterAndChange(n) => whole.cut_after(n),
        Behaviour::HangAfter(n) => whole.stall_after(n, Duration::from_secs(4)),
    }
}

/// A deterministic body of `n` bytes that looks like JSONL.
fn body(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    let mut i = 0u64;
    while out.len() < n {
        out.extend_from_slice(
            format!("{{\"row\": {i}, \"x\": {}}}\n", i.wrapping_mul(2_654_435_761) % 1_000_003)
                .as_bytes(),
        );
        i += 1;
    }
    out.truncate(n);
    out
}

fn manifest(dir: &Path, url: &str, sha256: Option<&str>) -> PathBuf {
    let sha = sha256.map(|s| format!("sha256 = \"{s}\"\n")).unwrap_or_default();
    let text = format!(
        "version = \"v202504\"\noutput_dir = \"build\"\n\n[[sources]]\nname = \"test6\"\nurl = \"{url}\"\n{sha}\n\
         [stages.fetch]\nretries = 4\ninitial_backoff_ms = 10\nmax_backoff_ms = 100\nread_timeout_secs = 1\nconnect_timeout_secs = 2\n"
    );
    written(dir.join("m.toml"), text)
}

fn sha(bytes: &[u8]) -> String {
    coreb_base::hashing::sha256_hex(bytes)
}

fn fetch(manifest: &Path) -> std::process::Output {
    run(coreb().args(["fetch", "--json"]).arg(manifest))
}

fn downloaded(dir: &Path) -> PathBuf {
    dir.join("build/downloads/test6")
}

/// `coreb fetch` of `manifest`, which must succeed: the bytes it downloaded into `dir`.
fn fetched(manifest: &Path, dir: &Path) -> Vec<u8> {
    let out = fetch(manifest);
    assert!(out.status.success(), "{}", text(&out));
    fs_err::read(downloaded(dir)).unwrap()
}

#[test]
fn resumes_after_the_connection_is_cut_midway() {
    let data = body(3 << 20);
    let server = Server::start(data.clone(), vec![Behaviour::CutAfter(1 << 20)]);
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), &server.url(), Some(&sha(&data)));
    let out = fetch(&m);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(fs_err::read(downloaded(dir.path())).unwrap(), data);
    let ranges = server.ranges();
    assert_eq!(ranges.len(), 2, "{ranges:?}");
    assert_eq!(ranges[0], None);
    let resumed_at: usize = ranges[1].as_deref().unwrap().parse().unwrap();
    assert!(resumed_at > 0 && resumed_at <= 1 << 20, "resumed at {resumed_at}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["sources"][0]["sha256"], sha(&data));
    assert!(!dir.path().join("build/downloads/test6.part").exists());
}

#[test]
fn resumes_a_partial_file_left_by_an_interrupted_run() {
    let data = body(1 << 20);
    let server = Server::start(data.clone(), vec![]);
    let dir = tempfile::tempdir().unwrap();
    let downloads = dir.path().join("build/downloads");
    fs_err::create_dir_all(&downloads).unwrap();
    fs_err::write(downloads.join("test6.part"), &data[..300_000]).unwrap();
    fs_err::write(downloads.join("test6.url"), server.url()).unwrap();
    let m = manifest(dir.path(), &server.url(), Some(&sha(&data)));
    let out = fetch(&m);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(server.ranges(), vec![Some("300000".to_owned())]);
    assert_eq!(fs_err::read(downloaded(dir.path())).unwrap(), data);

    // A second run finds the finished file and sends nothing.
    let out = fetch(&m);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(server.ranges().len(), 1);
}

#[test]
fn rejects_a_wrong_checksum_and_keeps_nothing() {
    let data = body(200_000);
    let server = Server::start(data.clone(), vec![]);
    let dir = tempfile::tempdir().unwrap();
    let wrong = sha(b"something else");
    let m = manifest(dir.path(), &server.url(), Some(&wrong));
    let out = fetch(&m);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("checksum mismatch")
            && stderr.contains(&wrong)
            && stderr.contains(&sha(&data)),
        "{stderr}"
    );
    assert!(stderr.contains("test6"), "{stderr}");
    assert!(!downloaded(dir.path()).exists());
    assert!(!dir.path().join("build/downloads/test6.part").exists());
}

#[test]
fn retries_429_and_503_honouring_retry_after_and_survives_a_stall() {
    let data = body(500_000);
    let script =
        vec![Behaviour::Status(429), Behaviour::Status(503), Behaviour::HangAfter(100_000)];
    let server = Server::start(data.clone(), script);
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), &server.url(), None);
    let started = std::time::Instant::now();
    let out = fetch(&m);
    assert!(out.status.success(), "{}", text(&out));
    // Two Retry-After: 1 answers mean at least two seconds of waiting.
    assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(fs_err::read(downloaded(dir.path())).unwrap(), data);
    let ranges = server.ranges();
    assert_eq!(ranges.len(), 4, "{ranges:?}");
    assert!(ranges[3].is_some(), "the stalled download was resumed: {ranges:?}");
}

#[test]
fn a_404_fails_at_once_naming_the_url() {
    let server = Server::start(vec![], vec![Behaviour::Status(404)]);
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), &server.url(), None);
    let out = fetch(&m);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("HTTP 404") && stderr.contains(&server.url()), "{stderr}");
    assert_eq!(server.ranges().len(), 1);
}

#[test]
fn an_unreachable_url_gives_up_with_a_clear_error() {
    // Bind and drop a listener: nothing listens on that port any more.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/test6.jsonl");
    let m = manifest(dir.path(), &url, None);
    let out = fetch(&m);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("gave up after 5 attempts") && stderr.contains(&url), "{stderr}");
}

#[test]
fn local_paths_and_file_urls_are_hashed_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let data = body(10_000);
    let file = dir.path().join("local.jsonl");
    fs_err::write(&file, &data).unwrap();
    for url in [file.display().to_string(), format!("file://{}", file.display())] {
        let m = manifest(dir.path(), &url, Some(&sha(&data)));
        let out = fetch(&m);
        assert!(out.status.success(), "{}", text(&out));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["sources"][0]["path"], file.display().to_string());
    }
    let m = manifest(dir.path(), &file.display().to_string(), Some(&sha(b"x")));
    let out = fetch(&m);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("checksum mismatch")
    );
}

/// Version 2 of a file: as long as `v1`, one byte in every 4 KiB changed, so a splice of the
/// two is the right length and looks plausible.
fn changed(v1: &[u8]) -> Vec<u8> {
    let mut v2 = v1.to_vec();
    for b in v2.iter_mut().step_by(4096) {
        *b = if *b == b'#' { b'%' } else { b'#' };
    }
    v2
}

#[test]
fn a_file_changed_upstream_between_attempts_is_fetched_whole_not_spliced() {
    let v1 = body(1 << 20);
    let v2 = changed(&v1);
    let server = Server::with_versions(
        vec![v1.clone(), v2.clone()],
        vec![Behaviour::CutAfterAndChange(300_000)],
        true,
    );
    let dir = tempfile::tempdir().unwrap();
    // Unpinned: nothing but `If-Range` can tell the two versions apart.
    let m = manifest(dir.path(), &server.url(), None);
    let out = fetch(&m);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(fs_err::read(downloaded(dir.path())).unwrap(), v2, "the new version, whole");
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0], Seen { range: None, if_range: None });
    // The resumed request named the version its bytes came from.
    assert!(seen[1].range.is_some(), "{seen:?}");
    assert_eq!(seen[1].if_range.as_deref(), Some("\"v1\""), "{seen:?}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["sources"][0]["sha256"], sha(&v2));
    assert!(!dir.path().join("build/downloads/test6.part.state").exists());

    // The file unchanged: the same request resumes it (a 206 of the same version).
    let server = Server::with_versions(vec![v1.clone()], vec![Behaviour::CutAfter(300_000)], true);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(fetched(&manifest(dir.path(), &server.url(), None), dir.path()), v1);
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[1].range.as_deref().is_some_and(|r| r != "0")
            && seen[1].if_range.as_deref() == Some("\"v1\""),
        "{seen:?}"
    );
}

#[test]
fn a_server_that_ignores_if_range_is_caught_by_the_etag_of_its_206() {
    let v1 = body(1 << 20);
    let v2 = changed(&v1);
    let server = Server::with_versions(
        vec![v1, v2.clone()],
        vec![Behaviour::CutAfterAndChange(300_000)],
        false,
    );
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(fetched(&manifest(dir.path(), &server.url(), None), dir.path()), v2);
    // The 206 of `"v2"` was thrown away and the file fetched again from byte 0.
    let ranges = server.ranges();
    assert_eq!(ranges.len(), 3, "{ranges:?}");
    assert!(ranges[1].is_some() && ranges[2].is_none(), "{ranges:?}");
}
