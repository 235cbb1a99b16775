//! The kind of answer a problem asks for ([`AnswerKind`]), decided once from its original
//! statement by [`decide`]: `filter` drops a problem that accepts any of several answers
//! (reason `any_answer`) and records the others' kind, which `rewrite` carries over and the
//! judge compares by.
//!
//! The rule works sentence by sentence, on lower-cased text with runs of whitespace made one:
//! - **any of several**: a sentence that names several answers (`multiple`, `several`, `more
//!   than one`) and lets any one of them be given (`any of them`, `any one of them`, `any of
//!   these`) where a program prints, outputs or returns it or the judge accepts it ("If there
//!   are multiple solutions, you may print any of them", "any of them will be accepted"); or
//!   a sentence that asks for any one answer outright (`Print any integer between 0 and 9 …`,
//!   `Print one way to arrange the parts …`), unless it says the answer is unique;
//! - **unordered**: a sentence that says the answer may come `in any order` where a program
//!   returns or prints it ("Note that the returned array may be in any order", "Return all
//!   valid strings with length n, in any order"), and not an operation done in any order
//!   ("You can perform the following operations any number of times in any order");
//! - **any case**: a sentence that says the judge is `case-insensitive` ("The judge is
//!   case-insensitive; for example, if the correct answer is Yes, outputs such as yes, YES, or
//!   yEs will also be accepted"): compared with letters lower-cased (an unordered answer stays
//!   unordered, which no statement of release_v6 is as well);
//! - else **exact**: a statement that says "multiple" but then names one answer ("return the
//!   lexicographically smallest one", "print -1") stays exact, as no `any of them` follows.
//!
//! What it does NOT do: read the rewritten statement (the kind is the original problem's), or
//! decide a checker program's existence (LiveCodeBench ships none).

use coreb_data::problem::AnswerKind;
use serde::{Deserialize, Serialize};

/// What [`decide`] found: the kind, and the sentence that decided it (none for exact).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerDecision {
    /// The kind of answer.
    pub answer: AnswerKind,
    /// The sentence of the statement that decided it, whitespace made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phrase: Option<String>,
}

const SEVERAL: [&str; 4] = ["multiple", "several", "more than one", "many possible"];
const ANY_ONE: [&str; 5] =
    ["any of them", "any one of them", "any of these", "any one of these", "any of those"];
const GIVEN: [&str; 7] = ["print", "output", "return", "accepted", "correct", "answer", "solution"];
const ONE_OF: [&str; 7] = [
    "print any ",
    "output any ",
    "return any ",
    "print one way",
    "print one such",
    "output one way",
    "output one such",
];
const UNIQUE: [&str; 2] = ["exactly one", "unique"];
const RETURNED: [&str; 4] = ["return", "print", "output", "answer"];
const DONE_IN_ANY_ORDER: [&str; 5] = ["operation", "perform", "action", "number of times", "move"];
const ANY_CASE: [&str; 2] = ["case-insensitive", "case insensitive"];
const JUDGED: [&str; 6] = ["judge", "accepted", "print", "output", "answer", "checker"];

/// The sentences of a statement: split after `.`, `?`, `!` followed by a space, and at line
/// breaks; whitespace made one, lower-cased alongside the original.
fn sentences(statement: &str) -> impl Iterator<Item = String> + '_ {
    statement
        .lines()
        .flat_map(|line| {
            let mut parts = Vec::new();
            let mut start = 0;
            let bytes = line.as_bytes();
            for (i, &b) in bytes.iter().enumerate() {
                if matches!(b, b'.' | b'?' | b'!') && bytes.get(i + 1).is_some_and(|c| *c == b' ') {
                    parts.push(&line[start..=i]);
                    start = i + 1;
                }
            }
            parts.push(&line[start..]);
            parts
        })
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
}

/// Decide a problem's kind of answer from its original statement.
pub fn decide(statement: &str) -> AnswerDecision {
    let mut unordered = None;
    let mut any_case = None;
    for sentence in sentences(statement) {
        let lower = sentence.to_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
        let one_of = ONE_OF.iter().any(|w| lower.starts_with(w)) && !has(&UNIQUE);
        if one_of || (has(&SEVERAL) && has(&ANY_ONE) && has(&GIVEN)) {
            return AnswerDecision { answer: AnswerKind::AnyOfSeveral, phrase: Some(sentence) };
        }
        if unordered.is_none()
            && lower.contains("in any order")
            && has(&RETURNED)
            && !has(&DONE_IN_ANY_ORDER)
        {
            unordered = Some(sentence);
        } else if any_case.is_none() && has(&ANY_CASE) && has(&JUDGED) {
            any_case = Some(sentence);
        }
    }
    match (unordered, any_case) {
        (Some(phrase), _) => AnswerDecision { answer: AnswerKind::Unordered, phrase: Some(phrase) },
        (None, Some(phrase)) => {
            AnswerDecision { answer: AnswerKind::AnyCase, phrase: Some(phrase) }
        }
        (None, None) => AnswerDecision { answer: AnswerKind::Exact, phrase: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> AnswerKind {
        decide(s).answer
    }

    #[test]
    fn any_of_several_answers() {
        for s in [
            "Print the answer.\nIf there are multiple solutions, you may print any of them.",
            "If multiple solutions exist, any of them will be accepted.",
            "If there are multiple positive integers A such that A^A = B, any of them will be accepted.",
            "If there are multiple solutions, printing any one of them is accepted as correct.",
            "If there are multiple   good sequences with the same minimum sum, printing any of them is accepted.",
            "Print any integer between 0 and 9, inclusive, that is not equal to A + B.",
            "Print one way to arrange the parts to satisfy the conditions.",
        ] {
            assert_eq!(kind(s), AnswerKind::AnyOfSeveral, "{s}");
        }
        let d = decide("Find X. If multiple solutions exist, you may print any of them. Bye.");
        assert_eq!(
            d.phrase.as_deref(),
            Some("If multiple solutions exist, you may print any of them.")
        );
    }

    #[test]
    fn answers_in_any_order() {
        for s in [
            "Note that the returned array may be in any order.",
            "Return an array that consists of indices of peaks in the given array in any order.",
            "Return all valid strings with length n, in any order.",
            "You may print the numbers in any order.",
        ] {
            assert_eq!(kind(s), AnswerKind::Unordered, "{s}");
        }
    }

    #[test]
    fn answers_in_any_letter_case() {
        let d = decide(
            "Print Yes or No.\nThe judge is case-insensitive.\nFor example, if the correct answer is Yes, any of yes, YES, and yEs will be accepted.",
        );
        assert_eq!(d.answer, AnswerKind::AnyCase);
        assert_eq!(d.phrase.as_deref(), Some("The judge is case-insensitive."));
        assert_eq!(
            kind(
                "The judge is case-insensitive; for example, if the correct answer is Fennec, outputs such as fennec, FENNEC, or fEnNeC will also be accepted."
            ),
            AnswerKind::AnyCase
        );
        // Not about the answer: a case-insensitive comparison of the input's strings.
        assert_eq!(
            kind("Two strings are equal if they match case-insensitive."),
            AnswerKind::Exact
        );
        // An unordered answer stays unordered.
        assert_eq!(
            kind("Return them in any order. The judge is case-insensitive."),
            AnswerKind::Unordered
        );
    }

    #[test]
    fn one_answer_stays_exact() {
        for s in [
            "If there are multiple possible good captions, return the lexicographically smallest one.",
            "If there are multiple possible strongest programmers, print -1.",
            "You can perform the following two operations any number of times in any order.",
            "Takahashi can arrange these dishes in any order he likes.",
            "Do not pick up any of them.",
            "Rearrange the elements of sequence A in any order.",
            "Print one line containing the probability.",
            "Print one such N; it is unique.",
        ] {
            assert_eq!(kind(s), AnswerKind::Exact, "{s}");
        }
        assert_eq!(decide("Print the answer.").phrase, None);
    }
}
