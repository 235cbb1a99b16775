//! The LLM gateway and stages against a fault-injecting OpenAI-compatible server on
//! 127.0.0.1 (raw tokio, started by each test): retries, Retry-After, timeouts, broken and
//! non-JSON bodies, 401, `finish_reason: length`, per-item parse failures, the response
//! store (rerun sends nothing, replay misses name the request, record-only refreshes, a
//! killed writer never leaves half an entry) and `coreb store stats|export|import`; the
//! endpoint's circuit (timeouts in a row stop the stage; the faults above, each on a first
//! attempt, never open it) and the stops at once (401, an unknown model, a wrong URL).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coreb_data::problem::{Platform, Problem, ProblemId};
use coreb_data::rewritten::{RewrittenProblem, TestOrigin};
use coreb_data::solution::Language;
use coreb_http::RetryConfig;
use coreb_llm::prompt::Prompts;
use coreb_llm::run::{LlmStageError, ModelPlan, RejectReason};
use coreb_llm::{
    Gateway, LlmConfig, LlmError, LlmFailureKind, LlmGateway, LlmStage, ResponseStore,
    SamplingParams, StageModels, StoreMode, StructuredOutput,
};
use coreb_stages::abbreviate::{AbbreviateConfig, AbbreviateOutput, abbreviate};
use coreb_stages::distract::{DistractConfig, distract};
use coreb_stages::generate::{GenerateConfig, generate};
use coreb_stages::queries::{QueriesConfig, QueriesOutput, queries};
use coreb_stages::rewrite::{RewriteConfig, RewriteOutput, RewritePlans, RewritePrompts, rewrite};
use serde_json::{Value, json};

use crate::support::{coreb, root, run, stderr_has, text};

// ---------------------------------------------------------------------------------------
// The fake endpoint.

/// What the server does with one request.
#[derive(Debug, Clone)]
enum Reply {
    /// 200 with a chat completion.
    Answer { text: String, finish: &'static str },
    /// A status with an optional Retry-After and a body.
    Status { code: u16, retry_after: Option<u64>, body: String },
    /// 200 with this raw body (malformed JSON, HTML).
    Raw(String),
    /// Never answer.
    Hang,
    /// Promise a long body, send a bit, close.
    Cut,
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    user: String,
    model: String,
    seed: Option<u64>,
    at: Instant,
    auth: bool,
    /// The whole request body.
    body: Value,
}

struct Server {
    url: String,
    hits: Arc<AtomicU64>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

type Script = dyn Fn(&str, &str, u32, &Value) -> Reply + Send + Sync;

impl Server {
    /// Start a server ([`crate::support::http`]); `script(user_message, model, attempt)`
    /// decides each reply, `attempt` counting from 1 per distinct (model, messages, seed).
    async fn start(script: impl Fn(&str, &str, u32) -> Reply + Send + Sync + 'static) -> Server {
        Server::start_with_body(move |user, model, attempt, _| script(user, model, attempt)).await
    }

    /// [`Server::start`] with a script that also sees the request body.
    async fn start_with_body(
        script: impl Fn(&str, &str, u32, &Value) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let hits = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let attempts: Mutex<BTreeMap<String, u32>> = Mutex::default();
        let (h, s) = (hits.clone(), seen.clone());
        let server = crate::support::http::serve(move |request| {
            h.fetch_add(1, Ordering::SeqCst);
            answer(request, &s, &attempts, &script)
        });
        Server { url: format!("{}/v1", server.url()), hits, seen }
    }

    fn hits(&self) -> u64 {
        self.hits.load(Ordering::SeqCst)
    }
}

fn answer(
    request: &crate::support::Request,
    seen: &Mutex<Vec<Seen>>,
    attempts: &Mutex<BTreeMap<String, u32>>,
    script: &Script,
) -> crate::support::Reply {
    use crate::support::Reply as Http;
    let body = request.json();
    let user = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let seed = body["seed"].as_u64();
    let auth =
        request.header("authorization").is_some_and(|v| v.eq_ignore_ascii_case("bearer test-key"));
    seen.lock().unwrap().push(Seen {
        user: user.clone(),
        model: model.clone(),
        seed,
        at: Instant::now(),
        auth,
        body: body.clone(),
    });
    let attempt = {
        let mut a = attempts.lock().unwrap();
        let n = a.entry(format!("{model}\u{0}{seed:?}\u{0}{}", body["messages"])).or_insert(0);
        *n += 1;
        *n
    };
    let json = |status: u16, payload: String| {
        Http::new(&format!("{status} X"), payload).header("content-type: application/json")
    };
    match script(&user, &model, attempt, &body) {
        Reply::Answer { text, finish } => {
            let b = json!({"id": "x", "object": "chat.completion", "created": 1, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
                "usage": {"prompt_tokens": user.len() / 4, "completion_tokens": 7, "total_tokens": 7 + user.len() / 4}});
            json(200, b.to_string())
        }
        Reply::Status { code, retry_after, body } => match retry_after {
            Some(s) => json(code, body).header(format!("retry-after: {s}")),
            None => json(code, body),
        },
        Reply::Raw(body) => json(200, body),
        Reply::Hang => Http::Hang(Duration::from_secs(60)),
        Reply::Cut => {
            // Promise a 4000-byte body, send its start, close.
            let start = "{\"choices\": [{\"message\"";
            json(200, format!("{start:<4000}")).cut_after(start.len())
        }
    }
}

// ---------------------------------------------------------------------------------------
// Good answers for each prompt, and the faults keyed by markers in the prompt text.

fn words(n: usize, word: &str) -> String {
    vec![word; n].join(" ")
}

fn good_answer(user: &str, model: &str) -> String {
    if user.contains("Rewrite the problem below") {
        let title = user.split("\nTitle: ").nth(1).and_then(|s| s.lines().next()).unwrap_or("?");
        let starter = user.split("Starter code:\n").nth(1).unwrap_or("").trim();
        let starter_code = if starter == "(none)" {
            String::new()
        } else {
            "class Solution:\n    def countCrates(self, xs):\n        pass".into()
        };
        json!({"title": format!("Crates of {title}"), "statement": format!("## Story\nIn the **warehouse**, {}", words(30, "crate")), "starter_code": starter_code}).to_string()
    } else if user.contains("test cases, as a JSON array") {
        let tail = user.split("objects:\n").nth(1).unwrap_or("[]");
        let list = tail.split("\n\nAnswer with").next().unwrap_or("[]");
        let tests: Vec<Value> = serde_json::from_str(list).unwrap_or_default();
        let out: Vec<Value> = tests.iter().map(|t| json!({"input": t["input"].as_str().unwrap_or("").replace("apple", "crate"), "output": t["output"]})).collect();
        format!("Here you go:\n```json\n{}\n```", json!({"tests": out}))
    } else if user.contains("Write four new problem statements") {
        json!({"operation_type": words(25, "op"), "optimisation_objective": words(25, "obj"), "algorithmic_approach": words(25, "algo"), "problem_domain": words(25, "dom")})
            .to_string()
    } else if user.contains("Summarise the problem") {
        format!("Summary: {}", words(60, "summary"))
    } else if user.contains("Solve the problem below in") {
        let lang = user
            .split("Solve the problem below in ")
            .nth(1)
            .and_then(|s| s.split('.').next())
            .unwrap_or("?");
        format!(
            "Sure.\n<code>\n#include <bits/stdc++.h>\n// {lang} by {model}\nint main() {{ return 0; }}\n</code>\nDone."
        )
    } else if user.contains("search queries") {
        let q = "how to count the crates stored in each warehouse aisle quickly when there are up to 100000 aisles and crates";
        let variants = json!({"python": format!("{q} in Python"), "cpp": format!("{q} in C++"), "java": format!("{q} please"), "go": format!("{q} in Go"), "ruby": "ruby crates"});
        let short = json!({"python": "x", "cpp": "x", "java": "x", "go": "go", "ruby": "x"});
        json!({"queries": [
            {"type": "title_search", "query": q, "variants": variants},
            {"type": "description_search", "query": "given n crates and k aisles count how many crates every aisle of the warehouse holds and print the counts", "variants": short},
            {"type": "algorithm_search", "query": "which prefix sum technique counts warehouse crates per aisle in linear time for a hundred thousand aisles", "variants": short},
            {"type": "algorithm_search", "query": "a second algorithm query is one too many for the three types that the prompt asks the model for", "variants": short}
        ]})
        .to_string()
    } else {
        "unknown prompt".into()
    }
}

/// The default script: faults by marker, good answers otherwise.
fn faulty(user: &str, model: &str, attempt: u32) -> Reply {
    let ok = || Reply::Answer { text: good_answer(user, model), finish: "stop" };
    let first = attempt == 1;
    if user.contains("MARK429") && first {
        return Reply::Status {
            code: 429,
            retry_after: Some(1),
            body: "{\"error\": {\"message\": \"slow down\", \"code\": 429}}".into(),
        };
    }
    if user.contains("MARK500TWICE") && attempt <= 2 {
        return Reply::Status {
            code: 503,
            retry_after: None,
            body: "<html><body>upstream down</body></html>".into(),
        };
    }
    if user.contains("MARKHANG") && first {
        return Reply::Hang;
    }
    if user.contains("MARKMALFORMED") && first {
        return Reply::Raw("{\"choices\": [{\"message\": {\"content\": \"trunc".into());
    }
    if user.contains("MARKHTML") && first {
        return Reply::Raw("<!DOCTYPE html><html><body>Gateway says hi</body></html>".into());
    }
    if user.contains("MARKCUT") && first {
        return Reply::Cut;
    }
    if user.contains("MARKLENGTHONCE") && first {
        return Reply::Answer { text: "{\"title\": \"cut".into(), finish: "length" };
    }
    if user.contains("MARKLENGTHALWAYS") {
        return Reply::Answer { text: "{\"title\": \"cut".into(), finish: "length" };
    }
    if user.contains("MARK500ALWAYS") {
        return Reply::Status { code: 500, retry_after: None, body: "internal".into() };
    }
    if user.contains("MARKNOKEY") && user.contains("Rewrite the problem below") {
        return Reply::Answer {
            text: "{\"title\": \"t\", \"starter_code\": \"\"}".into(),
            finish: "stop",
        };
    }
    if user.contains("MARKTESTCOUNT") && user.contains("test cases, as a JSON array") {
        return Reply::Answer {
            text: "{\"tests\": [{\"input\": \"crate\", \"output\": \"1\"}]}".into(),
            finish: "stop",
        };
    }
    if user.contains("MARKNOCODE") && user.contains("Solve the problem below in Ruby") {
        return Reply::Answer { text: "<code>\n\n</code>".into(), finish: "stop" };
    }
    if user.contains("MARKSHORT") && user.contains("Summarise the problem") {
        return Reply::Answer { text: words(10, "short"), finish: "stop" };
    }
    if user.contains("MARKNOQUERIES") && user.contains("search queries") {
        return Reply::Answer { text: "{\"queries\": []}".into(), finish: "stop" };
    }
    if user.contains("MARKBADQUERIES") && user.contains("search queries") {
        return Reply::Answer { text: "{\"queries\": \"graph search\"}".into(), finish: "stop" };
    }
    if user.contains("MARKDISTRACTKEY") && user.contains("Write four new problem statements") {
        return Reply::Answer {
            text: json!({"operation_type": words(25, "op")}).to_string(),
            finish: "stop",
        };
    }
    ok()
}

// ---------------------------------------------------------------------------------------
// Helpers.

fn config(url: &str, mode: StoreMode) -> LlmConfig {
    LlmConfig {
        base_url: url.to_owned(),
        api_key_env: String::new(),
        mode,
        model: "model-a".into(),
        concurrency: 4,
        timeout_secs: 1.0,
        retry: RetryConfig {
            max_attempts: 4,
            min_delay_ms: 10,
            max_delay_ms: 100,
            max_retry_after_secs: 5,
            resample_attempts: 1,
        },
        // A cut answer gets one longer try.
        max_tokens_ceiling: Some(8192),
        ..LlmConfig::default()
    }
}

/// A live configuration against `url`, and its gateway over a store in `dir`.
fn live(url: &str, dir: &Path) -> (LlmConfig, Gateway) {
    let cfg = config(url, StoreMode::Live);
    let gateway = Gateway::new(&cfg, ResponseStore::open(dir), None).unwrap();
    (cfg, gateway)
}

fn prompts() -> Prompts {
    Prompts::load(&root().join("prompts")).unwrap()
}

fn problem(n: u32, title: &str, statement: &str, tests: Vec<(&str, &str)>) -> Problem {
    crate::support::stdin_problem(&n.to_string(), title, statement, &tests)
}

fn plans(config: &LlmConfig) -> RewritePlans {
    RewritePlans::for_config(config)
}

/// `rewrite` of `problems` with `config`'s plans and the repository's prompts.
async fn rewrite_with(
    rcfg: &RewriteConfig,
    config: &LlmConfig,
    problems: Vec<Problem>,
    gateway: &dyn LlmGateway,
) -> Result<RewriteOutput, LlmStageError> {
    rewrite(rcfg, &plans(config), &RewritePrompts::of(&prompts()), problems, gateway).await
}

/// `queries` (default configuration) of every one of `problems`, with `config`'s plan and the
/// repository's prompt.
async fn queries_with(
    config: &LlmConfig,
    problems: &[RewrittenProblem],
    gateway: &dyn LlmGateway,
) -> QueriesOutput {
    let plan = ModelPlan::for_stage(config, LlmStage::Queries);
    let prompt = &prompts()[LlmStage::Queries];
    queries(&QueriesConfig::default(), &plan, prompt, problems, None, gateway).await.unwrap()
}

/// `abbreviate` (default configuration) of `problems`, with `config`'s plan and the
/// repository's prompt.
async fn abbreviate_with(
    config: &LlmConfig,
    problems: &[RewrittenProblem],
    gateway: &dyn LlmGateway,
) -> AbbreviateOutput {
    abbreviate_planned(&ModelPlan::for_stage(config, LlmStage::Abbreviate), problems, gateway).await
}

/// `abbreviate` (default configuration) of `problems` with `plan` and the repository's prompt.
async fn abbreviate_planned(
    plan: &ModelPlan,
    problems: &[RewrittenProblem],
    gateway: &dyn LlmGateway,
) -> AbbreviateOutput {
    let prompt = &prompts()[LlmStage::Abbreviate];
    abbreviate(&AbbreviateConfig::default(), plan, prompt, problems, gateway).await.unwrap()
}

/// `n` stdin problems `lcb_<i>` titled `t` with one test.
fn counting(n: u32) -> Vec<Problem> {
    (0..n).map(|i| problem(i, "t", "Count. Print a number.", vec![("1", "1")])).collect()
}

const MARKS: [&str; 11] = [
    "MARK429",
    "MARK500TWICE",
    "MARKHANG",
    "MARKMALFORMED",
    "MARKHTML",
    "MARKCUT",
    "MARKLENGTHONCE",
    "MARKLENGTHALWAYS",
    "MARK500ALWAYS",
    "MARKNOKEY",
    "plain",
];

fn fault_problems() -> Vec<Problem> {
    let mut problems: Vec<Problem> = MARKS
        .iter()
        .enumerate()
        .map(|(i, m)| {
            problem(
                i as u32,
                &format!("Apples {m}"),
                "Count the apples. Print a number.",
                vec![("3\n1 2 3", "6")],
            )
        })
        .collect();
    // Word tests: rewritten by the model in batches of two.
    problems.push(problem(
        50,
        "Apple words",
        "Given a word, print its length.",
        vec![("apple", "5"), ("apples", "6"), ("3 4", "7"), ("big apple", "9"), ("Yes", "No")],
    ));
    problems.push(problem(
        51,
        "Apple words again",
        "MARKTESTCOUNT Given a word, print its length.",
        vec![("apple", "5"), ("pear", "4")],
    ));
    problems
}

// ---------------------------------------------------------------------------------------
// Tests.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_retried_or_reported_and_a_rerun_sends_nothing() {
    let server = Server::start(faulty).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&server.url, StoreMode::Live);
    let rcfg = RewriteConfig { concurrency: 6, test_batch_size: 2, max_test_chars: 2000 };
    let problems = fault_problems();
    let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path().join("store")), None).unwrap();
    let out = rewrite_with(&rcfg, &cfg, problems.clone(), &gateway).await.unwrap();

    // Every problem is either rewritten or rejected, exactly once.
    let mut seen: Vec<String> = out
        .problems
        .iter()
        .map(|p| p.id.to_string())
        .chain(out.rejected.iter().map(|r| r.item.split("/tests/").next().unwrap().to_owned()))
        .collect();
    seen.sort();
    let mut all: Vec<String> = problems.iter().map(|p| p.id.to_string()).collect();
    all.sort();
    assert_eq!(seen, all, "{:#?}", out.rejected);
    let reason =
        |id: &str| out.rejected.iter().find(|r| r.item.starts_with(id)).map(|r| r.reason.clone());
    let id = |m: &str| format!("lcb_{}", MARKS.iter().position(|x| *x == m).unwrap());
    assert!(
        matches!(reason(&id("MARKLENGTHALWAYS")), Some(RejectReason::Llm { failure }) if failure.kind == LlmFailureKind::Truncated)
    );
    assert!(
        matches!(reason(&id("MARK500ALWAYS")), Some(RejectReason::Llm { failure }) if failure.kind == LlmFailureKind::RetriesExhausted && failure.detail.contains("4 attempts"))
    );
    assert!(
        matches!(reason(&id("MARKNOKEY")), Some(RejectReason::Schema { detail }) if detail == "`/`: required property `statement` is missing")
    );
    assert!(matches!(reason("lcb_51"), Some(RejectReason::TestCount { expected: 2, got: 1 })));
    assert_eq!(out.rejected.len(), 4, "{:#?}", out.rejected);
    assert_eq!(out.problems.len(), problems.len() - 4);
    assert_eq!(
        (out.stats.llm.items_in, out.stats.llm.items_out, out.stats.llm.items_rejected),
        (13, 9, 4)
    );

    // Markdown artefacts are gone; tests are carried over by the rules.
    let words_problem: &RewrittenProblem =
        out.problems.iter().find(|p| p.id.as_str() == "lcb_50").unwrap();
    assert!(
        words_problem.statement.starts_with("Story\nIn the warehouse, crate"),
        "{}",
        words_problem.statement
    );
    assert_eq!(words_problem.public_tests[0].input, "crate");
    assert_eq!(words_problem.public_tests[2].input, "3 4");
    assert_eq!(words_problem.public_tests[4].output, "No");
    use TestOrigin::*;
    assert_eq!(words_problem.test_origins, [Model, Model, Kept, Model, Kept]);

    // Retry-After was honoured: the retry of the 429 came at least a second later.
    let times: Vec<Instant> = server
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.user.contains("MARK429") && s.user.contains("Rewrite the problem"))
        .map(|s| s.at)
        .collect();
    assert_eq!(times.len(), 2);
    assert!(
        times[1].duration_since(times[0]) >= Duration::from_millis(990),
        "{:?}",
        times[1].duration_since(times[0])
    );
    let rows = gateway.accounting().stage_rows(LlmStage::Rewrite);
    assert_eq!(rows[0].failed, 2);
    assert!(rows[0].attempts >= 20, "{rows:?}");

    // A rerun serves every stored response, cut ones included, and sends only the request
    // that never got an answer (500-always: 4 attempts).
    let before = server.hits();
    let gateway2 = Gateway::new(&cfg, ResponseStore::open(dir.path().join("store")), None).unwrap();
    let mut again = rewrite_with(&rcfg, &cfg, problems.clone(), &gateway2).await.unwrap();
    assert_eq!(server.hits() - before, 4);
    again.stats = out.stats;
    assert_eq!(again.problems, out.problems);

    // Without the failing problems, a rerun sends zero requests.
    let ok: Vec<Problem> =
        problems.into_iter().filter(|p| out.problems.iter().any(|q| q.id == p.id)).collect();
    let before = server.hits();
    let third = rewrite_with(&rcfg, &cfg, ok, &gateway2).await.unwrap();
    assert_eq!(server.hits(), before);
    assert_eq!(third.problems, out.problems);
    assert_eq!(third.stats.llm.from_endpoint, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_stops_the_whole_run() {
    let server = Server::start(|_, _, _| Reply::Status {
        code: 401,
        retry_after: None,
        body: "{\"error\": \"bad key\"}".into(),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&server.url, StoreMode::Live);
    cfg.concurrency = 1;
    let gateway =
        Gateway::new(&cfg, ResponseStore::open(dir.path()), Some("test-key".into())).unwrap();
    let problems = counting(10);
    let err = rewrite_with(
        &RewriteConfig { concurrency: 1, ..RewriteConfig::default() },
        &cfg,
        problems,
        &gateway,
    )
    .await
    .unwrap_err();
    let LlmStageError::Gateway { source: LlmError::Unauthorized { status: 401, .. }, .. } = &err
    else {
        panic!("{err:?}")
    };
    assert!(format!("{:#}", anyhow::Error::from(err)).contains("refused the credentials"));
    assert_eq!(server.hits(), 1, "nothing is sent after a 401");
    assert!(server.seen.lock().unwrap()[0].auth, "the key is sent as a bearer token");
}

/// A hanging endpoint: every attempt times out. Three in a row open the circuit, the two
/// probe requests time out too, and every request fails with one error whose counts are the
/// server's (a timed-out request reached it); far fewer attempts than 8 items × 4, nothing
/// stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_in_a_row_open_the_circuit_and_stop_the_stage() {
    let server = Server::start(|_, _, _| Reply::Hang).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&server.url, StoreMode::Live);
    cfg.circuit =
        coreb_http::CircuitConfig { transport_failures: 3, open_secs: 0.2, ..Default::default() };
    let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
    let problems = counting(8);
    let started = Instant::now();
    let err = rewrite_with(&RewriteConfig::default(), &cfg, problems, &gateway).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    let LlmStageError::Gateway { source: LlmError::EndpointDown { url, .. }, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(url, &format!("{}/chat/completions", server.url));
    let message = format!("{:#}", anyhow::Error::from(err));
    let hits = server.hits();
    assert!(
        message.contains("looks down: 3 attempts in a row got no answer, and so did 2 probe requests after a 0.2 s pause (2 attempts each); last error: timed out"),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "in this run: {hits} requests sent, {hits} failures; nothing more is sent"
        )),
        "{message}"
    );
    assert!((7..=10).contains(&hits), "{hits}: 4 in flight and 2 attempts of each probe request");
    let report = gateway.circuit().report();
    assert_eq!(
        (report.tally.attempts, report.tally.reached, report.tally.failed, report.tripped),
        (hits, hits, hits, true)
    );
    assert_eq!(
        gateway.accounting().stage_rows(LlmStage::Rewrite)[0].sent,
        hits,
        "`sent` is what the server received"
    );
    assert!(ResponseStore::open(dir.path()).keys().unwrap().is_empty());
}

/// A 404 naming the model stops the run at once; so does a 400 that says the model is
/// unknown, and a 404 that names none says the URL has no chat endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_model_or_a_wrong_url_stops_the_run_at_once() {
    let problems = counting(6);
    let cases = [
        (
            404,
            "{\"error\": \"model \\\"model-a\\\" not found, try pulling it first\"}",
            "does not know model `model-a` (HTTP 404",
        ),
        (
            400,
            "{\"error\": {\"message\": \"Invalid model name passed in model=model-a\"}}",
            "does not know model `model-a` (HTTP 400",
        ),
        (
            404,
            "<html>404 page not found</html>",
            "answered HTTP 404 (<html>404 page not found</html>): no chat-completions endpoint there; check `llm.base_url`",
        ),
    ];
    for (code, body, says) in cases {
        let server = Server::start(move |_, _, _| Reply::Status {
            code,
            retry_after: None,
            body: body.into(),
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&server.url, StoreMode::Live);
        cfg.concurrency = 1;
        let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
        let err = rewrite_with(
            &RewriteConfig { concurrency: 1, ..RewriteConfig::default() },
            &cfg,
            problems.clone(),
            &gateway,
        )
        .await
        .unwrap_err();
        let message = format!("{:#}", anyhow::Error::from(err));
        assert!(message.contains(says) && message.contains(&server.url), "{message}");
        assert_eq!(server.hits(), 1, "{message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_miss_names_the_request_and_sends_nothing() {
    let server = Server::start(faulty).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&server.url, StoreMode::Replay);
    let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
    let err =
        rewrite_with(&RewriteConfig::default(), &cfg, vec![problem(7, "t", "s", vec![])], &gateway)
            .await
            .unwrap_err();
    let message = format!("{:#}", anyhow::Error::from(err));
    assert!(
        message.contains(
            "replay: no stored response for stage `rewrite`, item `lcb_7`, model `model-a`, key `"
        ),
        "{message}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_only_refreshes_stored_responses() {
    let server = Server::start(faulty).await;
    let dir = tempfile::tempdir().unwrap();
    let problems = vec![problem(1, "t", "Count. Print a number.", vec![("1", "1")])];
    for (mode, expected_hits) in [
        (StoreMode::Live, 1),
        (StoreMode::Live, 1),
        (StoreMode::RecordOnly, 2),
        (StoreMode::Replay, 2),
    ] {
        let cfg = config(&server.url, mode);
        let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
        let out = rewrite_with(&RewriteConfig::default(), &cfg, problems.clone(), &gateway)
            .await
            .unwrap();
        assert_eq!(out.problems.len(), 1);
        assert_eq!(server.hits(), expected_hits, "{mode:?}");
    }
}

fn rewritten(n: u32, title: &str, functional: bool) -> RewrittenProblem {
    RewrittenProblem {
        id: ProblemId::from_question_id(&n.to_string()),
        title: title.into(),
        statement: "In the warehouse, count crates.".into(),
        starter_code: if functional {
            "class Solution:\n    def countCrates(self, xs: List[int]) -> int:\n        pass\n"
                .into()
        } else {
            String::new()
        },
        func_name: functional.then(|| "countCrates".into()),
        platform: if functional { Platform::Leetcode } else { Platform::Atcoder },
        difficulty: "easy".into(),
        contest_date: "2025-01-04T00:00:00".into(),
        public_tests: vec![],
        private_tests: vec![],
        model: "model-a".into(),
        test_origins: vec![],
        reference: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_covers_models_languages_samples_and_reports_empty_code() {
    let server = Server::start(faulty).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&server.url, StoreMode::Live);
    cfg.stages.insert(
        LlmStage::Generate,
        coreb_llm::StageModels {
            models: vec!["model-a".into(), "model-b".into()],
            temperature: Some(0.8),
            ..Default::default()
        },
    );
    cfg.concurrency = 8;
    cfg.prices.insert(
        "model-b".into(),
        coreb_llm::ModelPrice { input_per_million: 2.0, output_per_million: 10.0 },
    );
    let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
    let p = prompts();
    let problems = vec![rewritten(1, "Crates", false), rewritten(2, "Crates MARKNOCODE", true)];
    let gcfg = GenerateConfig { concurrency: 8, languages: Language::ALL.to_vec(), samples: 2 };
    let plan = ModelPlan::for_stage(&cfg, LlmStage::Generate);
    let out = generate(&gcfg, &plan, &p[LlmStage::Generate], &problems, &gateway).await.unwrap();
    assert_eq!(out.rows.len() + out.rejected.len(), 2 * 2 * 5 * 2);
    assert_eq!(out.rejected.len(), 4, "ruby of problem 2: 2 models × 2 samples");
    assert!(out.rejected.iter().all(|r| r.reason == RejectReason::NoCode
        && r.item.starts_with("lcb_2/")
        && r.item.contains("/ruby/")));
    let first = &out.rows[0];
    assert_eq!(first.id.as_str(), "lcb_1/model-a/python/0");
    // A Python solution: its `#` line is a comment and is stripped (`//` is not Python's).
    assert!(
        first.code.starts_with("// Python 3 by model-a\nint main()")
            && !first.code.contains("#include"),
        "{}",
        first.code
    );
    let ids: Vec<&str> = out.rows.iter().map(|s| s.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "no duplicates");
    // Samples differ in seed; functional problems ask for the solution only (issue #12), with
    // the skeleton rendered for the language; stdin problems for a whole program.
    let seen = server.seen.lock().unwrap().clone();
    let seeds: std::collections::BTreeSet<Option<u64>> = seen.iter().map(|s| s.seed).collect();
    assert_eq!(seeds, [Some(0), Some(1)].into_iter().collect());
    let functional: Vec<_> = seen.iter().filter(|s| s.user.contains("MARKNOCODE")).collect();
    assert!(
        !functional.is_empty()
            && functional.iter().all(|s| s.user.contains("Write the solution only")
                && !s.user.contains("standard input"))
    );
    assert!(functional.iter().any(|s| {
        s.user.contains("Solve the problem below in C++17")
            && s.user.contains("long long countCrates(vector<long long>& xs)")
    }));
    assert!(functional.iter().any(|s| s.user.contains("Solve the problem below in Ruby")
        && s.user.contains("def count_crates(xs)")));
    assert!(
        seen.iter()
            .filter(|s| !s.user.contains("MARKNOCODE"))
            .all(|s| s.user.contains("exactly as the statement describes")
                && s.user.contains("reads its input from standard input"))
    );
    assert_eq!(seen.iter().filter(|s| s.model == "model-b").count(), 20);
    assert_eq!(out.stats.from_endpoint, 40);
    // Tokens and cost per stage and model, from the usage the server reported.
    let rows = gateway.accounting().stage_rows(LlmStage::Generate);
    assert_eq!(
        rows.iter()
            .map(|r| (r.model.as_str(), r.from_endpoint, r.completion_tokens))
            .collect::<Vec<_>>(),
        [("model-a", 20, 140), ("model-b", 20, 140)]
    );
    let b = &rows[1];
    let expected = (b.prompt_tokens as f64 * 2.0 + b.completion_tokens as f64 * 10.0) / 1e6;
    assert!(
        b.prompt_tokens > 0 && (b.cost - expected).abs() < 1e-12 && rows[0].cost == 0.0,
        "{rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distract_abbreviate_queries_validate_what_they_parse() {
    let server = Server::start(faulty).await;
    let dir = tempfile::tempdir().unwrap();
    let (cfg, gateway) = live(&server.url, dir.path());
    let p = prompts();
    let problems = vec![
        rewritten(1, "Crates", false),
        rewritten(2, "Crates MARKDISTRACTKEY MARKSHORT MARKNOQUERIES", false),
    ];

    // The canned distractors are one-liners: the length and section rules are tested in distract.rs.
    let dcfg = DistractConfig {
        min_length_ratio: 0.0,
        require_sections: false,
        ..DistractConfig::default()
    };
    let d = distract(
        &dcfg,
        &ModelPlan::for_stage(&cfg, LlmStage::Distract),
        &p[LlmStage::Distract],
        &problems,
        &gateway,
    )
    .await
    .unwrap();
    assert_eq!(d.rows.len(), 4);
    assert_eq!(
        d.rows.iter().map(|x| x.kind.as_str()).collect::<Vec<_>>(),
        ["operation_type", "optimisation_objective", "algorithmic_approach", "problem_domain"]
    );
    assert!(
        matches!(&d.rejected[..], [r] if r.item == "lcb_2" && r.reason == RejectReason::Schema { detail: "`/`: required property `optimisation_objective` is missing".into() })
    );

    let a = abbreviate_with(&cfg, &problems, &gateway).await;
    assert_eq!(a.rows.len(), 1);
    assert_eq!(a.rows[0].words, 60);
    assert!(!a.rows[0].text.starts_with("Summary:"));
    assert!(
        matches!(&a.rejected[..], [r] if r.reason == RejectReason::WordCount { words: 10, min: 50, max: Some(150) })
    );

    // One problem at a time: the other would be listed as contrast, markers included.
    let q = queries_with(&cfg, &problems[..1], &gateway).await;
    let got: Vec<(u32, Option<Language>, &str)> = q
        .queries
        .iter()
        .map(|x| (x.index, x.language, x.text.split(" aisle").next().unwrap()))
        .collect();
    let title = "how to count the crates stored in each warehouse";
    assert_eq!(
        got,
        [
            (0, None, title),
            (0, Some(Language::Python), title),
            (0, Some(Language::Cpp), title),
            (0, Some(Language::Go), title),
            (2, None, "which prefix sum technique counts warehouse crates per")
        ]
    );
    assert_eq!(
        q.queries[1].text,
        "how to count the crates stored in each warehouse aisle quickly when there are up to 100000 aisles and crates in Python"
    );
    // Every dropped query or variant is reported with its reason; the problem without any usable query is rejected.
    let dropped: Vec<(&str, String)> = q
        .rejected
        .iter()
        .filter(|r| r.item.starts_with("lcb_1/"))
        .map(|r| (r.item.as_str(), r.reason.to_string()))
        .collect();
    assert_eq!(dropped.len() as u64, q.dropped_queries);
    assert!(
        dropped.contains(&(
            "lcb_1/title_search/java",
            "the java variant does not name its language".into()
        )),
        "{dropped:?}"
    );
    assert!(
        dropped.contains(&("lcb_1/title_search/ruby", "2 words, expected 15–40".into())),
        "{dropped:?}"
    );
    assert!(
        dropped.contains(&(
            "lcb_1/description_search",
            "uses the bare variable `n` instead of saying what it is".into()
        )),
        "{dropped:?}"
    );
    assert!(
        dropped
            .iter()
            .filter(|(i, _)| i.starts_with("lcb_1/algorithm_search"))
            .any(|(_, r)| r == "repeats another query of the answer"),
        "{dropped:?}"
    );
    assert!(
        dropped.contains(&("lcb_1/algorithm_search/go", "1 words, expected 15–40".into())),
        "{dropped:?}"
    );
    assert_eq!((q.stats.items_in, q.stats.items_out, q.stats.items_rejected), (1, 1, 0));
    let none = queries_with(&cfg, &problems[1..], &gateway).await;
    assert!(
        matches!(&none.rejected[..], [r] if r.item == "lcb_2" && r.reason == RejectReason::NoQueries),
        "{:?}",
        none.rejected
    );
    assert_eq!((none.stats.items_in, none.stats.items_out, none.stats.items_rejected), (1, 0, 1));
    assert_eq!(q.prompt_sha256, p[LlmStage::Queries].sha256);
}

/// Each queries prompt lists the most similar OTHER problems of the build as contrast (never
/// the target itself), and a shard's prompts are those of an unsharded build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_prompts_contrast_the_target_with_its_most_similar_other_problems() {
    let server = Server::start(faulty).await;
    let dir = tempfile::tempdir().unwrap();
    let (cfg, gateway) = live(&server.url, dir.path());
    let p = prompts();
    let mut problems = vec![
        rewritten(1, "Crates", false),
        rewritten(2, "Barrels", false),
        rewritten(3, "Tulips", false),
    ];
    problems[0].statement = "Count the crates of a warehouse aisle by aisle.".into();
    problems[1].statement = "Count the barrels of a warehouse aisle by aisle.".into();
    problems[2].statement = "Water tulips in a greenhouse.".into();
    let qcfg = QueriesConfig { similar: 1, ..QueriesConfig::default() };
    let plan = ModelPlan::for_stage(&cfg, LlmStage::Queries);
    let only_first = |id: &ProblemId| id.as_str() == "lcb_1";
    let q = queries(&qcfg, &plan, &p[LlmStage::Queries], &problems, Some(&only_first), &gateway)
        .await
        .unwrap();
    assert_eq!(q.stats.items_in, 1, "only the shard's problem is asked for");
    let user = server.seen.lock().unwrap().last().unwrap().user.clone();
    let contrast = user.split("Similar problems").nth(1).expect("a contrast section");
    assert!(
        contrast.contains("1. Barrels: Count the barrels of a warehouse aisle by aisle."),
        "{contrast}"
    );
    assert!(!contrast.contains("Crates") && !contrast.contains("Tulips"), "{contrast}");
    assert!(
        user.contains("python, cpp, java, go, ruby"),
        "the languages of the variants are named"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_model_takes_over_a_failing_item() {
    let server = Server::start(|user: &str, model: &str, attempt| {
        if model == "bad" {
            Reply::Status { code: 500, retry_after: None, body: String::new() }
        } else {
            faulty(user, model, attempt)
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&server.url, StoreMode::Live);
    cfg.retry.max_attempts = 2;
    let plan = ModelPlan {
        models: vec!["bad".into(), "good".into()],
        ..ModelPlan::single("bad", SamplingParams::default())
    };
    let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
    let out = abbreviate_planned(&plan, &[rewritten(1, "Crates", false)], &gateway).await;
    assert_eq!(out.rows[0].model, "good");
    assert_eq!(out.stats.fallbacks, 1);
    let rows = gateway.accounting().rows();
    assert_eq!(
        rows.iter().map(|r| (r.model.as_str(), r.attempts, r.failed)).collect::<Vec<_>>(),
        [("bad", 2, 1), ("good", 1, 0)]
    );
}

// ---------------------------------------------------------------------------------------
// Live builds with real open models (issue #22): cut answers, structured output.

/// A server that cuts every answer at `max_tokens` gets each item asked at most twice (once
/// more with the ceiling as the limit); the item ends as `truncated`, and a rerun asks
/// nothing again because cut answers are stored as what they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_answers_get_one_longer_try_end_as_truncated_and_are_never_asked_again() {
    let server = Server::start(|_, _, _| Reply::Answer {
        text: "{\"title\": \"cut".into(),
        finish: "length",
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&server.url, StoreMode::Live);
    cfg.stages.insert(
        LlmStage::Rewrite,
        StageModels { max_tokens: Some(100), max_tokens_ceiling: Some(400), ..Default::default() },
    );
    cfg.validate().unwrap();
    let problems: Vec<Problem> = (0..3)
        .map(|i| problem(i, &format!("t{i}"), "Count. Print a number.", vec![("1", "1")]))
        .collect();
    let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path().join("a")), None).unwrap();
    let out =
        rewrite_with(&RewriteConfig::default(), &cfg, problems.clone(), &gateway).await.unwrap();
    assert_eq!(server.hits(), 6, "each item twice");
    let seen = server.seen.lock().unwrap().clone();
    for i in 0..3 {
        let limits: Vec<u64> = seen
            .iter()
            .filter(|s| s.user.contains(&format!("Title: t{i}\n")))
            .map(|s| s.body["max_tokens"].as_u64().unwrap())
            .collect();
        assert_eq!(limits, [100, 400], "item {i}");
    }
    assert_eq!(out.rejected.len(), 3);
    for r in &out.rejected {
        let RejectReason::Llm { failure } = &r.reason else { panic!("{r:?}") };
        assert_eq!(
            (failure.kind, failure.detail.as_str()),
            (LlmFailureKind::Truncated, "the answer was cut at `max_tokens` = 100, then 400")
        );
        assert_eq!(
            r.reason.to_string(),
            "the answer was cut at `max_tokens` = 100, then 400",
            "a human reason, no Rust debug text"
        );
    }
    let rows = gateway.accounting().stage_rows(LlmStage::Rewrite);
    assert_eq!((rows[0].sent, rows[0].incomplete, rows[0].failed), (6, 6, 3));

    // A rerun over the same store sends nothing and ends the same way.
    let gateway2 = Gateway::new(&cfg, ResponseStore::open(dir.path().join("a")), None).unwrap();
    let again =
        rewrite_with(&RewriteConfig::default(), &cfg, problems.clone(), &gateway2).await.unwrap();
    assert_eq!(server.hits(), 6);
    assert_eq!(again.rejected, out.rejected);
    assert_eq!(gateway2.accounting().stage_rows(LlmStage::Rewrite)[0].from_store, 6);

    // Without a ceiling, one request per item, and the rejection says what would help.
    cfg.stages.clear();
    cfg.max_tokens_ceiling = None;
    let gateway3 = Gateway::new(&cfg, ResponseStore::open(dir.path().join("b")), None).unwrap();
    let out = rewrite_with(&RewriteConfig::default(), &cfg, problems, &gateway3).await.unwrap();
    assert_eq!(server.hits(), 9);
    let RejectReason::Llm { failure } = &out.rejected[0].reason else { panic!() };
    assert_eq!(failure.kind, LlmFailureKind::Truncated);
    assert!(
        failure.detail.starts_with(
            "the answer was cut at `max_tokens` = 4096; set `llm.stages.rewrite.max_tokens_ceiling`"
        ),
        "{}",
        failure.detail
    );
}

/// Another sample replaces a cut answer only in a stage that asks for several samples at a
/// temperature above 0; it is asked as the next free sample index with its seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_stage_that_samples_takes_another_sample_for_a_cut_answer() {
    // Every answer with seed 0 is cut.
    let server = Server::start_with_body(|user, model, attempt, body| {
        if body["seed"] == 0 {
            Reply::Answer { text: "<code>\nint main(".into(), finish: "length" }
        } else {
            faulty(user, model, attempt)
        }
    })
    .await;
    let p = prompts();
    let problems = vec![rewritten(1, "Crates", false)];
    let run = |samples: u32, temperature: f64| {
        let (url, p, problems) = (server.url.clone(), p.clone(), problems.clone());
        async move {
            let dir = tempfile::tempdir().unwrap();
            let mut cfg = config(&url, StoreMode::Live);
            cfg.max_tokens_ceiling = None;
            cfg.stages.insert(
                LlmStage::Generate,
                StageModels { temperature: Some(temperature), ..Default::default() },
            );
            let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
            let gcfg =
                GenerateConfig { concurrency: 2, languages: vec![Language::Python], samples };
            generate(
                &gcfg,
                &ModelPlan::for_stage(&cfg, LlmStage::Generate),
                &p[LlmStage::Generate],
                &problems,
                &gateway,
            )
            .await
            .unwrap()
        }
    };
    // A run's rows, rejections and requests sent.
    let counted = async |samples: u32, temperature: f64| {
        let before = server.hits();
        let out = run(samples, temperature).await;
        ((out.rows.len(), out.rejected.len(), server.hits() - before), out)
    };
    let (counts, out) = counted(2, 0.8).await;
    assert_eq!(counts, (2, 0, 3), "sample 0 was replaced by sample 2 (seed 2)");
    let seeds: std::collections::BTreeSet<u64> =
        server.seen.lock().unwrap().iter().filter_map(|s| s.seed).collect();
    assert_eq!(seeds, [0, 1, 2].into_iter().collect());
    assert_eq!(
        out.rows[0].id.as_str(),
        "lcb_1/model-a/python/0",
        "the solution keeps its sample id"
    );

    let (counts, _) = counted(1, 0.8).await;
    assert_eq!(counts, (0, 1, 1), "one sample asked for: no other sample");
    let (counts, out) = counted(2, 0.0).await;
    assert_eq!(counts, (1, 1, 2), "temperature 0: another seed is futile");
    assert!(
        matches!(&out.rejected[0].reason, RejectReason::Llm { failure } if failure.kind == LlmFailureKind::Truncated)
    );
}

/// A JSON answer's request carries the stage's schema in the form the manifest names, the
/// mode is keyed (each mode is another request), prose answers carry none, and an answer
/// that does not follow the schema is rejected for that, with where and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_carry_their_schema_in_the_endpoints_form_and_are_validated() {
    let server = Server::start(faulty).await;
    let dir = tempfile::tempdir().unwrap();
    let p = prompts();
    let schema = p[LlmStage::Queries].schema.clone().expect("queries has a schema");
    let problems = vec![rewritten(1, "Crates", false)];
    let modes = [
        StructuredOutput::JsonSchema,
        StructuredOutput::JsonObjectSchema,
        StructuredOutput::GuidedJson,
        StructuredOutput::None,
    ];
    for (i, mode) in modes.into_iter().enumerate() {
        let mut cfg = config(&server.url, StoreMode::Live);
        cfg.structured_output = mode;
        let gateway = Gateway::new(&cfg, ResponseStore::open(dir.path()), None).unwrap();
        let q = queries_with(&cfg, &problems, &gateway).await;
        assert_eq!(q.queries.len(), 5, "{mode:?}: two usable queries, three variants of the first");
        assert_eq!(server.hits(), i as u64 + 1, "{mode:?} is another request");
        let body = server.seen.lock().unwrap().last().unwrap().body.clone();
        match mode {
            StructuredOutput::JsonSchema => {
                assert_eq!(
                    body["response_format"],
                    json!({"type": "json_schema", "json_schema": {"name": "queries", "strict": true, "schema": schema.value}})
                );
            }
            StructuredOutput::JsonObjectSchema => assert_eq!(
                body["response_format"],
                json!({"type": "json_object", "schema": schema.value})
            ),
            StructuredOutput::GuidedJson => assert_eq!(
                (body["guided_json"].clone(), body.get("response_format")),
                (schema.value.clone(), None)
            ),
            StructuredOutput::None => assert!(
                body.get("response_format").is_none() && body.get("guided_json").is_none(),
                "{body}"
            ),
        }
    }
    // Each entry records its mode and the schema's hash with the request.
    let store = ResponseStore::open(dir.path());
    let formats: Vec<_> = store
        .keys()
        .unwrap()
        .iter()
        .map(|k| store.get(k).unwrap().unwrap().request.response_format.unwrap())
        .collect();
    assert_eq!(
        formats.iter().map(|f| f.mode).collect::<std::collections::BTreeSet<_>>(),
        modes.into_iter().collect()
    );
    assert!(formats.iter().all(|f| f.schema_sha256 == schema.sha256));
    // The same mode again: served from the store.
    let (cfg, gateway) = live(&server.url, dir.path());
    queries_with(&cfg, &problems, &gateway).await;
    assert_eq!(server.hits(), 4);

    // Prose answers carry no schema.
    abbreviate_with(&cfg, &problems, &gateway).await;
    let body = server.seen.lock().unwrap().last().unwrap().body.clone();
    assert!(body.get("response_format").is_none() && body.get("guided_json").is_none(), "{body}");

    // JSON that does not follow the schema is rejected for it, not for its syntax.
    let bad = vec![rewritten(2, "Crates MARKBADQUERIES", false)];
    let q = queries_with(&cfg, &bad, &gateway).await;
    assert!(
        matches!(&q.rejected[..], [r] if r.reason == RejectReason::Schema { detail: "`/queries`: expected array, found string".into() }),
        "{:?}",
        q.rejected
    );
    assert_eq!(
        q.rejected[0].reason.to_string(),
        "answer does not follow the schema: `/queries`: expected array, found string"
    );
}

// ---------------------------------------------------------------------------------------
// The store on disk and its command.

fn write_export(path: &Path, n: u32) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        let request = coreb_llm::run::request(
            LlmStage::Queries,
            &format!("lcb_{i}"),
            "m",
            vec![coreb_llm::ChatMessage { role: coreb_llm::Role::User, content: format!("q {i}") }],
            &SamplingParams::default(),
            0,
            "p",
        );
        let entry = json!({
            "format": "coreb-llm-response/1",
            "key": request.key(),
            "stage": "queries",
            "item": request.item,
            "request": coreb_llm::key::KeyedRequest::of(&request),
            "response": {"text": format!("{{\"queries\": [\"q {i}\"]}} {}", "padding ".repeat(200)), "finish_reason": "stop", "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
        });
        writeln!(f, "{entry}").unwrap();
    }
}

#[test]
fn store_command_stats_export_import() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("in.jsonl");
    write_export(&export, 20);
    let store = dir.path().join("store");
    let out = run(coreb().args(["store", "import"]).arg(&store).arg(&export).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"], 20);
    let out = run(coreb().args(["store", "stats"]).arg(&store).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            stats["entries"].as_u64(),
            stats["per_stage"]["queries"].as_u64(),
            stats["prompt_tokens"].as_u64()
        ),
        (Some(20), Some(20), Some(60))
    );
    // Export is sorted by key and round-trips byte for byte through another store.
    let again = dir.path().join("out.jsonl");
    assert!(run(coreb().args(["store", "export"]).arg(&store).arg(&again)).status.success());
    let store2 = dir.path().join("store2");
    assert!(run(coreb().args(["store", "import"]).arg(&store2).arg(&again)).status.success());
    let again2 = dir.path().join("out2.jsonl");
    assert!(run(coreb().args(["store", "export"]).arg(&store2).arg(&again2)).status.success());
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&again2).unwrap());
    // An entry whose key does not match its request is refused, naming file and line.
    let bad = dir.path().join("bad.jsonl");
    let line = std::fs::read_to_string(&again)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .replace("\"sample\":0", "\"sample\":1");
    std::fs::write(&bad, format!("{line}\n")).unwrap();
    let out = run(coreb().args(["store", "import"]).arg(&store).arg(&bad));
    assert!(!out.status.success());
    stderr_has(&out, "bad.jsonl`:1: key `");
}

#[test]
fn a_killed_import_never_leaves_half_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("in.jsonl");
    write_export(&export, 2000);
    let store = dir.path().join("store");
    let mut child = coreb()
        .args(["store", "import"])
        .arg(&store)
        .arg(&export)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it (SIGKILL) once it has written some entries but not all.
    let started = Instant::now();
    loop {
        let n = std::fs::read_dir(&store).map(|d| d.count()).unwrap_or(0);
        if n >= 20 || started.elapsed() > Duration::from_secs(20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the import finished before it could be killed");
    let out = run(coreb().args(["store", "stats"]).arg(&store).arg("--json"));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["invalid"], json!([]), "{}", text(&out));
    let written = stats["entries"].as_u64().unwrap();
    assert!(written > 0 && written < 2000, "{written}");
    // Resuming adds exactly the rest.
    let out = run(coreb().args(["store", "import"]).arg(&store).arg(&export).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"].as_u64().unwrap() + report["unchanged"].as_u64().unwrap(), 2000);
    assert_eq!(report["unchanged"].as_u64().unwrap(), written);
}

/// The fixture store was written by `tests/fixtures/llm/store_entry.py`, the Python reference
/// of the format: coreb must read it, agree on every key (a schema-constrained request's
/// included), and write the same bytes.
#[test]
fn python_reference_entries_match_the_rust_store_byte_for_byte() {
    let fixture = root().join("tests/fixtures/llm/store");
    let store = ResponseStore::open(&fixture);
    let keys = store.keys().unwrap();
    assert_eq!(keys.len(), 3);
    for key in &keys {
        let entry = store.get(key).unwrap().unwrap();
        assert_eq!(
            coreb_llm::store::entry_text(&entry),
            std::fs::read_to_string(store.path_of(key)).unwrap()
        );
        // Only the schema's hash is keyed.
        let schema = entry.request.response_format.as_ref().map(|f| {
            (
                f.mode,
                coreb_llm::JsonSchema {
                    name: entry.stage.to_string(),
                    value: Value::Null,
                    sha256: f.schema_sha256.clone(),
                },
            )
        });
        let request = coreb_llm::run::request(
            entry.stage,
            &entry.item,
            &entry.request.model,
            entry.request.messages.clone(),
            &entry.request.params,
            entry.request.sample,
            &entry.request.prompt_sha256,
        );
        let request = match &schema {
            Some((mode, schema)) => request.with_schema(Some(schema), *mode),
            None => request,
        };
        assert_eq!(&request.key(), key);
    }
    let out = run(coreb().args(["store", "stats"]).arg(&fixture).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (stats["entries"].as_u64(), stats["invalid"].as_array().map(Vec::len)),
        (Some(3), Some(0))
    );
    assert_eq!(
        stats["per_finish_reason"]["length"].as_u64(),
        Some(1),
        "a cut answer is an entry like any other"
    );
}

/// Authored answers become store entries by running the stage once; replay then serves
/// them and reproduces the output, and a missing answer is listed, not fatal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authored_answers_are_recorded_then_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let problems = vec![rewritten(1, "Crates", false), rewritten(2, "Boxes", false)];
    let answers =
        BTreeMap::from([((LlmStage::Abbreviate, "lcb_1".to_owned()), words(55, "crate"))]);
    let plan = ModelPlan::single("author", SamplingParams::default());
    let authored = coreb_llm::AuthoredGateway::new(answers, ResponseStore::open(dir.path()));
    let first = abbreviate_planned(&plan, &problems, &authored).await;
    assert_eq!(first.rows.len(), 1);
    assert!(
        matches!(&first.rejected[..], [r] if r.item == "lcb_2" && matches!(&r.reason, RejectReason::Llm { failure } if failure.kind == LlmFailureKind::NotAuthored))
    );
    let replay = Gateway::new(
        &config("http://127.0.0.1:9/v1", StoreMode::Replay),
        ResponseStore::open(dir.path()),
        None,
    )
    .unwrap();
    let again = abbreviate_planned(&plan, &problems[..1], &replay).await;
    assert_eq!(again.rows, first.rows);
    assert_eq!(again.stats.from_store, 1);
}
