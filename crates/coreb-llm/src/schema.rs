//! JSON schemas of the answers that are JSON (`prompts/<stage>.schema.json`), how an endpoint
//! is asked to follow one, and the check that an answer does.
//!
//! A schema travels with its prompt ([`crate::prompt::Prompt::schema`]); its sha256 (of the
//! file's bytes) is part of the request key, like the prompt's. The gateway sends it in the
//! form the manifest's `llm.structured_output` names ([`StructuredOutput::wire`]): OpenAI's
//! `json_schema` (OpenAI, vLLM, llama.cpp's own server), llama-cpp-python's `json_object` with
//! a `schema`, vLLM's `guided_json`, or nothing. Whatever the mode, the answer is checked
//! against the same schema ([`JsonSchema::validate`]) before a stage parses it.
//!
//! Validation covers the subset of JSON Schema that OpenAI's strict structured outputs
//! accept and that coreb's schemas use: `type` (one name), `properties`, `required`,
//! `additionalProperties` (a boolean), `items`, `enum`, `minItems`/`maxItems`,
//! `minLength`/`maxLength` (in characters), and the annotations `title`/`description`.
//! A schema file using any other keyword is refused when it is loaded, naming the keyword
//! and where it is, so no rule is ever silently left unchecked. (The `jsonschema` crate would
//! check everything, at ~55 more crates to build; see docs/building.md.)

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use coreb_base::hashing::sha256_hex;

/// How an endpoint is asked for JSON that follows a schema (`llm.structured_output`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// OpenAI's `response_format: {"type": "json_schema", "json_schema": {"name", "strict": true,
    /// "schema"}}`: OpenAI, vLLM, llama.cpp's `llama-server`.
    #[default]
    JsonSchema,
    /// `response_format: {"type": "json_object", "schema": {...}}`: llama-cpp-python's server
    /// (which refuses the `json_schema` form).
    JsonObjectSchema,
    /// vLLM's `guided_json: {...}` beside the messages.
    GuidedJson,
    /// Nothing is sent: the prompt alone asks for JSON (the answer is validated all the same).
    None,
}

impl StructuredOutput {
    /// The snake_case name, as in a manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredOutput::JsonSchema => "json_schema",
            StructuredOutput::JsonObjectSchema => "json_object_schema",
            StructuredOutput::GuidedJson => "guided_json",
            StructuredOutput::None => "none",
        }
    }

    /// The request fields that ask for `schema` in this mode: `(response_format, guided_json)`.
    pub fn wire(self, schema: &JsonSchema) -> (Option<Value>, Option<Value>) {
        match self {
            StructuredOutput::JsonSchema => (
                Some(
                    serde_json::json!({"type": "json_schema", "json_schema": {"name": schema.name, "strict": true, "schema": schema.value}}),
                ),
                None,
            ),
            StructuredOutput::JsonObjectSchema => {
                (Some(serde_json::json!({"type": "json_object", "schema": schema.value})), None)
            }
            StructuredOutput::GuidedJson => (None, Some(schema.value.clone())),
            StructuredOutput::None => (None, None),
        }
    }
}

coreb_base::display_as_str!(StructuredOutput);

/// A loaded schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonSchema {
    /// Its name (the stage; OpenAI's `json_schema.name`).
    pub name: String,
    /// The schema.
    pub value: Value,
    /// sha256 of the file's bytes.
    pub sha256: String,
}

/// Keywords [`JsonSchema::validate`] enforces or that carry no rule.
const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "title",
    "description",
];
const TYPES: &[&str] = &["object", "array", "string", "number", "integer", "boolean", "null"];

impl JsonSchema {
    /// Parse a schema file's text (`path` names it in errors) and check that it uses only the
    /// supported keywords.
    pub fn parse(name: &str, path: &Path, text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| format!("`{}`: not JSON: {e}", path.display()))?;
        check_schema(&value, "").map_err(|e| format!("`{}`: {e}", path.display()))?;
        Ok(JsonSchema { name: name.to_owned(), value, sha256: sha256_hex(text.as_bytes()) })
    }

    /// Does `answer` follow the schema? The error names the first place that does not
    /// (a JSON pointer, `/` for the whole answer) and why.
    pub fn validate(&self, answer: &Value) -> Result<(), String> {
        validate(&self.value, answer, &mut String::new())
    }
}

fn check_schema(schema: &Value, at: &str) -> Result<(), String> {
    let Value::Object(map) = schema else {
        return Err(format!("`{}`: a schema must be a JSON object", pointer(at)));
    };
    for key in map.keys() {
        if !KEYWORDS.contains(&key.as_str()) {
            return Err(format!(
                "`{}`: keyword `{key}` is not supported (supported: {})",
                pointer(at),
                KEYWORDS.join(", ")
            ));
        }
    }
    match map.get("type") {
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => {}
        Some(other) => {
            return Err(format!(
                "`{}/type`: expected one of {}, not {other}",
                at,
                TYPES.join(", ")
            ));
        }
        None => return Err(format!("`{}`: `type` is missing", pointer(at))),
    }
    if let Some(props) = map.get("properties") {
        let Value::Object(props) = props else {
            return Err(format!("`{at}/properties`: must be an object"));
        };
        for (name, sub) in props {
            check_schema(sub, &format!("{at}/properties/{name}"))?;
        }
    }
    if let Some(items) = map.get("items") {
        check_schema(items, &format!("{at}/items"))?;
    }
    if let Some(required) = map.get("required") {
        let names = required.as_array().filter(|a| a.iter().all(Value::is_string));
        let Some(names) = names else {
            return Err(format!("`{at}/required`: must be a list of property names"));
        };
        let props = map.get("properties").and_then(Value::as_object);
        if let Some(missing) = names
            .iter()
            .filter_map(Value::as_str)
            .find(|n| !props.is_some_and(|p| p.contains_key(*n)))
        {
            return Err(format!("`{at}/required`: `{missing}` is not among the `properties`"));
        }
    }
    if map.get("additionalProperties").is_some_and(|v| !v.is_boolean()) {
        return Err(format!("`{at}/additionalProperties`: only `true` or `false` is supported"));
    }
    if map.get("enum").is_some_and(|v| !v.is_array()) {
        return Err(format!("`{at}/enum`: must be a list"));
    }
    for bound in ["minItems", "maxItems", "minLength", "maxLength"] {
        if map.get(bound).is_some_and(|v| !v.is_u64()) {
            return Err(format!("`{at}/{bound}`: must be a non-negative integer"));
        }
    }
    Ok(())
}

fn pointer(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn validate(schema: &Value, value: &Value, at: &mut String) -> Result<(), String> {
    let empty = Map::new();
    let s = schema.as_object().unwrap_or(&empty);
    let fail = |at: &str, why: String| Err(format!("`{}`: {why}", pointer(at)));
    let bound = |k: &str| s.get(k).and_then(Value::as_u64).map(|b| b as usize);
    if let Some(want) = s.get("type").and_then(Value::as_str) {
        let got = type_name(value);
        if got != want && !(want == "number" && got == "integer") {
            return fail(at, format!("expected {want}, found {got}"));
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return fail(at, format!("{value} is not one of {}", Value::Array(options.clone())));
    }
    match value {
        Value::Object(obj) => {
            let props = s.get("properties").and_then(Value::as_object).unwrap_or(&empty);
            for name in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !obj.contains_key(name) {
                    return fail(at, format!("required property `{name}` is missing"));
                }
            }
            for (name, v) in obj {
                let len = at.len();
                at.push('/');
                at.push_str(name);
                match props.get(name) {
                    Some(sub) => validate(sub, v, at)?,
                    None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return fail(at, "property not allowed by the schema".into());
                    }
                    None => {}
                }
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            if let Some(min) = bound("minItems").filter(|m| items.len() < *m) {
                return fail(at, format!("{} items, fewer than {min}", items.len()));
            }
            if let Some(max) = bound("maxItems").filter(|m| items.len() > *m) {
                return fail(at, format!("{} items, more than {max}", items.len()));
            }
            if let Some(sub) = s.get("items") {
                for (i, v) in items.iter().enumerate() {
                    let len = at.len();
                    at.push_str(&format!("/{i}"));
                    validate(sub, v, at)?;
                    at.truncate(len);
                }
            }
        }
        Value::String(text) => {
            let chars = text.chars().count();
            if let Some(min) = bound("minLength").filter(|m| chars < *m) {
                return fail(at, format!("{chars} characters, fewer than {min}"));
            }
            if let Some(max) = bound("maxLength").filter(|m| chars > *m) {
                return fail(at, format!("{chars} characters, more than {max}"));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> JsonSchema {
        JsonSchema::parse("t", Path::new("t.schema.json"), &v.to_string()).unwrap()
    }

    #[test]
    fn answers_are_checked_against_the_subset() {
        let s = schema(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "tests": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"], "additionalProperties": false}},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "score": {"type": "number"}
            },
            "required": ["title", "tests"],
            "additionalProperties": false
        }));
        assert_eq!(
            s.validate(&json!({"title": "x", "tests": [{"input": "1"}], "kind": "a", "score": 3})),
            Ok(())
        );
        let err = |v: Value| s.validate(&v).unwrap_err();
        assert_eq!(err(json!([])), "`/`: expected object, found array");
        assert_eq!(err(json!({"tests": []})), "`/`: required property `title` is missing");
        assert_eq!(err(json!({"title": "", "tests": []})), "`/title`: 0 characters, fewer than 1");
        assert_eq!(
            err(json!({"title": "x", "tests": [{"input": 5}]})),
            "`/tests/0/input`: expected string, found integer"
        );
        assert_eq!(
            err(json!({"title": "x", "tests": [{"input": "1", "extra": 1}]})),
            "`/tests/0/extra`: property not allowed by the schema"
        );
        assert_eq!(
            err(json!({"title": "x", "tests": [{"input": "1"}, {"input": "2"}, {"input": "3"}]})),
            "`/tests`: 3 items, more than 2"
        );
        assert_eq!(
            err(json!({"title": "x", "tests": [], "kind": "c"})),
            "`/kind`: \"c\" is not one of [\"a\",\"b\"]"
        );
        assert_eq!(
            err(json!({"title": "x", "tests": [], "other": 1})),
            "`/other`: property not allowed by the schema"
        );
    }

    #[test]
    fn unsupported_keywords_are_refused_at_load() {
        let bad = |v: Value| {
            JsonSchema::parse("t", Path::new("p/t.schema.json"), &v.to_string()).unwrap_err()
        };
        let e = bad(
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}),
        );
        assert!(
            e.starts_with("`p/t.schema.json`: `/properties/a`: keyword `pattern` is not supported"),
            "{e}"
        );
        assert!(bad(json!({"type": ["string", "null"]})).contains("`/type`: expected one of"));
        assert!(
            bad(json!({"type": "object", "required": ["a"]}))
                .contains("`a` is not among the `properties`")
        );
        assert!(
            bad(json!({"type": "object", "additionalProperties": {"type": "string"}}))
                .contains("only `true` or `false`")
        );
        assert!(bad(json!({"properties": {}})).contains("`type` is missing"));
        assert!(JsonSchema::parse("t", Path::new("t"), "{").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn wire_forms_of_each_mode() {
        let s = schema(json!({"type": "object", "properties": {}, "additionalProperties": false}));
        let (rf, guided) = StructuredOutput::JsonSchema.wire(&s);
        assert_eq!(
            rf.unwrap(),
            json!({"type": "json_schema", "json_schema": {"name": "t", "strict": true, "schema": s.value}})
        );
        assert!(guided.is_none());
        assert_eq!(
            StructuredOutput::JsonObjectSchema.wire(&s),
            (Some(json!({"type": "json_object", "schema": s.value})), None)
        );
        assert_eq!(StructuredOutput::GuidedJson.wire(&s), (None, Some(s.value.clone())));
        assert_eq!(StructuredOutput::None.wire(&s), (None, None));
        let parsed: StructuredOutput = serde_json::from_str("\"json_object_schema\"").unwrap();
        assert_eq!(parsed, StructuredOutput::JsonObjectSchema);
    }
}
