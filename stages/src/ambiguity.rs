//! Answers that can differ though the statement did not say so, seen in the verdicts: after
//! `execute`, [`ambiguous`] looks at one problem's judged solutions for the mark of a problem
//! that accepts several answers while its tests hold one (an answer set the statement did not
//! reveal, which `answer`'s detector could not see); `qrels` leaves such a problem out, with
//! the reason ([`Ambiguity::reason`]), and the release's card lists it ([`card_section`]).
//!
//! The rule: a problem is flagged when, on one private test, at least two of its solutions
//! - pass every public test (at least one public test was judged),
//! - are judged `wrong_answer` on that test, with an output laid out as another answer could
//!   be (the expected output holds several items and theirs as many, alike:
//!   [`coreb_data::verdict::WrongOutput::alternative`]), and
//! - print answers that differ from each other (their digests differ: the judge's canonical
//!   form, so whitespace, number spelling or JSON layout make no difference),
//!
//! and two of them that differ come from different models or languages. With
//! `[stages.execute] mode = "labels"` every solution runs the tests in one fixed order and
//! stops at its first failing test, so solutions that fail at all are compared on the first
//! test they fail; with every test run, on any private test they fail.
//!
//! What it keeps from firing on plainly wrong solutions:
//! - a solution that fails a public test is not a witness (it is wrong on the examples);
//! - solutions that agree on one wrong output are not (one output: an erroneous test or a
//!   shared mistake, not a second answer);
//! - one deviant solution is not (two witnesses from different models or languages are);
//! - a one-item answer (a count, a sum, `Yes`) is never laid out as an alternative: differing
//!   wrong values of it are the usual mark of a wrong algorithm;
//! - an output laid out otherwise (`-1` where a sequence was expected, a line short) is not.
//!
//! What it does NOT do: decide that the answers are valid (LiveCodeBench ships no checker), or
//! look at anything but digests (`execute` never keeps outputs).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use coreb_data::problem::ProblemId;
use coreb_data::solution::Language;
use coreb_data::verdict::{SolutionResult, Verdict};

/// What flagged a problem: the test, and its witnesses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ambiguity {
    /// The problem.
    pub problem_id: ProblemId,
    /// The private test (its index: public tests first, then private).
    pub test: u32,
    /// Solutions that pass every public test and print another answer laid out like the
    /// expected one on it.
    pub solutions: usize,
    /// How many different answers they print.
    pub outputs: usize,
    /// Their models.
    pub models: Vec<String>,
    /// Their languages.
    pub languages: Vec<Language>,
}

impl Ambiguity {
    /// The reason `qrels` records: `ambiguous_answer`, then what was seen.
    pub fn reason(&self) -> String {
        format!(
            "ambiguous_answer: on test {}, {} solutions ({} model(s), {} language(s)) that pass every public test print {} different answers laid out like the expected one",
            self.test,
            self.solutions,
            self.models.len(),
            self.languages.len(),
            self.outputs
        )
    }
}

/// Who printed an answer: a solution's model and language.
type Voice<'a> = (&'a str, Language);

/// Does the problem whose first `public_tests` tests are public, judged as `results` (its
/// solutions' results), look like an answer-set problem? The first private test (lowest
/// index) on which the rule holds, with its witnesses.
pub fn ambiguous(
    problem_id: &ProblemId,
    public_tests: usize,
    results: &[&SolutionResult],
) -> Option<Ambiguity> {
    let public = u32::try_from(public_tests).ok()?;
    // Test -> digest -> the (model, language) of each witness printing it.
    let mut seen: BTreeMap<u32, BTreeMap<&str, Vec<Voice<'_>>>> = BTreeMap::new();
    for r in results {
        let judged_public: Vec<_> = r.tests.iter().filter(|t| t.index < public).collect();
        if judged_public.is_empty() || judged_public.iter().any(|t| t.verdict != Verdict::Passed) {
            continue;
        }
        for t in r.tests.iter().filter(|t| t.index >= public) {
            if t.verdict != Verdict::WrongAnswer {
                continue;
            }
            if let Some(w) = t.wrong_output.as_ref().filter(|w| w.alternative) {
                seen.entry(t.index)
                    .or_default()
                    .entry(w.sha256.as_str())
                    .or_default()
                    .push((r.model.as_str(), r.language));
            }
        }
    }
    seen.into_iter().find_map(|(test, outputs)| {
        let witnesses: Vec<(&str, Voice<'_>)> = outputs
            .iter()
            .flat_map(|(digest, who)| who.iter().map(move |w| (*digest, *w)))
            .collect();
        // Two witnesses that print different answers, from different models or languages.
        let differ = witnesses
            .iter()
            .enumerate()
            .any(|(i, (d, w))| witnesses[i + 1..].iter().any(|(d2, w2)| d != d2 && w != w2));
        differ.then(|| Ambiguity {
            problem_id: problem_id.clone(),
            test,
            solutions: witnesses.len(),
            outputs: outputs.len(),
            models: witnesses
                .iter()
                .map(|(_, (m, _))| (*m).to_owned())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            languages: witnesses
                .iter()
                .map(|(_, (_, l))| *l)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        })
    })
}

/// The card's section listing the problems left out by the rule (empty when none is).
pub fn card_section(flagged: &[Ambiguity]) -> String {
    if flagged.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## Problems left out: answers that can differ\n\n\
         Solutions from different models or languages that pass every public test printed different \
         answers, laid out like the expected one, on the same private test: the problem likely accepts \
         several answers while its tests hold one, so its labels would call correct solutions wrong. \
         These problems have no query and no document here (MANIFEST `stages.qrels.ambiguous_answers`).\n\n\
         | problem | test | solutions | answers | models | languages |\n|---|---:|---:|---:|---|---|\n",
    );
    for a in flagged {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            a.problem_id,
            a.test,
            a.solutions,
            a.outputs,
            a.models.join(", "),
            a.languages.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::solution::SolutionId;
    use coreb_data::verdict::{MemoryBound, TestResult, WrongOutput};

    /// Two public tests (0, 1), three private ones (2, 3, 4).
    const PUBLIC: usize = 2;

    /// A solution of `model` in `language` with these verdicts; a wrong answer `(test,
    /// output, alternative)` prints `output` there.
    fn solution(
        model: &str,
        language: Language,
        failing_public: bool,
        wrong: Option<(u32, &str, bool)>,
    ) -> SolutionResult {
        let p = ProblemId::from_question_id("1");
        let tests: Vec<TestResult> = (0..5)
            .map(|index| {
                let (verdict, wrong_output) = match wrong {
                    _ if index == 1 && failing_public => (Verdict::WrongAnswer, None),
                    Some((at, out, alternative)) if at == index => (
                        Verdict::WrongAnswer,
                        Some(WrongOutput {
                            sha256: coreb_base::hashing::sha256_hex(out.as_bytes()),
                            alternative,
                        }),
                    ),
                    _ => (Verdict::Passed, None),
                };
                TestResult {
                    index,
                    verdict,
                    wall_ms: 1,
                    cpu_ms: 1,
                    peak_memory_kb: 1,
                    wrong_output,
                }
            })
            .collect();
        let passed = tests.iter().all(|t| t.verdict == Verdict::Passed);
        SolutionResult {
            solution_id: SolutionId::new(&p, model, language, 0),
            problem_id: p,
            model: model.into(),
            language,
            passed,
            pass_rate: 0.0,
            tests,
            message: String::new(),
            memory_bound: MemoryBound::Rlimit,
            comparison: Default::default(),
            stopped: None,
        }
    }

    fn flag(results: &[SolutionResult]) -> Option<Ambiguity> {
        let refs: Vec<&SolutionResult> = results.iter().collect();
        ambiguous(&ProblemId::from_question_id("1"), PUBLIC, &refs)
    }

    use Language::{Cpp, Java, Python};

    #[test]
    fn a_planted_answer_set_problem_is_flagged() {
        let results = [
            solution("m1", Python, false, None),
            solution("m1", Cpp, false, Some((3, "2 1 3", true))),
            solution("m2", Java, false, Some((3, "3 1 2", true))),
            solution("m2", Python, false, Some((3, "3 1 2", true))),
        ];
        let a = flag(&results).expect("flagged");
        assert_eq!(a.test, 3);
        assert_eq!((a.solutions, a.outputs), (3, 2));
        assert_eq!(a.models, ["m1", "m2"]);
        assert_eq!(a.languages, [Python, Cpp, Java]);
        assert!(a.reason().starts_with("ambiguous_answer: on test 3, 3 solutions"));
        let card = card_section(&[a]);
        assert!(card.contains("| lcb_1 | 3 | 3 | 2 | m1, m2 | python, cpp, java |"), "{card}");
        // One model in two languages is enough, as is two models in one language.
        assert!(
            flag(&[
                solution("m1", Cpp, false, Some((4, "a", true))),
                solution("m1", Java, false, Some((4, "b", true))),
            ])
            .is_some()
        );
        assert!(
            flag(&[
                solution("m1", Cpp, false, Some((4, "a", true))),
                solution("m2", Cpp, false, Some((4, "b", true))),
            ])
            .is_some()
        );
    }

    #[test]
    fn plainly_wrong_solutions_are_not_flagged() {
        // Failing a public test: not a witness.
        assert_eq!(
            flag(&[
                solution("m1", Cpp, true, Some((3, "2 1 3", true))),
                solution("m2", Java, true, Some((3, "3 1 2", true))),
            ]),
            None
        );
        // Agreeing on one wrong output.
        assert_eq!(
            flag(&[
                solution("m1", Cpp, false, Some((3, "1 1 1", true))),
                solution("m2", Java, false, Some((3, "1 1 1", true))),
                solution("m2", Python, false, Some((3, "1 1 1", true))),
            ]),
            None
        );
        // A single deviant solution.
        assert_eq!(
            flag(&[
                solution("m1", Cpp, false, Some((3, "2 1 3", true))),
                solution("m2", Java, false, None),
                solution("m2", Python, false, None),
            ]),
            None
        );
        // Two different answers from one model and language (two samples of one program).
        assert_eq!(
            flag(&[
                solution("m1", Cpp, false, Some((3, "2 1 3", true))),
                solution("m1", Cpp, false, Some((3, "3 1 2", true))),
            ]),
            None
        );
        // Different wrong values of a one-item answer, or outputs laid out otherwise.
        assert_eq!(
            flag(&[
                solution("m1", Cpp, false, Some((3, "41", false))),
                solution("m2", Java, false, Some((3, "43", false))),
            ]),
            None
        );
        // Different answers on different tests.
        assert_eq!(
            flag(&[
                solution("m1", Cpp, false, Some((3, "2 1 3", true))),
                solution("m2", Java, false, Some((4, "3 1 2", true))),
            ]),
            None
        );
        // No public test: nothing says the solutions are right on the examples.
        let results = [
            solution("m1", Cpp, false, Some((3, "2 1 3", true))),
            solution("m2", Java, false, Some((3, "3 1 2", true))),
        ];
        let refs: Vec<&SolutionResult> = results.iter().collect();
        assert_eq!(ambiguous(&ProblemId::from_question_id("1"), 0, &refs), None);
        assert_eq!(card_section(&[]), "");
    }
}
