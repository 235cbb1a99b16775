//! Solutions: generated programs, one per (problem, model, language, sample).

use serde::{Deserialize, Serialize};

use crate::problem::ProblemId;

/// A language CoREB generates solutions in (its five).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Python 3.
    Python,
    /// C++ (g++, C++17).
    Cpp,
    /// Java (17).
    Java,
    /// Go.
    Go,
    /// Ruby.
    Ruby,
}

impl Language {
    /// All five, in CoREB's order.
    pub const ALL: [Language; 5] =
        [Language::Python, Language::Cpp, Language::Java, Language::Go, Language::Ruby];

    /// The lower-case name (`python`, `cpp`, `java`, `go`, `ruby`).
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Cpp => "cpp",
            Language::Java => "java",
            Language::Go => "go",
            Language::Ruby => "ruby",
        }
    }

    /// Parse the lower-case name.
    pub fn parse(s: &str) -> Option<Self> {
        Language::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// The name a person writes (`Python`, `C++`, `Java`, `Go`, `Ruby`): what a
    /// language-constrained query says.
    pub fn display_name(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Cpp => "C++",
            Language::Java => "Java",
            Language::Go => "Go",
            Language::Ruby => "Ruby",
        }
    }

    /// The name with the version the judge runs (`Python 3`, `C++17`, `Java 17`, `Go`,
    /// `Ruby`): what the `generate` prompt asks for, and what the model audit's report says.
    pub fn versioned_name(self) -> &'static str {
        match self {
            Language::Python => "Python 3",
            Language::Cpp => "C++17",
            Language::Java => "Java 17",
            Language::Go => "Go",
            Language::Ruby => "Ruby",
        }
    }

    /// The usual source file extension (`py`, `cpp`, `java`, `go`, `rb`).
    pub fn extension(self) -> &'static str {
        match self {
            Language::Python => "py",
            Language::Cpp => "cpp",
            Language::Java => "java",
            Language::Go => "go",
            Language::Ruby => "rb",
        }
    }
}

coreb_base::display_as_str!(Language);

/// A solution id: `<problem>/<model>/<language>/<sample>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SolutionId(String);

impl SolutionId {
    /// The id of one generated sample.
    pub fn new(problem: &ProblemId, model: &str, language: Language, sample: u32) -> Self {
        SolutionId(format!("{problem}/{model}/{language}/{sample}"))
    }

    /// Wrap an id read back from a table.
    pub fn from_raw(id: String) -> Self {
        SolutionId(id)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SolutionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One generated program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Solution {
    /// Its id.
    pub id: SolutionId,
    /// The problem it solves.
    pub problem_id: ProblemId,
    /// The model that wrote it.
    pub model: String,
    /// Its language.
    pub language: Language,
    /// Sample index (0-based) for several samples per model and language.
    pub sample: u32,
    /// The extracted source code.
    pub code: String,
}

#[cfg(test)]
mod tests {
    use super::Language;

    #[test]
    fn every_language_has_its_generate_fragment() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        let prompts = coreb_llm::prompt::Prompts::load(&dir).unwrap();
        for lang in Language::ALL {
            prompts[coreb_llm::LlmStage::Generate].fragment(&format!("language_{lang}")).unwrap();
        }
    }
}
