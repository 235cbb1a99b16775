//! The one loopback HTTP/1.1 server of the tests (file downloads, OpenAI-compatible
//! endpoints, embeddings, rerankers, redirects, faults).
//!
//! [`serve`] binds `127.0.0.1:0` and answers each connection on its own thread: it reads one
//! request ([`Request`]), asks the test's `respond` what to do ([`Reply`]) and does it, then
//! closes the connection. Faults are replies too: a body cut after some bytes, a stall, a
//! hang. Nothing here reaches outside the machine.
//!
//! A `GET …/models` (what a build's preflight asks an OpenAI-compatible endpoint) is answered
//! by the server itself and counted apart ([`Server::listings`]), never passed to `respond`
//! nor counted in [`Server::hits`]: with the reply given to [`serve_listing`] (e.g.
//! [`model_list`]), or a 404 (a server with no list, whose models the preflight cannot check)
//! for [`serve`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// One HTTP/1.1 request as the server read it.
#[derive(Debug, Clone)]
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
fn read_request(stream: &TcpStream) -> Option<Request> {
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

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A whole response: status line (`200 OK`), extra header lines, body.
    Full { status: String, headers: Vec<String>, body: Vec<u8> },
    /// The headers of a full response (its whole `Content-Length`), `sent` bytes of the
    /// body, then the connection is closed.
    Cut { status: String, headers: Vec<String>, body: Vec<u8>, sent: usize },
    /// The headers, `sent` bytes of the body, then silence for `stall`, then close.
    Stall { status: String, headers: Vec<String>, body: Vec<u8>, sent: usize, stall: Duration },
    /// No answer at all for this long, then close.
    Hang(Duration),
}

impl Reply {
    /// A whole response with no extra headers.
    pub fn new(status: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full { status: status.to_owned(), headers: Vec::new(), body: body.into() }
    }

    /// `200 OK` with a JSON body.
    pub fn json(value: &serde_json::Value) -> Reply {
        Reply::new("200 OK", value.to_string()).header("Content-Type: application/json")
    }

    /// The same reply with one more header line (`Name: value`).
    pub fn header(mut self, line: impl Into<String>) -> Reply {
        match &mut self {
            Reply::Full { headers, .. }
            | Reply::Cut { headers, .. }
            | Reply::Stall { headers, .. } => headers.push(line.into()),
            Reply::Hang(_) => {}
        }
        self
    }

    /// The same reply with its body cut after `sent` bytes.
    pub fn cut_after(self, sent: usize) -> Reply {
        match self {
            Reply::Full { status, headers, body } => Reply::Cut { status, headers, body, sent },
            other => other,
        }
    }

    /// The same reply going silent for `stall` after `sent` bytes of its body.
    pub fn stall_after(self, sent: usize, stall: Duration) -> Reply {
        match self {
            Reply::Full { status, headers, body } => {
                Reply::Stall { status, headers, body, sent, stall }
            }
            other => other,
        }
    }
}

/// A running loopback server.
#[derive(Debug, Clone)]
pub struct Server {
    /// `127.0.0.1:<port>`.
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    listings: Arc<AtomicUsize>,
}

impl Server {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests read so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// `GET …/models` requests answered so far.
    pub fn listings(&self) -> usize {
        self.listings.load(Ordering::SeqCst)
    }
}

/// Start a server answering every request with `respond(request)` (and `GET …/models` with
/// a 404).
pub fn serve(respond: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
    serve_listing(Reply::new("404 Not Found", "{\"error\": \"not found\"}"), respond)
}

/// OpenAI's answer to `GET /v1/models` listing `ids`.
pub fn model_list(ids: &[&str]) -> Reply {
    Reply::json(
        &serde_json::json!({"object": "list", "data": ids.iter().map(|id| serde_json::json!({"id": id, "object": "model"})).collect::<Vec<_>>()}),
    )
}

/// Start a server answering `GET …/models` with `listing` (e.g. [`model_list`]) and every
/// other request with `respond(request)`.
pub fn serve_listing(
    listing: Reply,
    respond: impl Fn(&Request) -> Reply + Send + Sync + 'static,
) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    let (hits, listings) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let respond = Arc::new(respond);
    let list = Arc::new(listing);
    let (counter, listed) = (Arc::clone(&hits), Arc::clone(&listings));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (respond, counter, listed, list) = (
                Arc::clone(&respond),
                Arc::clone(&counter),
                Arc::clone(&listed),
                Arc::clone(&list),
            );
            std::thread::spawn(move || {
                let Some(request) = read_request(&stream) else {
                    return;
                };
                let path = request.line.split(' ').nth(1).unwrap_or_default();
                if request.line.starts_with("GET ") && path.ends_with("/models") {
                    listed.fetch_add(1, Ordering::SeqCst);
                    return answer(stream, list.as_ref().clone());
                }
                counter.fetch_add(1, Ordering::SeqCst);
                answer(stream, respond(&request));
            });
        }
    });
    Server { addr, hits, listings }
}

fn answer(mut stream: TcpStream, reply: Reply) {
    let head = |status: &str, headers: &[String], len: usize| {
        let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
        format!("HTTP/1.1 {status}\r\n{extra}Content-Length: {len}\r\nConnection: close\r\n\r\n")
    };
    match reply {
        Reply::Full { status, headers, body } => {
            let _ = stream.write_all(head(&status, &headers, body.len()).as_bytes());
            let _ = stream.write_all(&body);
        }
        Reply::Cut { status, headers, body, sent } => {
            let _ = stream.write_all(head(&status, &headers, body.len()).as_bytes());
            let _ = stream.write_all(&body[..sent.min(body.len())]);
            let _ = stream.flush();
        }
        Reply::Stall { status, headers, body, sent, stall } => {
            let _ = stream.write_all(head(&status, &headers, body.len()).as_bytes());
            let _ = stream.write_all(&body[..sent.min(body.len())]);
            let _ = stream.flush();
            std::thread::sleep(stall);
        }
        Reply::Hang(time) => std::thread::sleep(time),
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}
