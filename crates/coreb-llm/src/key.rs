//! The request key: sha256 of the canonical JSON of a request.
//!
//! Recipe (stable; changing it orphans every stored response):
//!
//! 1. Take the request's keyed fields as a JSON object:
//!    `{"model", "messages": [{"role", "content"}…], "params": {"temperature", "top_p",
//!    "max_tokens", "seed"}, "sample", "prompt_sha256"}` ([`KeyedRequest`]), plus, for an
//!    answer that must follow a JSON schema, `"response_format": {"mode", "schema_sha256"}`
//!    (the structured-output mode as the manifest names it, and the sha256 of the schema
//!    file). A request without a schema has no `response_format` key at all, so the keys of
//!    prose and code answers are those of the first recipe. `stage`, `item` and
//!    `on_incomplete` are not keyed.
//! 2. Serialise canonically ([`canonical_json`]): object keys sorted by their UTF-8 bytes at
//!    every level, no whitespace, strings escaped as serde_json does, numbers as serde_json
//!    writes them (integers plain, floats shortest round-trip, so `0.0`, `0.7`, `1.0`),
//!    `null` for a missing seed.
//! 3. The key is the lowercase hex sha256 of those bytes.
//!
//! It does not depend on serde_json's map order (a `preserve_order` feature enabled anywhere
//! in the build would otherwise change every key).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ChatMessage, ChatRequest, SamplingParams, StructuredOutput};
use coreb_base::hashing::sha256_hex;

/// The part of a request its key covers; also stored as the entry's `request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedRequest {
    /// The model.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Sampling parameters.
    pub params: SamplingParams,
    /// Sample index.
    pub sample: u32,
    /// sha256 of the prompt file.
    pub prompt_sha256: String,
    /// The structured-output mode and schema, for a JSON answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<KeyedFormat>,
}

/// The keyed part of a request's [`super::ResponseFormat`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedFormat {
    /// How the endpoint was asked.
    pub mode: StructuredOutput,
    /// sha256 of the schema file.
    pub schema_sha256: String,
}

impl KeyedRequest {
    /// The keyed part of a request.
    pub fn of(request: &ChatRequest) -> Self {
        KeyedRequest {
            model: request.model.clone(),
            messages: request.messages.clone(),
            params: request.params.clone(),
            sample: request.sample,
            prompt_sha256: request.prompt_sha256.clone(),
            response_format: request
                .response_format
                .as_ref()
                .map(|f| KeyedFormat { mode: f.mode, schema_sha256: f.schema.sha256.clone() }),
        }
    }

    /// Its key.
    pub fn key(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        sha256_hex(canonical_json(&value).as_bytes())
    }
}

/// The key of a request.
pub fn request_key(request: &ChatRequest) -> String {
    KeyedRequest::of(request).key()
}

/// Canonical JSON text: keys sorted at every level, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LlmStage, Role};

    fn request() -> ChatRequest {
        ChatRequest {
            stage: LlmStage::Generate,
            item: "lcb_1/m/python/0".into(),
            model: "m".into(),
            messages: vec![ChatMessage { role: Role::User, content: "hi \"there\"\n".into() }],
            params: SamplingParams { temperature: 0.7, top_p: 1.0, max_tokens: 100, seed: Some(3) },
            sample: 0,
            prompt_sha256: "ab".into(),
            response_format: None,
            on_incomplete: Default::default(),
        }
    }

    #[test]
    fn canonical_text_is_sorted_and_stable() {
        let r = request();
        let text = canonical_json(&serde_json::to_value(KeyedRequest::of(&r)).unwrap());
        assert_eq!(
            text,
            r#"{"messages":[{"content":"hi \"there\"\n","role":"user"}],"model":"m","params":{"max_tokens":100,"seed":3,"temperature":0.7,"top_p":1.0},"prompt_sha256":"ab","sample":0}"#
        );
        assert_eq!(r.key(), sha256_hex(text.as_bytes()));
    }

    #[test]
    fn key_covers_sample_model_params_not_item() {
        let r = request();
        let mut other = r.clone();
        other.item = "elsewhere".into();
        other.stage = LlmStage::Queries;
        assert_eq!(r.key(), other.key());
        for change in [
            |r: &mut ChatRequest| r.sample = 1,
            |r: &mut ChatRequest| r.model = "n".into(),
            |r: &mut ChatRequest| r.params.temperature = 0.2,
            |r: &mut ChatRequest| r.params.seed = None,
            |r: &mut ChatRequest| r.prompt_sha256 = "cd".into(),
            |r: &mut ChatRequest| r.messages[0].content.push(' '),
        ] {
            let mut c = r.clone();
            change(&mut c);
            assert_ne!(r.key(), c.key());
        }
        // What the gateway may do with a cut answer is not keyed.
        let mut c = r.clone();
        c.on_incomplete.max_tokens_ceiling = Some(9000);
        assert_eq!(r.key(), c.key());
    }

    #[test]
    fn the_schema_and_its_mode_are_keyed() {
        use crate::JsonSchema;
        let r = request();
        let schema =
            JsonSchema::parse("t", std::path::Path::new("t.schema.json"), r#"{"type": "object"}"#)
                .unwrap();
        let with = r.clone().with_schema(Some(&schema), StructuredOutput::JsonSchema);
        let text = canonical_json(&serde_json::to_value(KeyedRequest::of(&with)).unwrap());
        assert!(text.ends_with(&format!(r#""prompt_sha256":"ab","response_format":{{"mode":"json_schema","schema_sha256":"{}"}},"sample":0}}"#, schema.sha256)), "{text}");
        let other_mode = r.clone().with_schema(Some(&schema), StructuredOutput::GuidedJson);
        let other_schema = r.clone().with_schema(
            Some(
                &JsonSchema::parse("t", std::path::Path::new("t"), r#"{"type": "array"}"#).unwrap(),
            ),
            StructuredOutput::JsonSchema,
        );
        let keys = [r.key(), with.key(), other_mode.key(), other_schema.key()];
        assert_eq!(keys.iter().collect::<std::collections::BTreeSet<_>>().len(), 4, "{keys:?}");
        assert_eq!(
            r.clone().with_schema(None, StructuredOutput::GuidedJson).key(),
            r.key(),
            "no schema, no format key"
        );
    }
}
