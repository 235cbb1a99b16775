//! Prompt templates: one TOML file per prompt under `prompts/`, with named placeholders.
//!
//! A prompt file holds `id`, `version`, an optional `system` message, the `user` message and
//! optional `fragments` (named texts a stage picks from, e.g. per-language instructions of
//! `generate`). Placeholders are `{{name}}` (`[a-z][a-z0-9_]*`). [`Prompt::render`]
//! substitutes in one pass (a value containing `{{x}}` is not expanded again) and fails when
//! a placeholder has no value or a value has no placeholder, so a prompt and its stage cannot
//! drift apart silently. A prompt's [`Prompt::sha256`] is the hash of the file's bytes; it is
//! part of every request key and goes into each stage's output.
//!
//! The stages whose answer is JSON ([`LlmStage::answers_json`]) have a JSON schema beside
//! their prompt, `<stage>.schema.json` ([`Prompt::schema`]), kept in its own file so the
//! prompt's wording and the answer's shape can change apart; its sha256 is keyed like the
//! prompt's.
//!
//! This module does not read the environment or choose which prompt a stage uses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use thiserror::Error;

use crate::{ChatMessage, JsonSchema, LlmStage, Role};
use coreb_base::hashing::sha256_hex;

/// A loaded prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// Its id (`rewrite`, `generate` …).
    pub id: String,
    /// Its version (bumped on every edit by convention; the hash is what keys use).
    pub version: u32,
    /// The system message, if any.
    pub system: Option<String>,
    /// The user message.
    pub user: String,
    /// Named fragments.
    pub fragments: BTreeMap<String, String>,
    /// sha256 of the file's bytes.
    pub sha256: String,
    /// The schema of the answer, for a prompt whose answer is JSON (`<id>.schema.json`).
    pub schema: Option<JsonSchema>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptFile {
    id: String,
    version: u32,
    #[serde(default)]
    system: Option<String>,
    user: String,
    #[serde(default)]
    fragments: BTreeMap<String, String>,
}

/// A prompt that cannot be loaded or rendered.
#[derive(Debug, Error)]
pub enum PromptError {
    /// The file could not be read.
    #[error("reading prompt `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid prompt.
    #[error("prompt `{}`: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong (with the TOML line when the parser gives one).
        message: String,
    },
    /// A placeholder has no value.
    #[error("prompt `{prompt}`: placeholder `{{{{{name}}}}}` has no value")]
    MissingValue {
        /// The prompt id.
        prompt: String,
        /// The placeholder.
        name: String,
    },
    /// A value has no placeholder.
    #[error("prompt `{prompt}`: value `{name}` is given but the prompt has no `{{{{{name}}}}}`")]
    UnusedValue {
        /// The prompt id.
        prompt: String,
        /// The value's name.
        name: String,
    },
    /// A stage asked for a fragment the file does not have.
    #[error("prompt `{prompt}`: no fragment `{name}`")]
    MissingFragment {
        /// The prompt id.
        prompt: String,
        /// The fragment.
        name: String,
    },
}

static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{([a-z][a-z0-9_]*)\}\}").expect("placeholder regex"));

impl Prompt {
    /// Parse a prompt file's text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, PromptError> {
        let file: PromptFile = toml::from_str(text).map_err(|e| PromptError::Invalid {
            path: path.to_owned(),
            message: e.to_string().trim().to_owned(),
        })?;
        if file.user.trim().is_empty() {
            return Err(PromptError::Invalid {
                path: path.to_owned(),
                message: "`user` is empty".into(),
            });
        }
        Ok(Prompt {
            id: file.id,
            version: file.version,
            system: file.system,
            user: file.user,
            fragments: file.fragments,
            sha256: sha256_hex(text.as_bytes()),
            schema: None,
        })
    }

    /// Read and parse a prompt file.
    pub fn load(path: &Path) -> Result<Self, PromptError> {
        let text = fs_err::read_to_string(path)
            .map_err(|source| PromptError::Read { path: path.to_owned(), source })?;
        Self::parse(path, &text)
    }

    /// The placeholders of the system and user messages, sorted.
    pub fn placeholders(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for text in self.system.iter().chain(std::iter::once(&self.user)) {
            names.extend(PLACEHOLDER.captures_iter(text).map(|c| c[1].to_owned()));
        }
        names
    }

    /// A named fragment.
    pub fn fragment(&self, name: &str) -> Result<&str, PromptError> {
        self.fragments.get(name).map(String::as_str).ok_or_else(|| PromptError::MissingFragment {
            prompt: self.id.clone(),
            name: name.to_owned(),
        })
    }

    /// The messages with every placeholder replaced; every value must be used.
    pub fn render(&self, values: &[(&str, &str)]) -> Result<Vec<ChatMessage>, PromptError> {
        let given: BTreeMap<&str, &str> = values.iter().copied().collect();
        let used = self.placeholders();
        if let Some(name) = used.iter().find(|n| !given.contains_key(n.as_str())) {
            return Err(PromptError::MissingValue { prompt: self.id.clone(), name: name.clone() });
        }
        if let Some(name) = given.keys().find(|n| !used.contains(**n)) {
            return Err(PromptError::UnusedValue {
                prompt: self.id.clone(),
                name: (*name).to_owned(),
            });
        }
        let fill = |text: &str| {
            PLACEHOLDER
                .replace_all(text, |c: &regex::Captures| {
                    given.get(&c[1]).copied().unwrap_or_default().to_owned()
                })
                .into_owned()
        };
        let mut messages = Vec::new();
        if let Some(system) = &self.system {
            messages.push(ChatMessage { role: Role::System, content: fill(system) });
        }
        messages.push(ChatMessage { role: Role::User, content: fill(&self.user) });
        Ok(messages)
    }
}

/// The prompts of the LLM stages, keyed by the stage: one per [`LlmStage`] of the build
/// ([`LlmStage::in_build`]; file `<dir>/<stage>.toml`, and `<stage>.schema.json` beside it for
/// a stage that answers in JSON). `prompts[stage]` is a stage's prompt.
#[derive(Debug, Clone)]
pub struct Prompts(BTreeMap<LlmStage, Prompt>);

impl std::ops::Index<LlmStage> for Prompts {
    type Output = Prompt;

    /// The prompt of a build stage (every one is loaded; `rerank`'s is not a build prompt:
    /// `coreb eval` loads it, and asking it here is a bug).
    fn index(&self, stage: LlmStage) -> &Prompt {
        self.of(stage).unwrap_or_else(|| panic!("`{stage}` has no prompt among the build's"))
    }
}

impl Prompts {
    /// Load every build stage's from a directory, with the schemas of the JSON answers; each file's `id`
    /// must be its stem.
    pub fn load(dir: &Path) -> Result<Self, PromptError> {
        let load = |stage: LlmStage| -> Result<Prompt, PromptError> {
            let path = dir.join(format!("{stage}.toml"));
            let mut prompt = Prompt::load(&path)?;
            if prompt.id != stage.as_str() {
                return Err(PromptError::Invalid {
                    path,
                    message: format!("`id` is `{}`, expected `{stage}`", prompt.id),
                });
            }
            let schema_path = dir.join(format!("{stage}.schema.json"));
            match (stage.answers_json(), schema_path.exists()) {
                (true, _) => {
                    let text = fs_err::read_to_string(&schema_path).map_err(|source| {
                        PromptError::Read { path: schema_path.clone(), source }
                    })?;
                    let schema = JsonSchema::parse(stage.as_str(), &schema_path, &text).map_err(
                        |message| PromptError::Invalid { path: schema_path.clone(), message },
                    )?;
                    prompt.schema = Some(schema);
                }
                (false, true) => {
                    let message = format!(
                        "stage `{stage}` answers in prose or code, not JSON: remove this schema, it would never be used"
                    );
                    return Err(PromptError::Invalid { path: schema_path, message });
                }
                (false, false) => {}
            }
            Ok(prompt)
        };
        LlmStage::ALL
            .into_iter()
            .filter(|s| s.in_build())
            .map(|s| Ok((s, load(s)?)))
            .collect::<Result<_, _>>()
            .map(Prompts)
    }

    /// The prompt of a build stage (`None` for `rerank`, whose prompt `coreb eval` loads).
    pub fn of(&self, stage: LlmStage) -> Option<&Prompt> {
        self.0.get(&stage)
    }

    /// (id, sha256) of every prompt, for a manifest.
    pub fn hashes(&self) -> BTreeMap<String, String> {
        self.0.values().map(|p| (p.id.clone(), p.sha256.clone())).collect()
    }

    /// (id, sha256) of every schema, for a manifest.
    pub fn schema_hashes(&self) -> BTreeMap<String, String> {
        self.0
            .values()
            .filter_map(|p| p.schema.as_ref().map(|s| (p.id.clone(), s.sha256.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompts_are_keyed_by_their_stage() {
        let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        let prompts = Prompts::load(&project).unwrap();
        for stage in LlmStage::ALL {
            match stage.in_build() {
                true => {
                    assert_eq!(prompts[stage].id, stage.as_str());
                    assert_eq!(prompts[stage].schema.is_some(), stage.answers_json());
                }
                false => assert!(prompts.of(stage).is_none(), "{stage}"),
            }
        }
        let ids: Vec<String> = prompts.hashes().into_keys().collect();
        assert_eq!(ids.len(), LlmStage::ALL.into_iter().filter(|s| s.in_build()).count());
    }

    #[test]
    fn a_json_stage_needs_its_schema_and_a_prose_stage_has_none() {
        let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        let dir = tempfile::tempdir().unwrap();
        for entry in fs_err::read_dir(&project).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                fs_err::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
            }
        }
        Prompts::load(dir.path()).unwrap();
        fs_err::write(dir.path().join("abbreviate.schema.json"), "{\"type\": \"object\"}").unwrap();
        let e = Prompts::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("abbreviate.schema.json") && e.contains("not JSON"), "{e}");
        fs_err::remove_file(dir.path().join("abbreviate.schema.json")).unwrap();
        fs_err::remove_file(dir.path().join("queries.schema.json")).unwrap();
        let e = Prompts::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("queries.schema.json"), "{e}");
        fs_err::write(
            dir.path().join("queries.schema.json"),
            "{\"type\": \"object\", \"format\": \"x\"}",
        )
        .unwrap();
        let e = coreb_base::errors::chain(&Prompts::load(dir.path()).unwrap_err());
        assert!(e.contains("keyword `format` is not supported"), "{e}");
    }

    fn prompt() -> Prompt {
        Prompt::parse(Path::new("t.toml"), "id = \"t\"\nversion = 1\nsystem = \"be {{tone}}\"\nuser = \"Do {{task}} with {{tone}}.\"\n[fragments]\nx = \"y\"\n").unwrap()
    }

    #[test]
    fn render_checks_both_ways_and_is_single_pass() {
        let p = prompt();
        let m = p.render(&[("tone", "calm"), ("task", "{{tone}}")]).unwrap();
        assert_eq!(m[0].content, "be calm");
        assert_eq!(m[1].content, "Do {{tone}} with calm.");
        assert!(
            matches!(p.render(&[("tone", "x")]), Err(PromptError::MissingValue { name, .. }) if name == "task")
        );
        assert!(
            matches!(p.render(&[("tone", "x"), ("task", "y"), ("extra", "z")]), Err(PromptError::UnusedValue { name, .. }) if name == "extra")
        );
        assert_eq!(p.fragment("x").unwrap(), "y");
        assert!(p.fragment("z").is_err());
        assert!(
            Prompt::parse(
                Path::new("t.toml"),
                "id = \"t\"\nversion = 1\nuser = \"x\"\nextra = 1\n"
            )
            .is_err()
        );
    }

    #[test]
    fn project_prompts_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        let prompts = Prompts::load(&dir).unwrap();
        assert_eq!(prompts.hashes().len(), 8);
        assert_eq!(
            prompts.schema_hashes().keys().collect::<Vec<_>>(),
            ["distract", "queries", "rewrite", "rewrite_tests"]
        );
        // That every language of coreb has its `language_<name>` fragment is checked where
        // languages are known (`coreb_data::solution`).
    }
}
