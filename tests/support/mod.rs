//! Shared test helpers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `coreb` binary under test.
pub fn coreb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_coreb"))
}

/// The project root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("pipeline/ has a parent").to_owned()
}

/// `tests/fixtures/data/<rel>`: public test data copied into the repository (its README gives
/// each file's source and licence).
pub fn fixture_data(rel: &str) -> PathBuf {
    root().join("tests/fixtures/data").join(rel)
}

/// The Python interpreter of the test venv (`scripts/setup-python` makes it; `.ci/run` runs
/// that): `$COREB_PYTHON` if set, else `<root>/.venv/bin/python`. Panics with the command to
/// run when neither exists, so a missing client is a clear failure, never a silent skip.
pub fn python() -> Command {
    let path = std::env::var_os("COREB_PYTHON").map(PathBuf::from).unwrap_or_else(|| root().join(".venv/bin/python"));
    assert!(path.exists(), "no test venv at `{}`: run `scripts/setup-python` (or set COREB_PYTHON)", path.display());
    Command::new(path)
}

/// Run a command, returning its output; panics only on a failure to start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("start coreb")
}

/// stdout + stderr as text, for assertion messages.
pub fn text(out: &Output) -> String {
    format!("status: {}\nstdout:\n{}\nstderr:\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// One HTTP/1.1 request as the loopback test servers read it.
pub struct Request {
    /// The request line (`POST /v1/embeddings HTTP/1.1`).
    pub line: String,
    /// Header lines, trimmed, in order.
    pub headers: Vec<String>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as JSON (`null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

/// Read one request from a connection; `None` when the client sent nothing usable.
pub fn read_request(stream: &std::net::TcpStream) -> Option<Request> {
    use std::io::{BufRead, BufReader, Read};
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        headers.push(h.trim().to_owned());
    }
    let mut req = Request { line: line.trim().to_owned(), headers, body: Vec::new() };
    let len: usize = req.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    req.body = vec![0u8; len];
    reader.read_exact(&mut req.body).ok()?;
    Some(req)
}
