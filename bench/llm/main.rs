//! The LLM gateway against a loopback server that answers after a fixed delay, and the
//! response store's serving time (`bench/llm/run.sh` runs it three times; its README says
//! what it reports).
//!
//! Run: `cargo bench -p coreb-llm --bench llm -- <scratch-dir> [--requests N] [--delay-ms MS]
//! [--concurrency N] [--stored N]` (defaults 2000, 50, 32, 10000). Nothing leaves 127.0.0.1.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use coreb_llm::run;
use coreb_llm::{
    Gateway, LlmConfig, LlmGateway, LlmStage, ResponseStore, Role, SamplingParams, StoreMode,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut requests, mut delay_ms, mut concurrency, mut stored) =
        (2000u32, 50u64, 32usize, 10_000u32);
    let mut dir: Option<PathBuf> = None;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || -> Result<u64, String> {
            args.get(i + 1)
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("`{}` takes a whole number", args[i]))
        };
        match args[i].as_str() {
            "--requests" => requests = u32::try_from(value()?)?,
            "--delay-ms" => delay_ms = value()?,
            "--concurrency" => concurrency = usize::try_from(value()?)?,
            "--stored" => stored = u32::try_from(value()?)?,
            // cargo bench passes `--bench`.
            a if a.starts_with("--") => {
                i += 1;
                continue;
            }
            a => dir = Some(PathBuf::from(a)),
        }
        i += if args[i].starts_with("--") { 2 } else { 1 };
    }
    let dir = match dir {
        Some(d) => d,
        None => tempfile::tempdir()?.keep(),
    };
    println!("# scratch {}", dir.display());
    coreb_http::runtime(None)?.block_on(bench(&dir, requests, delay_ms, concurrency, stored))
}

/// A loopback server answering every chat request after a fixed delay (keep-alive).
async fn delayed_server(delay: Duration, hits: Arc<AtomicU64>) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let hits = hits.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                loop {
                    // Read one request: headers, then Content-Length bytes of body.
                    let (head_end, length) = loop {
                        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..pos]).to_ascii_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| {
                                    l.strip_prefix("content-length:")
                                        .and_then(|v| v.trim().parse::<usize>().ok())
                                })
                                .unwrap_or(0);
                            break (pos + 4, length);
                        }
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    while buf.len() < head_end + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..head_end + length);
                    hits.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(delay).await;
                    let body = r#"{"id":"b","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"<code>print(1)</code>"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}"#;
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if socket.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(format!("http://{addr}/v1"))
}

fn bench_request(i: u32) -> coreb_llm::ChatRequest {
    let messages = vec![coreb_llm::ChatMessage {
        role: Role::User,
        content: format!("benchmark request {i}"),
    }];
    run::request(
        LlmStage::Generate,
        &format!("bench/{i}"),
        "bench-model",
        messages,
        &SamplingParams::default(),
        0,
        "bench",
    )
}

/// Send `requests` requests (`concurrency` at once) to a server answering after `delay_ms`,
/// then serve `stored` of them from the store, and print the timings.
async fn bench(
    dir: &std::path::Path,
    requests: u32,
    delay_ms: u64,
    concurrency: usize,
    stored: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let hits = Arc::new(AtomicU64::new(0));
    let base_url = delayed_server(Duration::from_millis(delay_ms), hits.clone()).await?;
    let live_dir = dir.join("live");
    let _ = fs_err::remove_dir_all(&live_dir);
    let config = LlmConfig {
        base_url,
        api_key_env: String::new(),
        concurrency,
        timeout_secs: 60.0,
        ..LlmConfig::default()
    };
    let gateway = Gateway::new(&config, ResponseStore::open(&live_dir), None)?;
    let start = Instant::now();
    // Items in flight exceed the HTTP cap so that store I/O never leaves an HTTP slot idle.
    let results = run::ordered((0..requests).collect(), 2 * concurrency, |i| {
        let gateway = &gateway;
        async move { gateway.complete(&bench_request(i)).await.map(|_| ()) }
    })
    .await;
    let elapsed = start.elapsed().as_secs_f64();
    let failed = results.iter().filter(|r| r.is_err()).count();
    let achieved = f64::from(requests) / elapsed;
    let limit = concurrency as f64 / (delay_ms as f64 / 1000.0);
    println!(
        "live: {requests} requests, concurrency {concurrency}, server delay {delay_ms} ms: {elapsed:.2} s, {achieved:.1} req/s of a {limit:.1} req/s limit = {:.1}% ({failed} failed, {} reached the server)",
        100.0 * achieved / limit,
        hits.load(Ordering::Relaxed)
    );

    if stored == 0 {
        return Ok(());
    }
    // Serving stored responses: fill a store, then replay every entry through the gateway.
    let replay_dir = dir.join("replay");
    let _ = fs_err::remove_dir_all(&replay_dir);
    let store = ResponseStore::open(&replay_dir);
    let fill = Instant::now();
    for i in 0..stored {
        let request = bench_request(i);
        let entry = coreb_llm::StoreEntry::of(
            &request,
            coreb_llm::store::StoredResponse {
                text: format!("<code>print({i})</code>"),
                finish_reason: coreb_llm::FinishReason::Stop,
                usage: coreb_llm::TokenUsage { prompt_tokens: 10, completion_tokens: 5 },
                provenance: coreb_llm::Provenance::Endpoint,
            },
        );
        store.put(&entry)?;
    }
    let fill_secs = fill.elapsed().as_secs_f64();
    let replay =
        Gateway::new(&LlmConfig { mode: StoreMode::Replay, ..config.clone() }, store, None)?;
    let before = hits.load(Ordering::Relaxed);
    for (label, conc) in [("sequential", 1usize), ("concurrent", 16)] {
        let start = Instant::now();
        let results = run::ordered((0..stored).collect(), conc, |i| {
            let replay = &replay;
            async move { replay.complete(&bench_request(i)).await.map(|_| ()) }
        })
        .await;
        let secs = start.elapsed().as_secs_f64();
        let failed = results.iter().filter(|r| r.is_err()).count();
        println!(
            "replay ({label}): {stored} stored responses served in {secs:.3} s ({:.1} µs each, {failed} failed)",
            secs * 1e6 / f64::from(stored.max(1))
        );
    }
    println!(
        "store fill: {stored} atomic writes (fdatasync + rename) in {fill_secs:.2} s; requests sent during replay: {}",
        hits.load(Ordering::Relaxed) - before
    );
    Ok(())
}
