//! Live builds against an endpoint (issue #22): the sample built in `mode = "live"` against a
//! loopback server whose answers the rewrite stage rejects stops right after `rewrite` with
//! the cause, and a rerun asks nothing again; the real-model smoke test
//! (`scripts/smoke-live`, opt-in with `COREB_SMOKE=1`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::support::{coreb, root, run, text};

/// A loopback chat endpoint ([`crate::support::http`]) answering every request with
/// `answer(request body)` (text and finish reason); returns its base URL and its request counter.
fn endpoint(answer: fn(&Value) -> (String, &'static str)) -> (String, Arc<AtomicU64>) {
    let hits = Arc::new(AtomicU64::new(0));
    let counter = hits.clone();
    let server = crate::support::http::serve(move |request| {
        counter.fetch_add(1, Ordering::SeqCst);
        let (content, finish) = answer(&request.json());
        crate::support::http::Reply::json(
            &json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
        )
    });
    (format!("{}/v1", server.url()), hits)
}

/// The sample's manifest, live against `url`, building into `dir`.
fn live_manifest(dir: &Path, url: &str, extra_llm: &str) -> PathBuf {
    let sample = fs_err::read_to_string(root().join("manifests/sample.toml")).unwrap();
    let head = sample.split("\n[llm]").next().unwrap();
    let r = root();
    let head = head
        .replace("output_dir = \"../build/sample\"", &format!("output_dir = \"{}\"", dir.join("build").display()))
        .replace("releases_dir = \"../releases/sample\"", &format!("releases_dir = \"{}\"", dir.join("releases").display()))
        .replace("response_store = \"../tests/fixtures/sample/store\"", &format!("response_store = \"{}\"", dir.join("store").display()))
        .replace("prompts_dir = \"../prompts\"", &format!("prompts_dir = \"{}\"", r.join("prompts").display()))
        .replace("url = \"../tests/fixtures/sample/problems.jsonl\"", &format!("url = \"{}\"", r.join("tests/fixtures/sample/problems.jsonl").display()));
    let manifest = dir.join("live.toml");
    let llm = format!(
        "\n[llm]\nmode = \"live\"\nbase_url = \"{url}\"\napi_key_env = \"\"\nmodel = \"small\"\nconcurrency = 2\ntimeout_secs = 10\n{extra_llm}\n[llm.stages.generate]\nmodels = [\"small\", \"small-2\"]\n"
    );
    fs_err::write(&manifest, format!("{head}{llm}")).unwrap();
    manifest
}

/// Rewrite answers a small model might give: half are JSON without the statement (the schema
/// rejects them), half are cut at `max_tokens` even with the longer try.
fn rejected_rewrites(body: &Value) -> (String, &'static str) {
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    let title = user.split("\nTitle: ").nth(1).and_then(|t| t.lines().next()).unwrap_or_default();
    if title.len().is_multiple_of(2) { (json!({"title": title, "starter_code": ""}).to_string(), "stop") } else { ("{\"title\": \"cut".into(), "length") }
}

/// A build whose rewrite stage rejects everything stops after `rewrite`, naming the stage,
/// the counts by reason and the rejections file; no later stage runs, no release gate prints
/// a score of nothing, and a rerun sends no request (the cut answers are stored too).
#[test]
fn a_build_whose_rewrite_rejects_everything_stops_there_with_the_cause() {
    let (url, hits) = endpoint(rejected_rewrites);
    let dir = tempfile::tempdir().unwrap();
    let manifest = live_manifest(dir.path(), &url, "max_tokens_ceiling = 8192");
    let out = run(coreb().arg("build").arg(&manifest));
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: the build stops after stage `rewrite`: it kept 0 of its 10 items: none are left"), "{stderr}");
    let reasons = stderr.lines().find(|l| l.trim_start().starts_with("rejections by reason:")).unwrap_or_else(|| panic!("{stderr}"));
    let rejections = dir.path().join("build/artifacts/rewrite/rejections.jsonl");
    assert!(stderr.contains(&format!("every rejection with its reason: {}", rejections.display())), "{stderr}");
    let lines: Vec<Value> = fs_err::read_to_string(&rejections).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 10);
    let schema = lines.iter().filter(|l| l["reason"]["kind"] == "schema").count();
    let truncated = lines.iter().filter(|l| l["reason"]["kind"] == "llm" && l["reason"]["failure"]["kind"] == "truncated").count();
    assert_eq!((schema, truncated), (5, 5), "titles of even length get schema-less JSON, the others cut answers: {lines:#?}");
    assert_eq!(reasons.trim(), format!("rejections by reason: schema {schema}, truncated {truncated}"));
    // Human reasons, no Rust debug text, no negative zero, nothing after rewrite.
    assert!(stderr.contains("rewrite: rejected `lcb_") && stderr.contains("answer does not follow the schema: `/`: required property `statement` is missing"), "{stderr}");
    assert!(stderr.contains("the answer was cut at `max_tokens` = 4096, then 8192"), "{stderr}");
    for bad in ["Llm {", "LlmFailure", "NotJson {", "-0.0000", "18446744073709551615", "distract:", "\x1b["] {
        assert!(!stderr.contains(bad), "`{bad}` in:\n{stderr}");
    }
    let sent = hits.load(Ordering::SeqCst);
    assert_eq!(sent, schema as u64 + 2 * truncated as u64, "a schema rejection once, a cut answer twice");

    // The rerun serves every answer from the store and stops the same way.
    let again = run(coreb().arg("build").arg(&manifest));
    assert!(!again.status.success());
    assert_eq!(hits.load(Ordering::SeqCst), sent, "{}", text(&again));
    let stderr2 = String::from_utf8_lossy(&again.stderr);
    assert!(stderr2.contains(reasons.trim()), "{stderr2}");
    assert!(stderr2.contains(&format!("0 requests sent, {sent} answers from the store")), "{stderr2}");
}

/// The real model: `scripts/smoke-live` (installs llama-cpp-python and the SmolLM2 GGUF in
/// its own venv, serves it on 127.0.0.1, builds the sample live twice). Opt-in, as it takes
/// from ~15 minutes (venv made) to over an hour on 2 busy cores: `COREB_SMOKE=1`.
#[test]
fn real_model_smoke_build() {
    if std::env::var_os("COREB_SMOKE").is_none() {
        eprintln!("real_model_smoke_build: not run; set COREB_SMOKE=1 to run scripts/smoke-live");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run(std::process::Command::new(root().join("scripts/smoke-live")).arg(dir.path().join("smoke")).env("COREB", env!("CARGO_BIN_EXE_coreb")));
    assert!(out.status.success(), "{}", text(&out));
    let figures: Value = serde_json::from_str(&fs_err::read_to_string(dir.path().join("smoke/figures.json")).unwrap()).unwrap();
    assert_eq!(figures["server_requests"]["build2"], 0);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
}
