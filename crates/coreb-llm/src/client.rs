//! One HTTP attempt at `POST <base_url>/chat/completions`, classified.
//!
//! Every outcome the endpoint (or the network) can produce maps to one [`Attempt`]:
//! a usable answer, a retryable failure (429, 408, 409, 5xx, timeouts, refused or cut
//! connections, bodies that are not a chat completion such as HTML from a proxy or truncated
//! JSON), an authorisation failure (401/403, which stops the run) or a rejection (other 4xx,
//! which loses the item). The retry loop itself lives in [`super::gateway`].
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
    },
    /// 401 or 403.
    Unauthorized {
        /// The status.
        status: u16,
    },
    /// Any other 4xx: the request itself is wrong; retrying will not help.
    Rejected {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
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
        f.debug_struct("HttpClient").field("url", &self.url).field("api_key", &self.api_key.as_ref().map(|_| "<set>")).finish()
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
    pub fn new(base_url: &str, api_key: Option<String>, timeout: Duration) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder().timeout(timeout).connect_timeout(timeout.min(Duration::from_secs(30))).build()?;
        Ok(HttpClient { http, url: format!("{base_url}/chat/completions"), api_key })
    }

    /// Send one request and classify what comes back.
    pub async fn attempt(&self, request: &ChatRequest) -> Attempt {
        let body = match wire_body(request) {
            Ok(b) => b,
            Err(e) => return Attempt::Rejected { status: 0, body: format!("cannot encode the request: {e}") },
        };
        let mut builder = self.http.post(&self.url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = match builder.send().await {
            Ok(r) => r,
            Err(e) => return Attempt::Retry { reason: describe(&e), after: None },
        };
        let status = response.status().as_u16();
        let after = retry_after(response.headers());
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => return Attempt::Retry { reason: format!("HTTP {status}, body cut: {}", describe(&e)), after },
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
                    usage: r.usage.map(|u| TokenUsage { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens }).unwrap_or_default(),
                },
                None => Attempt::Retry { reason: format!("HTTP {status} with no choices"), after },
            },
            Err(e) => Attempt::Retry { reason: format!("HTTP {status}, not a chat completion ({e}): {}", snippet(body)), after },
        },
        401 | 403 => Attempt::Unauthorized { status },
        s if coreb_http::retry::is_retryable_status(s) => Attempt::Retry { reason: format!("HTTP {status}: {}", snippet(body)), after },
        _ => Attempt::Rejected { status, body: snippet(body) },
    }
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
        assert_eq!(classify(200, None, ok), Attempt::Answer { text: "hi".into(), finish_reason: FinishReason::Stop, usage: TokenUsage { prompt_tokens: 5, completion_tokens: 1 } });
        let len = ok.replace("\"stop\"", "\"length\"");
        assert!(matches!(classify(200, None, &len), Attempt::Answer { finish_reason: FinishReason::Length, .. }));
        assert!(matches!(classify(200, None, "<html><body>Bad gateway</body></html>"), Attempt::Retry { .. }));
        assert!(matches!(classify(200, None, "{\"choices\": [{\"mess"), Attempt::Retry { .. }));
        assert!(matches!(classify(200, None, "{\"choices\": []}"), Attempt::Retry { .. }));
        assert!(matches!(classify(429, Some(Duration::from_secs(2)), "{\"error\":{\"code\":429}}"), Attempt::Retry { after: Some(_), .. }));
        assert!(matches!(classify(503, None, "<html>"), Attempt::Retry { .. }));
        assert_eq!(classify(401, None, ""), Attempt::Unauthorized { status: 401 });
        assert_eq!(classify(403, None, ""), Attempt::Unauthorized { status: 403 });
        assert!(matches!(classify(400, None, "bad model"), Attempt::Rejected { status: 400, .. }));
    }

    #[test]
    fn the_schema_goes_on_the_wire_in_the_mode_asked() {
        use crate::{JsonSchema, LlmStage, SamplingParams, StructuredOutput};
        let schema = JsonSchema::parse("rewrite", std::path::Path::new("s"), r#"{"type": "object", "properties": {}, "additionalProperties": false}"#).unwrap();
        let plain = crate::run::request(LlmStage::Rewrite, "i", "m", Vec::new(), &SamplingParams::default(), 0, "p");
        let body = |r: &ChatRequest| serde_json::from_slice::<serde_json::Value>(&wire_body(r).unwrap()).unwrap();
        let b = body(&plain);
        assert!(b.get("response_format").is_none() && b.get("guided_json").is_none(), "{b}");
        let b = body(&plain.clone().with_schema(Some(&schema), StructuredOutput::JsonSchema));
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["name"], "rewrite");
        assert_eq!(b["response_format"]["json_schema"]["schema"], schema.value);
        let b = body(&plain.clone().with_schema(Some(&schema), StructuredOutput::JsonObjectSchema));
        assert_eq!(b["response_format"], serde_json::json!({"type": "json_object", "schema": schema.value}));
        let b = body(&plain.clone().with_schema(Some(&schema), StructuredOutput::GuidedJson));
        assert_eq!((b["guided_json"].clone(), b.get("response_format")), (schema.value.clone(), None));
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
