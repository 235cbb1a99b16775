//! A problem after the counterfactual rewrite: its statement, tests and how each test was
//! carried over, and the reference solution its changed tests are re-checked with.

use serde::{Deserialize, Serialize};

use crate::problem::{Platform, Problem, ProblemId, TestCase};

/// A problem after the counterfactual rewrite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RewrittenProblem {
    /// The original problem's id (ids are kept).
    pub id: ProblemId,
    /// New title.
    pub title: String,
    /// New statement.
    pub statement: String,
    /// New starter code (empty when the original had none).
    pub starter_code: String,
    /// The method the starter code defines (LeetCode call-based problems).
    pub func_name: Option<String>,
    /// Platform of the original.
    pub platform: Platform,
    /// Difficulty of the original.
    pub difficulty: String,
    /// Contest date of the original.
    pub contest_date: String,
    /// Public tests, rewritten where needed.
    pub public_tests: Vec<TestCase>,
    /// Private tests, rewritten where needed.
    pub private_tests: Vec<TestCase>,
    /// The model that wrote the rewrite.
    pub model: String,
    /// How each test was carried over (public then private).
    pub test_origins: Vec<TestOrigin>,
    /// The reference solution `execute` re-checks the rewritten tests with (`None` when no
    /// test was rewritten, or when the model gave no usable program).
    #[serde(default)]
    pub reference: Option<Reference>,
}

/// A problem's reference solution, original and adapted (both Python 3 programs in the
/// shape `generate` asks of a Python solution).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// The model that wrote both (the one that wrote the rewrite).
    pub model: String,
    /// A solution of the original problem.
    pub original: String,
    /// The same program adapted to the rewritten problem.
    pub adapted: String,
}

/// How a test was carried over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOrigin {
    /// Context-independent: unchanged.
    Kept,
    /// Too long for a prompt but with a context-independent output: unchanged.
    KeptLong,
    /// Rewritten by the model.
    Model,
    /// Too long for a prompt: letter bijection.
    Bijection,
}

impl TestOrigin {
    /// Every origin.
    pub const ALL: [TestOrigin; 4] =
        [TestOrigin::Kept, TestOrigin::KeptLong, TestOrigin::Model, TestOrigin::Bijection];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            TestOrigin::Kept => "kept",
            TestOrigin::KeptLong => "kept_long",
            TestOrigin::Model => "model",
            TestOrigin::Bijection => "bijection",
        }
    }

    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Option<Self> {
        TestOrigin::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// Was the test changed (by the model or the bijection), so that it needs re-checking?
    pub fn rewritten(self) -> bool {
        matches!(self, TestOrigin::Model | TestOrigin::Bijection)
    }
}

/// A rewritten problem as a `Problem` row, so `execute` can judge against its tests.
pub fn as_problem(r: &RewrittenProblem) -> Problem {
    let question_id = r.id.as_str().strip_prefix("lcb_").unwrap_or(r.id.as_str()).to_owned();
    Problem {
        id: r.id.clone(),
        question_title: r.title.clone(),
        question_content: r.statement.clone(),
        platform: r.platform,
        question_id,
        contest_id: String::new(),
        contest_date: r.contest_date.clone(),
        starter_code: r.starter_code.clone(),
        difficulty: r.difficulty.clone(),
        public_tests: r.public_tests.clone(),
        private_tests: r.private_tests.clone(),
        func_name: r.func_name.clone(),
        metadata: r
            .func_name
            .as_ref()
            .map_or_else(|| "{}".to_owned(), |f| serde_json::json!({ "func_name": f }).to_string()),
        answer: Default::default(),
    }
}
