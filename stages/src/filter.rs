//! `filter`: keep problems whose statement is in the wanted language (whatlang), long
//! enough, that have at least the minimum number of tests, and (functional problems) whose
//! starter gives a signature the judge's drivers can call ([`coreb_judge::signature`]:
//! `TreeNode`, `ListNode`, `Optional[…]` … are rejected, naming the type), and that no list
//! of errata names ([`crate::errata`]: LiveCodeBench's own, built in, and the manifest's
//! `[[stages.filter.errata]]`; reason `errata:<kind>`), and whose statement does not accept
//! any of several answers ([`crate::answer`]: reason `any_answer`; the kind of answer of a
//! kept problem is [`decide_problem`]'s to return). Pure; every rejection carries a typed
//! reason.

use serde::{Deserialize, Serialize};

use coreb_data::problem::Problem;
use coreb_judge::signature::{self, SignatureError};

use crate::answer::{self, AnswerDecision};
use crate::errata::{self, ErrataKind, Erratum};
use coreb_data::problem::AnswerKind;

/// `[stages.filter]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilterConfig {
    /// Wanted statement language, ISO 639-3 (`eng`).
    pub language: String,
    /// Lowest whatlang confidence accepted for it. whatlang gives 1.0 for nearly every
    /// English statement, but only 0.44 for a few short ones full of numbers and examples
    /// (LeetCode 3199), hence a default well below 0.5.
    pub min_confidence: f64,
    /// Shortest statement, in characters.
    pub min_statement_chars: usize,
    /// Fewest tests (public + private).
    pub min_tests: usize,
    /// Drop the problems of LiveCodeBench's own errata (built in: [`errata::livecodebench`]).
    pub livecodebench_errata: bool,
    /// A team's own errata, `[[stages.filter.errata]]` (`problem`, `kind`, optional `note`,
    /// `source`, `date`): dropped like LiveCodeBench's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errata: Vec<Erratum>,
}

impl Default for FilterConfig {
    fn default() -> Self {
        FilterConfig {
            language: "eng".into(),
            min_confidence: 0.25,
            min_statement_chars: 100,
            min_tests: 1,
            livecodebench_errata: true,
            errata: Vec::new(),
        }
    }
}

impl FilterConfig {
    /// Check the language code and bounds.
    pub fn validate(&self) -> Result<(), String> {
        if whatlang::Lang::from_code(&self.language).is_none() {
            return Err(format!("`language`: unknown ISO 639-3 code `{}`", self.language));
        }
        for (i, e) in self.errata.iter().enumerate() {
            e.validate().map_err(|why| format!("`errata[{i}]`: {why}"))?;
        }
        if !(0.0..=1.0).contains(&self.min_confidence) {
            return Err(format!(
                "`min_confidence` must be in [0, 1], got `{}`",
                self.min_confidence
            ));
        }
        Ok(())
    }
}

/// Why a problem was rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum RejectReason {
    /// The statement is not (confidently) in the wanted language.
    Language {
        /// What whatlang detected (ISO 639-3), if anything.
        detected: Option<String>,
        /// Its confidence.
        confidence: f64,
    },
    /// The statement is too short.
    TooShort {
        /// Its length in characters.
        chars: usize,
        /// The minimum.
        min: usize,
    },
    /// Not enough tests.
    TooFewTests {
        /// Tests present.
        tests: usize,
        /// The minimum.
        min: usize,
    },
    /// A functional problem whose starter has no signature the drivers support.
    UnsupportedSignature {
        /// Why (the unsupported type and where it is).
        signature: SignatureError,
    },
    /// The statement accepts any of several answers, which tests holding one cannot judge.
    AnyAnswer {
        /// The sentence that says so.
        phrase: String,
    },
    /// A list of errata names the problem (`errata:<kind>` in the counts).
    Errata {
        /// What is wrong with it.
        kind: ErrataKind,
        /// The list: `livecodebench` or `manifest`.
        list: String,
        /// What the list says of it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
}

/// Counts of one filter run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterStats {
    /// Problems in.
    pub rows_in: u64,
    /// Problems kept.
    pub rows_out: u64,
    /// Rejected for language.
    pub language: u64,
    /// Rejected for length.
    pub too_short: u64,
    /// Rejected for tests.
    pub too_few_tests: u64,
    /// Rejected for an unsupported (functional) signature.
    pub unsupported_signature: u64,
    /// Rejected by errata: the problem accepts several answers (`errata:several_answers`).
    #[serde(default)]
    pub errata_several_answers: u64,
    /// Rejected by errata: an interactive problem (`errata:interactive`).
    #[serde(default)]
    pub errata_interactive: u64,
    /// Rejected by errata: erroneous tests (`errata:erroneous_tests`).
    #[serde(default)]
    pub errata_erroneous_tests: u64,
    /// Rejected: the statement accepts any of several answers.
    #[serde(default)]
    pub any_answer: u64,
    /// Kept, with an answer the statement says may be in any order (judged as a multiset).
    #[serde(default)]
    pub unordered: u64,
    /// Kept, with an answer the statement says may be in any letter case (judged so).
    #[serde(default)]
    pub any_case: u64,
}

coreb_base::add_assign_fields!(FilterStats {
    rows_in,
    rows_out,
    language,
    too_short,
    too_few_tests,
    unsupported_signature,
    errata_several_answers,
    errata_interactive,
    errata_erroneous_tests,
    any_answer,
    unordered,
    any_case
});

impl FilterStats {
    /// Count one decision.
    pub fn record<T>(&mut self, decision: &Result<T, RejectReason>) {
        self.rows_in += 1;
        match decision {
            Ok(_) => self.rows_out += 1,
            Err(RejectReason::AnyAnswer { .. }) => self.any_answer += 1,
            Err(RejectReason::Language { .. }) => self.language += 1,
            Err(RejectReason::TooShort { .. }) => self.too_short += 1,
            Err(RejectReason::TooFewTests { .. }) => self.too_few_tests += 1,
            Err(RejectReason::UnsupportedSignature { .. }) => self.unsupported_signature += 1,
            Err(RejectReason::Errata { kind, .. }) => *self.errata_mut(*kind) += 1,
        }
    }

    /// The count of one kind of errata.
    pub fn errata(&self, kind: ErrataKind) -> u64 {
        match kind {
            ErrataKind::SeveralAnswers => self.errata_several_answers,
            ErrataKind::Interactive => self.errata_interactive,
            ErrataKind::ErroneousTests => self.errata_erroneous_tests,
        }
    }

    fn errata_mut(&mut self, kind: ErrataKind) -> &mut u64 {
        match kind {
            ErrataKind::SeveralAnswers => &mut self.errata_several_answers,
            ErrataKind::Interactive => &mut self.errata_interactive,
            ErrataKind::ErroneousTests => &mut self.errata_erroneous_tests,
        }
    }
}

/// Decide one problem. Checks run cheapest first; the first failing check is the reason.
pub fn filter_problem(config: &FilterConfig, problem: &Problem) -> Result<(), RejectReason> {
    decide_problem(config, problem).map(drop)
}

/// Decide one problem, and the kind of answer of a kept one (from its original statement:
/// decided here once, and judged by).
pub fn decide_problem(
    config: &FilterConfig,
    problem: &Problem,
) -> Result<AnswerDecision, RejectReason> {
    if let Some((list, e)) = errata::find(config.livecodebench_errata, &config.errata, problem) {
        return Err(RejectReason::Errata {
            kind: e.kind,
            list: list.to_owned(),
            note: e.note.clone(),
        });
    }
    let answer = answer::decide(&problem.question_content);
    if answer.answer == AnswerKind::AnyOfSeveral {
        return Err(RejectReason::AnyAnswer { phrase: answer.phrase.unwrap_or_default() });
    }
    let tests = problem.test_count();
    if tests < config.min_tests {
        return Err(RejectReason::TooFewTests { tests, min: config.min_tests });
    }
    if problem.is_functional() {
        signature::parse(&problem.starter_code)
            .map_err(|signature| RejectReason::UnsupportedSignature { signature })?;
    }
    let chars = problem.question_content.chars().count();
    if chars < config.min_statement_chars {
        return Err(RejectReason::TooShort { chars, min: config.min_statement_chars });
    }
    let info = whatlang::detect(&problem.question_content);
    let (detected, confidence) =
        info.map_or((None, 0.0), |i| (Some(i.lang().code().to_owned()), i.confidence()));
    if detected.as_deref() != Some(config.language.as_str()) || confidence < config.min_confidence {
        return Err(RejectReason::Language {
            detected,
            confidence: (confidence * 1e4).round() / 1e4,
        });
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::problem::{Platform, ProblemId, TestCase, TestType};

    fn problem(text: &str, tests: usize) -> Problem {
        Problem {
            id: ProblemId::from_question_id("x"),
            question_title: "t".into(),
            question_content: text.into(),
            platform: Platform::Atcoder,
            question_id: "x".into(),
            contest_id: "c".into(),
            contest_date: "2025-01-01T00:00:00".into(),
            starter_code: String::new(),
            difficulty: "easy".into(),
            public_tests: vec![
                TestCase {
                    input: "1".into(),
                    output: "1".into(),
                    testtype: TestType::Stdin
                };
                tests
            ],
            private_tests: vec![],
            func_name: None,
            metadata: "{}".into(),
            answer: AnswerKind::Exact,
        }
    }

    const EN: &str = "You are given a string S of length N consisting of lowercase English letters. Print the number of distinct substrings of S that are palindromes.";
    const DE: &str = "Gegeben ist eine Zeichenkette S der Länge N, die aus Kleinbuchstaben besteht. Geben Sie die Anzahl der verschiedenen Teilzeichenketten von S aus, die Palindrome sind.";

    #[test]
    fn reasons() {
        let cfg = FilterConfig::default();
        assert_eq!(filter_problem(&cfg, &problem(EN, 1)), Ok(()));
        assert_eq!(
            filter_problem(&cfg, &problem(EN, 0)),
            Err(RejectReason::TooFewTests { tests: 0, min: 1 })
        );
        assert!(matches!(
            filter_problem(&cfg, &problem("short", 1)),
            Err(RejectReason::TooShort { chars: 5, .. })
        ));
        let de = filter_problem(&cfg, &problem(DE, 1)).unwrap_err();
        assert!(
            matches!(&de, RejectReason::Language { detected: Some(l), .. } if l == "deu"),
            "{de:?}"
        );
        let german = FilterConfig { language: "deu".into(), ..cfg };
        assert_eq!(filter_problem(&german, &problem(DE, 1)), Ok(()));
        assert!(
            FilterConfig { language: "xx".into(), ..FilterConfig::default() }.validate().is_err()
        );
    }

    #[test]
    fn functional_problems_need_a_supported_signature() {
        let cfg = FilterConfig::default();
        let leetcode = |starter: &str| Problem {
            starter_code: starter.into(),
            func_name: Some("f".into()),
            public_tests: vec![TestCase {
                input: "[1]".into(),
                output: "1".into(),
                testtype: TestType::Functional,
            }],
            ..problem(EN, 1)
        };
        assert_eq!(
            filter_problem(
                &cfg,
                &leetcode(
                    "class Solution:\n    def f(self, nums: List[int], k: int) -> int:\n        "
                )
            ),
            Ok(())
        );
        let tree = filter_problem(
            &cfg,
            &leetcode(
                "class Solution:\n    def f(self, root: Optional[TreeNode]) -> int:\n        ",
            ),
        )
        .unwrap_err();
        let RejectReason::UnsupportedSignature { signature } = &tree else { panic!("{tree:?}") };
        assert!(signature.to_string().contains("`Optional[TreeNode]`"), "{signature}");
        // The rejection names the type in rejections.jsonl.
        let line = serde_json::to_string(&tree).unwrap();
        assert!(
            line.contains(r#""reason":"unsupported_signature""#)
                && line.contains(r#""ty":"Optional[TreeNode]""#),
            "{line}"
        );
        let mut stats = FilterStats::default();
        stats.record::<()>(&Err(tree));
        assert_eq!(stats.unsupported_signature, 1);
        // A stdin problem has no signature to check.
        assert_eq!(filter_problem(&cfg, &problem(EN, 1)), Ok(()));
    }

    #[test]
    fn errata_problems_are_dropped_with_their_kind() {
        let cfg = FilterConfig::default();
        let named = |id: &str, title: &str, platform| Problem {
            id: ProblemId::from_question_id(id),
            question_id: id.into(),
            question_title: title.into(),
            platform,
            ..problem(EN, 1)
        };
        // An AtCoder problem by its question_id, a LeetCode one by its title slug.
        let sort = filter_problem(&cfg, &named("abc350_c", "Sort", Platform::Atcoder));
        assert_eq!(
            sort,
            Err(RejectReason::Errata {
                kind: ErrataKind::ErroneousTests,
                list: "livecodebench".into(),
                note: Some("Erroneous test cases".into())
            })
        );
        let line = serde_json::to_string(&sort.unwrap_err()).unwrap();
        assert!(
            line.contains(r#""reason":"errata""#) && line.contains(r#""kind":"erroneous_tests""#),
            "{line}"
        );
        let peaks = named("3221", "find-the-peaks", Platform::Leetcode);
        assert!(matches!(
            filter_problem(&cfg, &peaks),
            Err(RejectReason::Errata { kind: ErrataKind::SeveralAnswers, .. })
        ));
        // A title is not an id on AtCoder, whose titles are words.
        assert_eq!(
            filter_problem(&cfg, &named("abc1_a", "find-the-peaks", Platform::Atcoder)),
            Ok(())
        );
        // Switched off, the built-in list drops nothing; a team's own list still does.
        let own = FilterConfig {
            livecodebench_errata: false,
            errata: vec![Erratum {
                problem: "lcb_abc1_a".into(),
                kind: ErrataKind::Interactive,
                note: None,
                source: Some("https://example.org/ours".into()),
                date: None,
            }],
            ..FilterConfig::default()
        };
        own.validate().unwrap();
        assert_eq!(filter_problem(&own, &peaks), Ok(()));
        let mut stats = FilterStats::default();
        let decision = filter_problem(&own, &named("abc1_a", "A", Platform::Atcoder));
        assert!(
            matches!(&decision, Err(RejectReason::Errata { list, .. }) if list == "manifest"),
            "{decision:?}"
        );
        stats.record(&decision);
        assert_eq!((stats.errata(ErrataKind::Interactive), stats.rows_out), (1, 0));
        let bad = FilterConfig {
            errata: vec![Erratum { date: Some("2026-13-01".into()), ..own.errata[0].clone() }],
            ..FilterConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("`errata[0]`"));
    }

    #[test]
    fn a_statement_accepting_any_answer_is_dropped_and_an_unordered_one_kept() {
        let cfg = FilterConfig::default();
        let any = format!("{EN}\nIf there are multiple solutions, you may print any of them.");
        let decision = filter_problem(&cfg, &problem(&any, 1));
        assert_eq!(
            decision,
            Err(RejectReason::AnyAnswer {
                phrase: "If there are multiple solutions, you may print any of them.".into()
            })
        );
        let line = serde_json::to_string(&decision.clone().unwrap_err()).unwrap();
        assert!(line.contains(r#""reason":"any_answer""#), "{line}");
        let mut stats = FilterStats::default();
        stats.record(&decision);
        assert_eq!((stats.any_answer, stats.rows_out), (1, 0));
        let unordered = format!("{EN} Note that the returned array may be in any order.");
        let kept = decide_problem(&cfg, &problem(&unordered, 1)).unwrap();
        assert_eq!(kept.answer, AnswerKind::Unordered);
        assert_eq!(
            kept.phrase.as_deref(),
            Some("Note that the returned array may be in any order.")
        );
        assert_eq!(decide_problem(&cfg, &problem(EN, 1)).unwrap().answer, AnswerKind::Exact);
        // An errata problem is named by its list first.
        let listed = Problem { question_id: "abc343_e".into(), ..problem(&any, 1) };
        assert!(matches!(filter_problem(&cfg, &listed), Err(RejectReason::Errata { .. })));
    }
}
