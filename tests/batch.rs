//! The OpenAI Batch API transport (issue #16) against a fake Batch API on 127.0.0.1
//! ([`crate::support::http`]): upload, create, status transitions over several polls, an
//! error file, an expired batch with partial output; and the sample built live through
//! batches by a `coreb build` killed with SIGKILL while its first batch is in flight, then
//! restarted: it polls the same batch, the server sees each request once, and the release is
//! the synchronous build's byte for byte, at the batch price.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coreb_http::RetryConfig;
use coreb_llm::batch::state_dir_of;
use coreb_llm::config::{BatchConfig, LlmStage, ModelPrice, StoreMode, Transport};
use coreb_llm::run::request;
use coreb_llm::{
    BatchGateway, ChatMessage, ChatRequest, Gateway, LlmConfig, LlmGateway, ResponseStore, Role,
    SamplingParams,
};
use serde_json::{Value, json};

use crate::support::http::{Reply, Request, serve};
use crate::support::{coreb, root, run, text, tree_sha256, written};

/// What the fake puts in a batch's files for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Line {
    /// The answer, status 200.
    Answer,
    /// `response.status_code` 500 in the output.
    ServerError,
    /// An error-file line `batch_expired` (not run before the batch expired).
    Expired,
    /// Nothing at all.
    Missing,
}

type Answer = dyn Fn(&Value) -> Option<String> + Send + Sync;
type Script = dyn Fn(usize, &str) -> Line + Send + Sync;

/// One batch the fake holds.
#[derive(Debug)]
struct FakeBatch {
    input: Vec<(String, Value)>,
    polls: u32,
    metadata: Value,
    ended: Option<Value>,
}

/// The fake's state.
struct Fake {
    files: HashMap<String, Vec<u8>>,
    batches: Vec<FakeBatch>,
    /// Every `custom_id` uploaded, in order.
    uploaded: Vec<String>,
    /// Bodies of synchronous chat requests.
    sync: Vec<Value>,
    /// While set, batches stay `in_progress`.
    hold: bool,
    /// Polls (`GET /batches/<id>`) per batch id, in order, with the hold flag at the time.
    polls: Vec<(String, bool)>,
    answer: Box<Answer>,
    /// Per batch index and custom_id: what its files say.
    script: Box<Script>,
    /// Does batch `i` end `expired` (else `completed`)?
    expires: fn(usize) -> bool,
}

fn completion(text: &str) -> Value {
    json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100}})
}

/// The `file` part of a multipart body and the `purpose` field.
fn multipart(req: &Request) -> (Vec<u8>, String) {
    let ct = req.header("content-type").unwrap_or_default().to_owned();
    let boundary = ct.split("boundary=").nth(1).expect("multipart boundary").trim().to_owned();
    let body = String::from_utf8_lossy(&req.body).into_owned();
    let mut file = Vec::new();
    let mut purpose = String::new();
    for part in body.split(&format!("--{boundary}")) {
        let Some((head, content)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let content = content.strip_suffix("\r\n").unwrap_or(content);
        if head.contains("name=\"file\"") {
            file = content.as_bytes().to_vec();
        } else if head.contains("name=\"purpose\"") {
            purpose = content.to_owned();
        }
    }
    (file, purpose)
}

fn respond(fake: &Mutex<Fake>, req: &Request) -> Reply {
    let mut f = fake.lock().unwrap();
    let (method, path) = {
        let mut parts = req.line.split_whitespace();
        (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned())
    };
    match (method.as_str(), path.as_str()) {
        ("POST", "/v1/chat/completions") => {
            let body = req.json();
            f.sync.push(body.clone());
            match (f.answer)(&body) {
                Some(t) => Reply::json(&completion(&t)),
                None => {
                    Reply::new("400 Bad Request", "{\"error\": {\"message\": \"unknown request\"}}")
                }
            }
        }
        ("POST", "/v1/files") => {
            let (file, purpose) = multipart(req);
            assert_eq!(purpose, "batch");
            let id = format!("file-in-{}", f.files.len());
            f.files.insert(id.clone(), file);
            Reply::json(&json!({"id": id, "object": "file", "purpose": "batch"}))
        }
        ("POST", "/v1/batches") => {
            let body = req.json();
            assert_eq!(
                (body["endpoint"].as_str(), body["completion_window"].as_str()),
                (Some("/v1/chat/completions"), Some("24h"))
            );
            let file = f
                .files
                .get(body["input_file_id"].as_str().unwrap_or_default())
                .cloned()
                .expect("an uploaded file");
            let input: Vec<(String, Value)> = String::from_utf8(file)
                .unwrap()
                .lines()
                .map(|l| {
                    let v: Value = serde_json::from_str(l).expect("a JSONL line");
                    assert_eq!(
                        (v["method"].as_str(), v["url"].as_str()),
                        (Some("POST"), Some("/v1/chat/completions")),
                        "{v}"
                    );
                    (v["custom_id"].as_str().unwrap().to_owned(), v["body"].clone())
                })
                .collect();
            f.uploaded.extend(input.iter().map(|(k, _)| k.clone()));
            let id = format!("batch_{}", f.batches.len());
            f.batches.push(FakeBatch {
                input,
                polls: 0,
                metadata: body["metadata"].clone(),
                ended: None,
            });
            Reply::json(
                &json!({"id": id, "object": "batch", "status": "validating", "metadata": body["metadata"]}),
            )
        }
        ("GET", p) if p.starts_with("/v1/batches?") => {
            let data: Vec<Value> = f.batches.iter().enumerate().map(|(i, b)| json!({"id": format!("batch_{i}"), "status": "in_progress", "metadata": b.metadata})).collect();
            Reply::json(&json!({"object": "list", "data": data}))
        }
        ("GET", p) if p.starts_with("/v1/batches/") => {
            let id = p.trim_start_matches("/v1/batches/").to_owned();
            let i: usize = id.trim_start_matches("batch_").parse().unwrap();
            let hold = f.hold;
            f.polls.push((id.clone(), hold));
            if let Some(ended) = &f.batches[i].ended {
                return Reply::json(ended);
            }
            f.batches[i].polls += 1;
            let polls = f.batches[i].polls;
            let status = match polls {
                1 => "validating",
                _ if hold || polls < 4 => "in_progress",
                4 => "finalizing",
                _ => "",
            };
            if !status.is_empty() {
                return Reply::json(&json!({"id": id, "status": status}));
            }
            // The end: write the output and error files.
            let (mut output, mut errors) = (String::new(), String::new());
            for (key, body) in &f.batches[i].input {
                match (f.script)(i, key) {
                    Line::Answer => {
                        let text = (f.answer)(body).expect("the fake knows every request");
                        output += &format!(
                            "{}\n",
                            json!({"id": "r", "custom_id": key, "response": {"status_code": 200, "request_id": "q", "body": completion(&text)}, "error": null})
                        );
                    }
                    Line::ServerError => {
                        output += &format!(
                            "{}\n",
                            json!({"id": "r", "custom_id": key, "response": {"status_code": 500, "body": {"error": {"message": "upstream failed"}}}, "error": null})
                        );
                    }
                    Line::Expired => {
                        errors += &format!(
                            "{}\n",
                            json!({"id": "r", "custom_id": key, "response": null, "error": {"code": "batch_expired", "message": "not run in time"}})
                        )
                    }
                    Line::Missing => {}
                }
            }
            let (out_id, err_id) = (format!("file-out-{i}"), format!("file-err-{i}"));
            f.files.insert(out_id.clone(), output.into_bytes());
            f.files.insert(err_id.clone(), errors.into_bytes());
            let status = if (f.expires)(i) { "expired" } else { "completed" };
            let ended = json!({"id": id, "status": status, "output_file_id": out_id, "error_file_id": err_id});
            f.batches[i].ended = Some(ended.clone());
            Reply::json(&ended)
        }
        ("GET", p) if p.starts_with("/v1/files/") && p.ends_with("/content") => {
            let id = p.trim_start_matches("/v1/files/").trim_end_matches("/content");
            match f.files.get(id) {
                Some(bytes) => Reply::new("200 OK", bytes.clone()),
                None => Reply::new("404 Not Found", "{}"),
            }
        }
        _ => Reply::new("404 Not Found", format!("no route for {method} {path}")),
    }
}

fn fake(
    answer: Box<Answer>,
    script: Box<Script>,
    expires: fn(usize) -> bool,
) -> (String, Arc<Mutex<Fake>>) {
    let state = Arc::new(Mutex::new(Fake {
        files: HashMap::new(),
        batches: Vec::new(),
        uploaded: Vec::new(),
        sync: Vec::new(),
        hold: false,
        polls: Vec::new(),
        answer,
        script,
        expires,
    }));
    let shared = state.clone();
    let server = serve(move |req| respond(&shared, req));
    (format!("{}/v1", server.url()), state)
}

fn batch_config(url: &str) -> LlmConfig {
    LlmConfig {
        base_url: url.into(),
        api_key_env: String::new(),
        mode: StoreMode::Live,
        model: "m".into(),
        transport: Transport::Batch,
        batch: BatchConfig { poll_interval_secs: 0.02, collect_ms: 50, ..BatchConfig::default() },
        retry: RetryConfig {
            max_attempts: 3,
            min_delay_ms: 10,
            max_delay_ms: 20,
            ..RetryConfig::default()
        },
        timeout_secs: 10.0,
        prices: [("m".to_owned(), ModelPrice { input_per_million: 1.0, output_per_million: 4.0 })]
            .into(),
        ..LlmConfig::default()
    }
}

/// `abbreviate` requests of problems `lcb_<i>` asking `q<i>`, for each `i` of `items`.
fn questions(items: std::ops::Range<u32>) -> Vec<ChatRequest> {
    let ask = |i| {
        let messages = vec![ChatMessage { role: Role::User, content: format!("q{i}") }];
        let params = SamplingParams::default();
        request(LlmStage::Abbreviate, &format!("lcb_{i}"), "m", messages, &params, 0, "p")
    };
    items.map(ask).collect()
}

/// Six requests through one batch: polled through `validating`, `in_progress` and
/// `finalizing`; it expires with two answers, one 500 line, one `batch_expired` line and two
/// requests missing. The 500 is sent once synchronously; only the four unanswered go in a
/// second batch, which completes; every answer is in the store; the accounting shows five
/// batch answers at half price and one synchronous.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_an_error_line_and_an_expired_batch_with_partial_output() {
    let answer: Box<Answer> =
        Box::new(|body| Some(format!("answer to {}", body["messages"][0]["content"].as_str()?)));
    let order = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
    let requests = questions(0..6);
    for (i, r) in requests.iter().enumerate() {
        order.lock().unwrap().insert(r.key(), i);
    }
    let o = order.clone();
    let script: Box<Script> = Box::new(move |batch, key| {
        let Some(&i) = o.lock().unwrap().get(key) else {
            return Line::Answer;
        };
        match (batch, i) {
            (0, 0 | 1) => Line::Answer,
            (0, 2) => Line::ServerError,
            (0, 3) => Line::Expired,
            (0, _) => Line::Missing,
            _ => Line::Answer,
        }
    });
    let (url, state) = fake(answer, script, |i| i == 0);
    let dir = tempfile::tempdir().unwrap();
    let cfg = batch_config(&url);
    let store = dir.path().join("store");
    let inner = Gateway::new(&cfg, ResponseStore::open(&store), None).unwrap();
    let gateway = BatchGateway::new(&cfg, inner, None, state_dir_of(&store)).unwrap();
    let answers =
        coreb_llm::run::ordered(requests.iter().collect(), 6, |r| gateway.complete(r)).await;
    for (i, a) in answers.into_iter().enumerate() {
        let a = a.unwrap_or_else(|e| panic!("request {i}: {e}"));
        assert_eq!(a.text, format!("answer to q{i}"));
    }
    {
        let f = state.lock().unwrap();
        assert_eq!(f.batches.len(), 2, "one batch, then one resubmission");
        let key = |i: usize| requests[i].key();
        let mut first: Vec<String> = f.batches[0].input.iter().map(|(k, _)| k.clone()).collect();
        let mut second: Vec<String> = f.batches[1].input.iter().map(|(k, _)| k.clone()).collect();
        first.sort();
        second.sort();
        let mut all: Vec<String> = (0..6).map(key).collect();
        all.sort();
        let mut unanswered: Vec<String> = [3, 4, 5].map(key).to_vec();
        unanswered.sort();
        assert_eq!(
            (first, second),
            (all, unanswered),
            "only the unanswered requests of the expired batch go again"
        );
        assert_eq!(f.sync.len(), 1, "the 500 line is retried synchronously, once");
        assert_eq!(f.sync[0]["messages"][0]["content"], "q2");
        let polls_of = |id: &str| f.polls.iter().filter(|(b, _)| b == id).count();
        assert!(
            polls_of("batch_0") >= 5 && polls_of("batch_1") >= 5,
            "validating, in_progress ×2, finalizing, end: {:?}",
            f.polls
        );
    }
    assert_eq!(ResponseStore::open(&store).keys().unwrap().len(), 6);
    assert_eq!(
        std::fs::read_dir(state_dir_of(&store)).unwrap().count(),
        0,
        "finished submissions are removed"
    );
    let rows = gateway.usage();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!((row.from_batch, row.from_endpoint, row.sent), (5, 6, 7), "{row:?}");
    // 1000 prompt + 100 completion tokens each at 1 and 4 per 1M: 0.0014 synchronous, half by batch.
    assert!(
        (row.batch_cost - 5.0 * 0.0007).abs() < 1e-12
            && (row.cost - (5.0 * 0.0007 + 0.0014)).abs() < 1e-12,
        "{row:?}"
    );

    // A rerun asks nothing: every answer is in the store.
    let hits = state.lock().unwrap().polls.len();
    let inner = Gateway::new(&cfg, ResponseStore::open(&store), None).unwrap();
    let again = BatchGateway::new(&cfg, inner, None, state_dir_of(&store)).unwrap();
    for r in &requests {
        again.complete(r).await.unwrap();
    }
    assert_eq!(
        {
            let f = state.lock().unwrap();
            (f.batches.len(), f.sync.len(), f.polls.len())
        },
        (2, 1, hits)
    );

    // A crash after the batch was created but before its id was recorded: the submission on
    // disk has no batch id; the rerun finds the batch by its metadata and creates none.
    let late = questions(6..8);
    {
        let mut f = state.lock().unwrap();
        let input = late
            .iter()
            .map(|r| {
                (r.key(), json!({"messages": [{"role": "user", "content": r.messages[0].content}]}))
            })
            .collect();
        f.batches.push(FakeBatch {
            input,
            polls: 0,
            metadata: json!({"coreb_submission": "s-interrupted"}),
            ended: None,
        });
    }
    let orphan = json!({"format": "coreb-llm-batch/1", "submission": "s-interrupted", "round": 0, "input_file_id": "file-in-9", "batch_id": null, "requests": late});
    fs_err::write(state_dir_of(&store).join("s-interrupted.json"), orphan.to_string()).unwrap();
    let inner = Gateway::new(&cfg, ResponseStore::open(&store), None).unwrap();
    let third = BatchGateway::new(&cfg, inner, None, state_dir_of(&store)).unwrap();
    let answers = coreb_llm::run::ordered(late.iter().collect(), 2, |r| third.complete(r)).await;
    assert_eq!(
        answers.into_iter().map(|a| a.unwrap().text).collect::<Vec<_>>(),
        ["answer to q6", "answer to q7"]
    );
    let f = state.lock().unwrap();
    assert_eq!(
        (
            f.batches.len(),
            f.files.keys().filter(|k| k.starts_with("file-in")).count(),
            f.sync.len()
        ),
        (3, 2, 1),
        "no upload, no new batch"
    );
    assert!(f.polls.iter().any(|(b, _)| b == "batch_2"));
}

/// The key of a request body as the fake answers it: the model, conversation and sampling.
fn body_key(body: &Value) -> String {
    json!([
        body["model"],
        body["messages"],
        body["temperature"],
        body["top_p"],
        body["max_tokens"],
        body["seed"]
    ])
    .to_string()
}

/// Answers to every request the sample build makes: the committed sample store's texts,
/// looked up by the request body.
fn sample_answers() -> HashMap<String, String> {
    let store = ResponseStore::open(root().join("tests/fixtures/sample/store"));
    let mut out = HashMap::new();
    for key in store.keys().unwrap() {
        let e = store.get(&key).unwrap().unwrap();
        let r = &e.request;
        let body = json!({"model": r.model, "messages": r.messages, "temperature": r.params.temperature, "top_p": r.params.top_p, "max_tokens": r.params.max_tokens, "seed": r.params.seed});
        out.insert(body_key(&body), e.response.text.clone());
    }
    out
}

/// The sample's manifest, live against `url` with `transport`, building into `dir`.
fn manifest(dir: &Path, url: &str, transport: &str) -> PathBuf {
    let sample = fs_err::read_to_string(root().join("manifests/sample.toml")).unwrap();
    let r = root();
    let text = sample
        .replace("output_dir = \"../build/sample\"", &format!("output_dir = \"{}\"", dir.join("build").display()))
        .replace("releases_dir = \"../releases/sample\"", &format!("releases_dir = \"{}\"", dir.join("releases").display()))
        .replace("response_store = \"../tests/fixtures/sample/store\"", &format!("response_store = \"{}\"", dir.join("store").display()))
        .replace("prompts_dir = \"../prompts\"", &format!("prompts_dir = \"{}\"", r.join("prompts").display()))
        .replace("url = \"../tests/fixtures/sample/problems.jsonl\"", &format!("url = \"{}\"", r.join("tests/fixtures/sample/problems.jsonl").display()))
        .replace(
            "mode = \"replay\"\nbase_url = \"https://api.openai.com/v1\"\napi_key_env = \"OPENAI_API_KEY\"",
            &format!("mode = \"live\"\nbase_url = \"{url}\"\napi_key_env = \"\"\ntransport = \"{transport}\"\ntimeout_secs = 30"),
        );
    assert!(text.contains("transport = "), "the sample manifest's [llm] changed");
    let text = format!(
        "{text}\n[llm.batch]\npoll_interval_secs = 0.05\ncollect_ms = 100\n\n[llm.prices.\"gpt-4o-mini-2024-07-18\"]\ninput_per_million = 0.15\noutput_per_million = 0.6\n"
    );
    written(dir.join("manifest.toml"), text)
}

fn rewrite_requests(dir: &Path) -> Value {
    let record: Value = serde_json::from_str(
        &fs_err::read_to_string(dir.join("build/artifacts/rewrite/record.json")).unwrap(),
    )
    .unwrap();
    record["local"]["requests"].clone()
}

/// The sample built live synchronously, then through batches by a build killed (SIGKILL)
/// while its first batch is in flight and restarted: the restart polls the same batch, no
/// request reaches the server twice, nothing goes synchronously, the two releases are the
/// same bytes, and the cost is the batch price, shown as such.
#[test]
fn a_build_killed_while_its_batch_is_in_flight_resumes_the_same_batch() {
    let answers = sample_answers();
    let answer: Box<Answer> = Box::new(move |body| answers.get(&body_key(body)).cloned());
    let (url, state) = fake(answer, Box::new(|_, _| Line::Answer), |_| false);

    let sync_dir = tempfile::tempdir().unwrap();
    let out = run(coreb().arg("build").arg(manifest(sync_dir.path(), &url, "sync")));
    assert!(out.status.success(), "{}", text(&out));
    let sync_sent = state.lock().unwrap().sync.len();
    assert!(sync_sent > 0);

    let dir = tempfile::tempdir().unwrap();
    let batch_manifest = manifest(dir.path(), &url, "batch");
    state.lock().unwrap().hold = true;
    let mut child = coreb()
        .arg("build")
        .arg(&batch_manifest)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        let polled = state.lock().unwrap().polls.iter().filter(|(b, _)| b == "batch_0").count();
        if polled >= 3 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the build never polled its batch");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let states = state_dir_of(&dir.path().join("store"));
    let persisted: Vec<Value> = fs_err::read_dir(&states)
        .unwrap()
        .map(|e| serde_json::from_str(&fs_err::read_to_string(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert_eq!(persisted.len(), 1);
    assert_eq!(persisted[0]["batch_id"], "batch_0", "the batch id is on disk before polling");
    let first_batch = state.lock().unwrap().batches[0].input.len();

    state.lock().unwrap().hold = false;
    let out = run(coreb().arg("build").arg(&batch_manifest));
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);

    let f = state.lock().unwrap();
    assert!(
        f.polls.iter().any(|(b, hold)| b == "batch_0" && !hold),
        "the restart polls the same batch: {:?}",
        f.polls
    );
    assert_eq!(f.batches[0].input.len(), first_batch);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for k in &f.uploaded {
        *seen.entry(k.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "requests uploaded twice: {twice:?}");
    assert_eq!(f.sync.len(), sync_sent, "the batch build sends nothing synchronously");
    assert_eq!(
        f.uploaded.len(),
        sync_sent,
        "the batches carry exactly the requests of the synchronous build"
    );
    drop(f);
    assert_eq!(fs_err::read_dir(&states).unwrap().count(), 0);

    // The same release, byte for byte, but for the build manifest the MANIFEST quotes (its
    // text names the transport and this test's temporary paths) and the regeneration kit,
    // which carries that manifest and the answers as stored (batch entries say how they came).
    let files = |d: &Path| {
        tree_sha256(&d.join("releases"))
            .into_iter()
            .filter(|(p, _)| !p.ends_with("MANIFEST.json") && !p.contains("/regeneration/"))
            .collect::<Vec<_>>()
    };
    assert_eq!(files(dir.path()), files(sync_dir.path()), "the same release files");
    let manifest_of = |d: &Path| {
        let mut m: Value = serde_json::from_str(
            &fs_err::read_to_string(d.join("releases/v202503/MANIFEST.json")).unwrap(),
        )
        .unwrap();
        let quoted = m.as_object_mut().unwrap().remove("build_manifest").unwrap();
        // The kit's entries: it quotes that manifest and the answers as stored.
        m["files"].as_object_mut().unwrap().retain(|k, _| !k.starts_with("regeneration/"));
        (m, quoted["text"].as_str().unwrap().replace(&d.display().to_string(), "<dir>"))
    };
    let ((batch_manifest_json, batch_text), (sync_manifest_json, sync_text)) =
        (manifest_of(dir.path()), manifest_of(sync_dir.path()));
    assert_eq!(batch_manifest_json, sync_manifest_json);
    assert_eq!(
        batch_text.replace("transport = \"batch\"", "transport = \"sync\""),
        sync_text,
        "the quoted manifests differ only in the transport"
    );

    // The cost report: the batch answers at half the synchronous price, shown as such.
    let (s, b) = (rewrite_requests(sync_dir.path()), rewrite_requests(dir.path()));
    let (sync_cost, batch_cost) = (s["cost"].as_f64().unwrap(), b["cost"].as_f64().unwrap());
    assert!(sync_cost > 0.0 && (batch_cost - sync_cost / 2.0).abs() < 1e-12, "sync {s}, batch {b}");
    assert_eq!(
        (b["batch_cost"].as_f64(), b["from_batch"].as_u64()),
        (Some(batch_cost), s["from_endpoint"].as_u64())
    );
    assert!(
        stderr.contains(&format!("answers by batch (cost {batch_cost:.6} at the batch price)")),
        "{stderr}"
    );
}
