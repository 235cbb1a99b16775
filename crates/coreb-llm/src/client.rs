//! One HTTP attempt at `POST <base_url>/chat/completions`, classified.
//!
//! Every outcome the endpoint (or the network) can produce maps to one [`Attempt`]:
//! a usable answer, a retryable failure (429, 408, 409, 5xx, timeouts, refused or cut
//! connections, bodies that are not a chat completion such as HTML from a proxy or truncated
//! JSON) of one [`Failure`] kind (which the endpoint's circuit counts), an authorisation
//! failure (401/403, which stops the run), a 404 (no such model, or no chat endpoint at that
//! URL: stops the run too) or a rejection (other 4xx, which loses the item). The retry loop
//! itself lives in [`super::gateway`].
//!
//! This module does not retry, wait, or touch the store.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ChatMessage, ChatRequest, FinishReason, TokenUsage};
use coreb_http::retry::retry_after;

/// The outcome of one attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// The endpoint answered with a chat completion.
    Answer {
        /// The message text.
        text: String,
        /// Why it stopped.
        finish_reason: FinishReason,
        /// Token usage.
        usage: TokenUsage,
    },
    /// Worth another try, perhaps after the server's `Retry-After`.
    Retry {
        /// What went wrong, for the final error.
        reason: String,
        /// The server's `Retry-After` / `retry-after-ms`, if any.
        after: Option<Duration>,
        /// What kind of failure.
        failure: Failure,
    },
    /// 401 or 403.
    Unauthorized {
        /// The status.
        status: u16,
    },
    /// 404: the model or the chat endpoint itself does not exist; no request can succeed.
    NotFound {
        /// The start of the body.
        body: String,
    },
    /// Any other 4xx: the request itself is wrong; retrying will not help.
    Rejected {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
}

/// The kind of a retryable failure, as the endpoint's circuit counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The request never reached the endpoint: connection refused, DNS, TLS, a connect
    /// timeout.
    Unreached,
    /// Sent, but no answer came: a timeout, a connection cut before or during the body.
    Transport,
    /// A 5xx.
    ServerError,
    /// A 2xx whose body is not a chat completion (HTML from a proxy, broken JSON, no choices).
    NotProtocol,
    /// 429, 408, 409, 425: throttled, the endpoint is up.
    Throttled,
}

impl Failure {
    /// Did the request reach the endpoint (is it one the server received)?
    pub fn reached(self) -> bool {
        self != Failure::Unreached
    }

    /// What the endpoint's circuit makes of it.
    pub fn outcome(self) -> coreb_http::circuit::Outcome {
        use coreb_http::circuit::Outcome;
        match self {
            Failure::Unreached | Failure::Transport => Outcome::Transport,
            Failure::ServerError | Failure::NotProtocol => Outcome::ServerError,
            Failure::Throttled => Outcome::Throttled,
        }
    }
}

/// A chat-completions client for one endpoint.
pub struct HttpClient {
    http: reqwest::Client,
    url: String,
    api_key: Option<String>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("HttpClient")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    top_p: f64,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    stream: bool,
    /// The schema in OpenAI's or llama-cpp-python's form.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<serde_json::Value>,
    /// The schema in vLLM's form.
    #[serde(skip_serializing_if = "Option::is_none")]
    guided_json: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl HttpClient {
    /// A client for `base_url` (including `/v1`) with a whole-request timeout.
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Self, reqwest::Error> {
        let http = coreb_http::client_builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .build()?;
        Ok(HttpClient { http, url: format!("{base_url}/chat/completions"), api_key })
    }

    /// The URL requests are posted to (`<base_url>/chat/completions`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Send one request and classify what comes back.
    pub async fn attempt(&self, request: &ChatRequest) -> Attempt {
        let body = match wire_body(request) {
            Ok(b) => b,
            Err(e) => {
                return Attempt::Rejected {
                    status: 0,
                    body: format!("cannot encode the request: {e}"),
                };
            }
        };
        let mut builder = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = match builder.send().await {
            Ok(r) => r,
            Err(e) => {
                let failure = if e.is_connect() { Failure::Unreached } else { Failure::Transport };
                return Attempt::Retry { reason: describe(&e), after: None, failure };
            }
        };
        let status = response.status().as_u16();
        let after = retry_after(response.headers());
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => {
                return Attempt::Retry {
                    reason: format!("HTTP {status}, body cut: {}", describe(&e)),
                    after,
                    failure: Failure::Transport,
                };
            }
        };
        classify(status, after, &text)
    }
}

/// The JSON body of a request as the endpoint receives it.
pub fn wire_body(request: &ChatRequest) -> serde_json::Result<Vec<u8>> {
    let (response_format, guided_json) = match &request.response_format {
        Some(f) => f.mode.wire(&f.schema),
        None => (None, None),
    };
    let wire = WireRequest {
        model: &request.model,
        messages: &request.messages,
        temperature: request.params.temperature,
        top_p: request.params.top_p,
        max_tokens: request.params.max_tokens,
        seed: request.params.seed,
        stream: false,
        response_format,
        guided_json,
    };
    serde_json::to_vec(&wire)
}

/// Classify a status and body (pure; unit-tested).
pub fn classify(status: u16, after: Option<Duration>, body: &str) -> Attempt {
    match status {
        200..=299 => match serde_json::from_str::<WireResponse>(body) {
            Ok(r) => match r.choices.into_iter().next() {
                Some(choice) => Attempt::Answer {
                    text: choice.message.content.unwrap_or_default(),
                    finish_reason: FinishReason::parse(choice.finish_reason.as_deref()),
                    usage: r
                        .usage
                        .map(|u| TokenUsage {
                            prompt_tokens: u.prompt_tokens,
                            completion_tokens: u.completion_tokens,
                        })
                        .unwrap_or_default(),
                },
                None => Attempt::Retry {
                    reason: format!("HTTP {status} with no choices"),
                    after,
                    failure: Failure::NotProtocol,
                },
            },
            Err(e) => Attempt::Retry {
                reason: format!("HTTP {status}, not a chat completion ({e}): {}", snippet(body)),
                after,
                failure: Failure::NotProtocol,
            },
        },
        401 | 403 => Attempt::Unauthorized { status },
        404 => Attempt::NotFound { body: snippet(body) },
        s if coreb_http::retry::is_retryable_status(s) => {
            let failure = if s >= 500 { Failure::ServerError } else { Failure::Throttled };
            Attempt::Retry { reason: format!("HTTP {status}: {}", snippet(body)), after, failure }
        }
        _ => Attempt::Rejected { status, body: snippet(body) },
    }
}

/// What one `GET <base_url>/models` said about the models an endpoint serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelListing {
    /// The ids it lists (OpenAI's `{"data": [{"id": …}, …]}`), sorted.
    Served(Vec<String>),
    /// It answered, but not with a list of models (a 404, another status, a body of another
    /// shape): some OpenAI-compatible servers have no `/models`, so nothing can be checked.
    Unlisted(String),
}

/// Why `GET <base_url>/models` says the endpoint cannot serve a build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListingError {
    /// No answer: refused, DNS, TLS, a timeout.
    #[error("`{url}` cannot be reached: {error}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What failed.
        error: String,
    },
    /// 401 or 403: the credentials are refused.
    #[error("`{url}` refused the credentials (HTTP {status}): {body}")]
    Credentials {
        /// The URL asked.
        url: String,
        /// The status.
        status: u16,
        /// The start of the answer.
        body: String,
    },
}

/// Ask `<base_url>/models` (one request, no retry) which models the endpoint serves.
pub async fn list_models(
    base_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<ModelListing, ListingError> {
    let url = format!("{base_url}/models");
    let unreachable =
        |e: &reqwest::Error| ListingError::Unreachable { url: url.clone(), error: describe(e) };
    let http = coreb_http::client_builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| unreachable(&e))?;
    let mut builder = http.get(&url);
    if let Some(key) = api_key {
        builder = builder.bearer_auth(key);
    }
    let response = builder.send().await.map_err(|e| unreachable(&e))?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|e| unreachable(&e))?;
    if status == 401 || status == 403 {
        return Err(ListingError::Credentials { url, status, body: snippet(&body) });
    }
    if status != 200 {
        return Ok(ModelListing::Unlisted(format!("HTTP {status}")));
    }
    #[derive(Deserialize)]
    struct List {
        data: Vec<Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        id: String,
    }
    match serde_json::from_str::<List>(&body) {
        Ok(list) => {
            let mut ids: Vec<String> = list.data.into_iter().map(|e| e.id).collect();
            ids.sort();
            ids.dedup();
            Ok(ModelListing::Served(ids))
        }
        Err(_) => Ok(ModelListing::Unlisted("HTTP 200, not a list of models".into())),
    }
}

/// Does an error body say that `model` is unknown? OpenAI's `model_not_found`, vLLM's "The
/// model `m` does not exist", Ollama's "model \"m\" not found", Gemini's "models/m is not
/// found", LiteLLM's "Invalid model name" …
pub fn names_unknown_model(body: &str, model: &str) -> bool {
    let lower = body.to_lowercase();
    if [
        "model_not_found",
        "model not found",
        "invalid model",
        "unknown model",
        "no such model",
        "model does not exist",
    ]
    .iter()
    .any(|p| lower.contains(p))
    {
        return true;
    }
    !model.is_empty()
        && body.contains(model)
        && ["not found", "does not exist"].iter().any(|p| lower.contains(p))
}

fn snippet(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "body cut"
    } else {
        "request failed"
    };
    format!("{kind}: {}", coreb_base::errors::chain(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_http::retry::http_date;

    #[test]
    fn classification() {
        let ok = r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#;
        assert_eq!(
            classify(200, None, ok),
            Attempt::Answer {
                text: "hi".into(),
                finish_reason: FinishReason::Stop,
                usage: TokenUsage { prompt_tokens: 5, completion_tokens: 1 }
            }
        );
        let len = ok.replace("\"stop\"", "\"length\"");
        assert!(matches!(
            classify(200, None, &len),
            Attempt::Answer { finish_reason: FinishReason::Length, .. }
        ));
        let not_protocol = |body: &str| {
            matches!(
                classify(200, None, body),
                Attempt::Retry { failure: Failure::NotProtocol, .. }
            )
        };
        assert!(not_protocol("<html><body>Bad gateway</body></html>"));
        assert!(not_protocol("{\"choices\": [{\"mess"));
        assert!(not_protocol("{\"choices\": []}"));
        assert!(matches!(
            classify(429, Some(Duration::from_secs(2)), "{\"error\":{\"code\":429}}"),
            Attempt::Retry { after: Some(_), failure: Failure::Throttled, .. }
        ));
        assert!(matches!(
            classify(503, None, "<html>"),
            Attempt::Retry { failure: Failure::ServerError, .. }
        ));
        assert_eq!(classify(401, None, ""), Attempt::Unauthorized { status: 401 });
        assert_eq!(classify(403, None, ""), Attempt::Unauthorized { status: 403 });
        assert!(matches!(
            classify(404, None, "{\"error\": \"model 'm' not found\"}"),
            Attempt::NotFound { .. }
        ));
        assert!(matches!(classify(400, None, "bad model"), Attempt::Rejected { status: 400, .. }));
        use coreb_http::circuit::Outcome;
        assert_eq!(
            [
                Failure::Unreached,
                Failure::Transport,
                Failure::ServerError,
                Failure::NotProtocol,
                Failure::Throttled
            ]
            .map(|f| (f.reached(), f.outcome())),
            [
                (false, Outcome::Transport),
                (true, Outcome::Transport),
                (true, Outcome::ServerError),
                (true, Outcome::ServerError),
                (true, Outcome::Throttled)
            ]
        );
    }

    #[test]
    fn unknown_models_as_endpoints_word_them() {
        let m = "gpt-5-nano";
        for body in [
            r#"{"error": {"message": "The model `gpt-5-nano` does not exist or you do not have access to it.", "type": "invalid_request_error", "code": "model_not_found"}}"#,
            r#"{"object": "error", "message": "The model `gpt-5-nano` does not exist.", "type": "NotFoundError", "code": 404}"#,
            r#"{"error": "model \"gpt-5-nano\" not found, try pulling it first"}"#,
            r#"{"error": {"code": 404, "message": "models/gpt-5-nano is not found for API version v1beta", "status": "NOT_FOUND"}}"#,
            r#"{"error": {"message": "Invalid model name passed in model=gpt-5-nano"}}"#,
        ] {
            assert!(names_unknown_model(body, m), "{body}");
        }
        for body in [
            "<html>404 Not Found</html>",
            r#"{"error": "messages: too long"}"#,
            r#"{"detail": "Not Found"}"#,
            r#"{"error": {"message": "Unknown parameter 'seed' for gpt-5-nano"}}"#,
            r#"{"error": {"message": "This model's maximum context length is 8192 tokens (gpt-5-nano)"}}"#,
        ] {
            assert!(!names_unknown_model(body, m), "{body}");
        }
    }

    #[test]
    fn the_schema_goes_on_the_wire_in_the_mode_asked() {
        use crate::{JsonSchema, LlmStage, SamplingParams, StructuredOutput};
        let schema = JsonSchema::parse(
            "rewrite",
            std::path::Path::new("s"),
            r#"{"type": "object", "properties": {}, "additionalProperties": false}"#,
        )
        .unwrap();
        let plain = crate::run::request(
            LlmStage::Rewrite,
            "i",
            "m",
            Vec::new(),
            &SamplingParams::default(),
            0,
            "p",
        );
        let body = |r: &ChatRequest| {
            serde_json::from_slice::<serde_json::Value>(&wire_body(r).unwrap()).unwrap()
        };
        let b = body(&plain);
        assert!(b.get("response_format").is_none() && b.get("guided_json").is_none(), "{b}");
        let b = body(&plain.clone().with_schema(Some(&schema), StructuredOutput::JsonSchema));
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["name"], "rewrite");
        assert_eq!(b["response_format"]["json_schema"]["schema"], schema.value);
        let b = body(&plain.clone().with_schema(Some(&schema), StructuredOutput::JsonObjectSchema));
        assert_eq!(
            b["response_format"],
            serde_json::json!({"type": "json_object", "schema": schema.value})
        );
        let b = body(&plain.clone().with_schema(Some(&schema), StructuredOutput::GuidedJson));
        assert_eq!(
            (b["guided_json"].clone(), b.get("response_format")),
            (schema.value.clone(), None)
        );
        let b = body(&plain.clone().with_schema(Some(&schema), StructuredOutput::None));
        assert!(b.get("response_format").is_none() && b.get("guided_json").is_none(), "{b}");
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(http_date("Wed, 21 Oct 2015 07:28:00 GMT"), Some(1_445_412_480));
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date("Tue, 29 Feb 2028 12:00:00 GMT"), Some(1_835_438_400));
        assert_eq!(http_date("soon"), None);
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut past = reqwest::header::HeaderMap::new();
        past.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
    }
}
