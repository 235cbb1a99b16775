//! Query and document prompts of dense retrievers: a preset file (TOML, `prompts/eval/presets.toml`
//! built in) maps model-name globs to templates per task and subtask, and provider request
//! fields (`input_type`, `task`); command-line or manifest overrides replace the templates.
//!
//! Resolution for a query of `task`/`subtask` under a preset: the template is
//! `tasks."<task>/<subtask>".query`, else `tasks."<task>".query`, else the preset's `query`
//! (`"{text}"` when absent); likewise `query_fields`. A document of `task` uses
//! `tasks."<task>".document`, else `document` (documents have no subtask: a task's corpus is
//! shared by its subtasks). `{instruction}` is the preset's `instructions` under
//! `"<task>/<subtask>"`, then `"<task>"`, then the file's `[instructions]` under the same keys,
//! then the file's `"*"`. A template holds `{text}` exactly once; an override without `{text}`
//! is a prefix (`--query-prompt "query: "`).
//!
//! Pure: parses text and renders strings. Does NOT read files (the caller passes the text) nor
//! embed anything.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

impl Preset {
    /// The preset's own templates, as the scope below every task override.
    pub fn defaults(&self) -> Templates {
        Templates {
            query: self.query.clone(),
            document: self.document.clone(),
            query_fields: self.query_fields.clone(),
            document_fields: self.document_fields.clone(),
        }
    }
}

/// The preset file built into coreb (`prompts/eval/presets.toml`).
pub const BUILTIN: &str = include_str!("../../../prompts/eval/presets.toml");

/// A preset file that does not parse or holds a bad template.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {why}")]
pub struct PresetError {
    /// The file (or `built-in presets`).
    pub source_name: String,
    /// What is wrong (the TOML parser's message names the line).
    pub why: String,
}

/// Templates and request fields of one scope (a preset, or a task/subtask within it).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Templates {
    /// Query template.
    #[serde(default)]
    pub query: Option<String>,
    /// Document template (per task only).
    #[serde(default)]
    pub document: Option<String>,
    /// Extra request fields for queries.
    #[serde(default)]
    pub query_fields: Option<BTreeMap<String, String>>,
    /// Extra request fields for documents (per task only).
    #[serde(default)]
    pub document_fields: Option<BTreeMap<String, String>>,
}

/// One `[[preset]]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// Its name (`--prompt-preset`).
    pub name: String,
    /// Model-name globs (`*`, `?`), case-insensitive.
    pub models: Vec<String>,
    /// Query template for every task.
    #[serde(default)]
    pub query: Option<String>,
    /// Document template for every task.
    #[serde(default)]
    pub document: Option<String>,
    /// Extra request fields for queries.
    #[serde(default)]
    pub query_fields: Option<BTreeMap<String, String>>,
    /// Extra request fields for documents.
    #[serde(default)]
    pub document_fields: Option<BTreeMap<String, String>>,
    /// Instructions by `"<task>"` or `"<task>/<subtask>"`.
    #[serde(default)]
    pub instructions: BTreeMap<String, String>,
    /// Overrides by `"<task>"` or `"<task>/<subtask>"`.
    #[serde(default)]
    pub tasks: BTreeMap<String, Templates>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetFile {
    format: u32,
    #[serde(default)]
    instructions: BTreeMap<String, String>,
    #[serde(rename = "preset", default)]
    presets: Vec<Preset>,
}

/// A parsed preset file.
#[derive(Debug, Clone)]
pub struct Presets {
    /// Where it came from (`built-in presets` or a path), for errors and the results.
    pub source_name: String,
    /// The file's instructions.
    pub instructions: BTreeMap<String, String>,
    /// Presets in file order (the first match wins).
    pub presets: Vec<Preset>,
}

/// Templates given on the command line or in the manifest, replacing the preset's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptOverrides {
    /// Preset name to use whatever the model.
    #[serde(default)]
    pub preset: Option<String>,
    /// Query template (or prefix) for every task.
    #[serde(default)]
    pub query: Option<String>,
    /// Document template (or prefix) for every task.
    #[serde(default)]
    pub document: Option<String>,
}

/// One side's prompt, resolved: what is sent is `prefix + text + suffix` with `fields`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Side {
    /// The template with `{instruction}` filled in (`{text}` kept), as recorded.
    pub template: String,
    /// Extra request fields.
    pub fields: BTreeMap<String, String>,
    #[serde(skip)]
    prefix: String,
    #[serde(skip)]
    suffix: String,
}

impl Side {
    /// The text to embed for `text`.
    pub fn render(&self, text: &str) -> String {
        let mut s = String::with_capacity(self.prefix.len() + text.len() + self.suffix.len());
        s.push_str(&self.prefix);
        s.push_str(text);
        s.push_str(&self.suffix);
        s
    }
}

/// Match `name` against a glob of `*` and `?`, ignoring ASCII case.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let n: Vec<char> = name.to_ascii_lowercase().chars().collect();
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

fn check_template(t: &str, what: &str) -> Result<(), String> {
    match t.matches("{text}").count() {
        1 => Ok(()),
        n => Err(format!("{what}: `{t}` holds `{{text}}` {n} times, expected once")),
    }
}

impl Presets {
    /// Parse a preset file's text; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Presets, PresetError> {
        let err = |why: String| PresetError { source_name: source_name.to_owned(), why };
        let file: PresetFile =
            toml::from_str(text).map_err(|e| err(e.to_string().trim().to_owned()))?;
        if file.format != 1 {
            return Err(err(format!("`format`: expected 1, got {}", file.format)));
        }
        for p in &file.presets {
            if p.models.is_empty() {
                return Err(err(format!("preset `{}`: `models` is empty", p.name)));
            }
            let defaults = p.defaults();
            let mut scopes = vec![(format!("preset `{}`", p.name), &defaults)];
            scopes.extend(
                p.tasks.iter().map(|(k, t)| (format!("preset `{}`, task `{k}`", p.name), t)),
            );
            for (what, t) in scopes {
                for template in [&t.query, &t.document].into_iter().flatten() {
                    check_template(template, &what).map_err(&err)?;
                }
                if what.contains('/') && (t.document.is_some() || t.document_fields.is_some()) {
                    return Err(err(format!(
                        "{what}: documents are prompted per task, not per subtask"
                    )));
                }
            }
        }
        if file
            .presets
            .iter()
            .enumerate()
            .any(|(i, p)| file.presets[..i].iter().any(|q| q.name == p.name))
        {
            return Err(err("two presets share a name".into()));
        }
        Ok(Presets {
            source_name: source_name.to_owned(),
            instructions: file.instructions,
            presets: file.presets,
        })
    }

    /// The built-in presets.
    pub fn builtin() -> Presets {
        Presets::parse(BUILTIN, "built-in presets")
            .unwrap_or_else(|e| panic!("the built-in presets are valid: {e}"))
    }

    /// The preset for `model`: the one named by `name`, else the first whose glob matches.
    pub fn select(&self, model: &str, name: Option<&str>) -> Result<&Preset, PresetError> {
        let found = match name {
            Some(n) => self.presets.iter().find(|p| p.name == n),
            None => self.presets.iter().find(|p| p.models.iter().any(|g| glob_match(g, model))),
        };
        found.ok_or_else(|| PresetError {
            source_name: self.source_name.clone(),
            why: match name {
                Some(n) => format!(
                    "no preset named `{n}` (known: {})",
                    self.presets
                        .iter()
                        .map(|p| format!("`{}`", p.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => {
                    format!("no preset matches model `{model}` (add a `models = [\"*\"]` preset)")
                }
            },
        })
    }

    fn instruction<'a>(
        &'a self,
        preset: &'a Preset,
        task: &str,
        subtask: Option<&str>,
    ) -> Option<&'a str> {
        let keys: Vec<String> =
            subtask.map(|s| format!("{task}/{s}")).into_iter().chain([task.to_owned()]).collect();
        keys.iter()
            .find_map(|k| preset.instructions.get(k))
            .or_else(|| keys.iter().find_map(|k| self.instructions.get(k)))
            .or_else(|| self.instructions.get("*"))
            .map(String::as_str)
    }

    fn side(
        &self,
        preset: &Preset,
        template: String,
        fields: BTreeMap<String, String>,
        task: &str,
        subtask: Option<&str>,
    ) -> Result<Side, PresetError> {
        let err = |why: String| PresetError { source_name: self.source_name.clone(), why };
        let template =
            if template.contains("{text}") { template } else { format!("{template}{{text}}") };
        check_template(&template, &format!("task `{task}`")).map_err(&err)?;
        let template = if template.contains("{instruction}") {
            let Some(instruction) = self.instruction(preset, task, subtask) else {
                return Err(err(format!(
                    "preset `{}`: no instruction for task `{task}`",
                    preset.name
                )));
            };
            template.replace("{instruction}", instruction)
        } else {
            template
        };
        let (prefix, suffix) = template
            .split_once("{text}")
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .unwrap_or_default();
        Ok(Side { template, fields, prefix, suffix })
    }

    /// The prompt of a query of `task` (and `subtask`) under `preset`, with `overrides`.
    pub fn query_side(
        &self,
        preset: &Preset,
        task: &str,
        subtask: Option<&str>,
        overrides: &PromptOverrides,
    ) -> Result<Side, PresetError> {
        let defaults = preset.defaults();
        let scopes: Vec<&Templates> = subtask
            .and_then(|s| preset.tasks.get(&format!("{task}/{s}")))
            .into_iter()
            .chain(preset.tasks.get(task))
            .chain([&defaults])
            .collect();
        let template = overrides
            .query
            .clone()
            .or_else(|| scopes.iter().find_map(|t| t.query.clone()))
            .unwrap_or_else(|| "{text}".into());
        let fields = scopes.iter().find_map(|t| t.query_fields.clone()).unwrap_or_default();
        self.side(preset, template, fields, task, subtask)
    }

    /// The prompt of a document of `task` under `preset`, with `overrides`.
    pub fn document_side(
        &self,
        preset: &Preset,
        task: &str,
        overrides: &PromptOverrides,
    ) -> Result<Side, PresetError> {
        let defaults = preset.defaults();
        let scopes: Vec<&Templates> =
            preset.tasks.get(task).into_iter().chain([&defaults]).collect();
        let template = overrides
            .document
            .clone()
            .or_else(|| scopes.iter().find_map(|t| t.document.clone()))
            .unwrap_or_else(|| "{text}".into());
        let fields = scopes.iter().find_map(|t| t.document_fields.clone()).unwrap_or_default();
        self.side(preset, template, fields, task, None)
    }
}

/// The prompts one task was evaluated with, as written into the results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskPrompts {
    /// The document side.
    pub document: Side,
    /// The query side per subtask (`""` for queries without one).
    pub queries: BTreeMap<String, Side>,
}

/// Which preset, from where, with which overrides, and what each task got.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptsUsed {
    /// The preset's name.
    pub preset: String,
    /// The preset file (`built-in presets` or its path).
    pub source: String,
    /// Overrides given.
    pub overrides: PromptOverrides,
    /// Per task.
    pub tasks: BTreeMap<String, TaskPrompts>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_presets_resolve_per_model_task_and_subtask() {
        let p = Presets::builtin();
        let none = PromptOverrides::default();
        let c2llm = p.select("codefuse-ai/C2LLM-7B", None).unwrap();
        assert_eq!(c2llm.name, "c2llm");
        let q = p.query_side(c2llm, "text2code", Some("search"), &none).unwrap();
        assert_eq!(
            q.render("sort a list"),
            "Retrieve the most relevant code implementation for the given problem description.\nsort a list"
        );
        assert_eq!(
            p.document_side(c2llm, "text2code", &none).unwrap().render("x = 1"),
            "Retrieved Answer:x = 1"
        );
        let qwen = p.select("Qwen/Qwen3-Embedding-8B", None).unwrap();
        assert_eq!(
            p.query_side(qwen, "code2code", None, &none).unwrap().render("f()"),
            "Instruct: Retrieve equivalent code implementations across languages.\nQuery:f()"
        );
        assert_eq!(p.document_side(qwen, "code2code", &none).unwrap().render("g()"), "g()");
        assert_eq!(p.select("intfloat/e5-base-v2", None).unwrap().name, "e5");
        assert_eq!(p.select("intfloat/e5-mistral-7b-instruct", None).unwrap().name, "e5-instruct");
        let jina = p.select("jinaai/jina-code-embeddings-1.5b", None).unwrap();
        assert!(
            p.document_side(jina, "code2text", &none)
                .unwrap()
                .render("t")
                .starts_with("Candidate comment:\n")
        );
        assert!(
            p.document_side(jina, "text2code", &none)
                .unwrap()
                .render("t")
                .starts_with("Candidate code snippet:\n")
        );
        let cohere = p.select("embed-english-v3.0", None).unwrap();
        assert_eq!(
            p.query_side(cohere, "text2code", None, &none).unwrap().fields["input_type"],
            "search_query"
        );
        assert_eq!(
            p.document_side(cohere, "text2code", &none).unwrap().fields["input_type"],
            "search_document"
        );
        let raw = p.select("all-MiniLM-L6-v2", None).unwrap();
        assert_eq!(raw.name, "none");
        assert_eq!(p.query_side(raw, "cosqa", None, &none).unwrap().render("q"), "q");
        // Overrides: a prefix without `{text}`, an instruction in an override, a named preset.
        let o = PromptOverrides {
            preset: None,
            query: Some("query: ".into()),
            document: Some("<{instruction}> {text} </>".into()),
        };
        assert_eq!(p.query_side(raw, "text2code", None, &o).unwrap().render("q"), "query: q");
        assert_eq!(
            p.document_side(raw, "code2code", &o).unwrap().render("d"),
            "<Retrieve equivalent code implementations across languages.> d </>"
        );
        assert_eq!(
            p.document_side(raw, "cosqa", &o).unwrap().template,
            "<Given a query, retrieve relevant documents that answer the query.> {text} </>"
        );
        assert_eq!(p.select("anything", Some("e5")).unwrap().name, "e5");
        assert!(
            p.select("anything", Some("nope"))
                .unwrap_err()
                .to_string()
                .contains("no preset named `nope`")
        );
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let e = Presets::parse(
            "format = 1\n[[preset]]\nname = \"a\"\nmodels = [\"*\"]\nquery = \"{text} {text}\"\n",
            "p.toml",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("p.toml: preset `a`") && e.to_string().contains("2 times"),
            "{e}"
        );
        let e = Presets::parse("format = 1\n[[preset]]\nname = \"a\"\nmodels = [\"*\"]\n[preset.tasks.\"t/s\"]\ndocument = \"{text}\"\n", "p.toml").unwrap_err();
        assert!(e.to_string().contains("per task, not per subtask"), "{e}");
        let e = Presets::parse("format = 1\n[[preset]]\nname = \"a\"\nmodel = [\"*\"]\n", "p.toml")
            .unwrap_err();
        assert!(e.to_string().contains("unknown field `model`"), "{e}");
        let p = Presets::parse(
            "format = 1\n[[preset]]\nname = \"a\"\nmodels = [\"*\"]\nquery = \"{instruction}{text}\"\n[preset.instructions]\n\"t/s\" = \"S\"\n\"t\" = \"T\"\n",
            "p.toml",
        )
        .unwrap();
        let a = &p.presets[0];
        let none = PromptOverrides::default();
        assert_eq!(p.query_side(a, "t", Some("s"), &none).unwrap().render("x"), "Sx");
        assert_eq!(p.query_side(a, "t", Some("other"), &none).unwrap().render("x"), "Tx");
        assert!(
            p.query_side(a, "u", None, &none)
                .unwrap_err()
                .to_string()
                .contains("no instruction for task `u`")
        );
        assert!(
            glob_match("*c2llm*", "codefuse-ai/C2LLM-0.5B")
                && glob_match("a?c", "abc")
                && !glob_match("a?c", "abbc")
        );
    }
}
