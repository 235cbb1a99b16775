//! Rewritten tests re-checked against a reference solution (issue #12): `rewrite` against the
//! loopback chat endpoint ([`crate::support::http`]) asks the model that rewrote a problem for
//! a reference solution of the original and its adaptation, and `execute` runs them in the
//! real sandbox before judging: a bijected test whose answer depends on alphabetical order and
//! a model-rewritten test with an inconsistent rename are rejected and reported, consistent
//! ones pass, an adaptation that breaks a verbatim test leaves the problem `unchecked`, and a
//! correct solution is judged on the tests that are left.

use std::sync::{Arc, Mutex};

use coreb_data::problem::Problem;
use coreb_data::rewritten::TestOrigin;
use coreb_data::solution::{Language, Solution, SolutionId};
use coreb_data::verdict::{CheckOutcome, Verdict};
use coreb_http::RetryConfig;
use coreb_judge::driver::Harness;
use coreb_judge::recheck::{RecheckProblem, RecheckStats};
use coreb_judge::{ExecuteConfig, execute_checked};
use coreb_llm::prompt::Prompts;
use coreb_llm::{Gateway, LlmConfig, ResponseStore, StoreMode};
use coreb_stages::rewrite::{
    RewriteConfig, RewritePlans, RewritePrompts, apply_bijection_keeping, letter_bijection, rewrite,
};
use serde_json::{Value, json};

use crate::support::{root, stdin_problem};

/// Two letters the bijection of `id` puts in the opposite order (`x < y`, image of x > image
/// of y): a word of x's sorts first before the rewrite and last after it.
fn flipped_pair(id: &str) -> (char, char) {
    let perm = letter_bijection(id);
    for x in 0..26u8 {
        for y in x + 1..26 {
            if perm[x as usize] > perm[y as usize] {
                return ((b'a' + x) as char, (b'a' + y) as char);
            }
        }
    }
    unreachable!("a permutation of 26 letters that is not the identity has an inversion")
}

const SMALLEST: &str = "import sys\ndata = sys.stdin.read().split()\nprint(min(data[1:]))\n";

/// What the loopback model answers, by the problem's marker word in the prompt.
fn answer(body: &Value) -> String {
    let text = |role: &str| {
        body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == role)
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (system, user) = (text("system"), text("user"));
    let problem = ["SMALLEST", "UPCCODE", "PALINDROME", "SUMTWO"]
        .into_iter()
        .find(|m| user.contains(m))
        .unwrap_or("?");
    let code = |c: &str| format!("Here is the program.\n<code>\n{c}</code>");
    if system.contains("You adapt a program") {
        return code(match problem {
            "SMALLEST" => SMALLEST,
            "UPCCODE" => "s = input().strip()\nprint(s[0] + \"CYC\")\n",
            // A broken adaptation: refuses the digit palindromes a verbatim test holds.
            "PALINDROME" => {
                "s = input().strip()\nprint(\"Yes\" if s.isalpha() and s == s[::-1] else \"No\")\n"
            }
            other => panic!("no adaptation is asked for {other}"),
        });
    }
    if user.contains("this program is the reference") {
        return code(match problem {
            "SMALLEST" => SMALLEST,
            "UPCCODE" => "s = input().strip()\nprint(s[0] + \"UPC\")\n",
            "PALINDROME" => "s = input().strip()\nprint(\"Yes\" if s == s[::-1] else \"No\")\n",
            other => panic!("no reference is asked for {other}: none of its tests changed"),
        });
    }
    if system.contains("adapt test cases") {
        let tests = match problem {
            // The second test renames the town in the input only: inconsistent.
            "UPCCODE" => {
                json!([{"input": "Lisbon\n", "output": "LCYC\n"}, {"input": "Ghent\n", "output": "TCYC\n"}])
            }
            "PALINDROME" => json!([{"input": "deed\n", "output": "Yes\n"}]),
            other => panic!("no test of {other} goes to the model"),
        };
        return json!({ "tests": tests }).to_string();
    }
    let statement = format!("In the harbour story, the task of {problem} is told anew.");
    json!({"title": format!("Harbour {problem}"), "statement": statement, "starter_code": ""})
        .to_string()
}

#[test]
fn rewritten_tests_are_rechecked_against_a_reference_in_the_sandbox() {
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = asked.clone();
    let server = crate::support::http::serve(move |request| {
        let body = request.json();
        log.lock().unwrap().push(body.clone());
        crate::support::http::Reply::json(
            &json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": answer(&body)}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
        )
    });

    // Smallest word: long tests go through the bijection. One flips the order of its two words
    // (its bijected answer is wrong), one has a single word (consistent), one is verbatim.
    let (x, y) = flipped_pair("lcb_900");
    let (wx, wy) = (x.to_string().repeat(30), y.to_string().repeat(30));
    let word = "harbour".repeat(5);
    let flipped_input = format!("2\n{wx} {wy}\n");
    let single_input = format!("1\n{word}\n");
    let smallest = stdin_problem(
        "900",
        "Smallest word",
        "SMALLEST: given N words, print the lexicographically smallest one.",
        &[
            (&flipped_input, &format!("{wx}\n")),
            (&single_input, &format!("{word}\n")),
            ("1\nYes\n", "Yes\n"),
        ],
    );
    let upc = stdin_problem(
        "901",
        "Code",
        "UPCCODE: print the first letter of S followed by UPC.",
        &[("Kyoto\n", "KUPC\n"), ("Tohoku\n", "TUPC\n")],
    );
    let palindrome = stdin_problem(
        "902",
        "Palindrome",
        "PALINDROME: print Yes if S reads the same backwards, else No.",
        &[("abba\n", "Yes\n"), ("12321\n", "Yes\n")],
    );
    let sum = stdin_problem("903", "Sum", "SUMTWO: print A + B.", &[("1 2\n", "3\n")]);
    let originals = vec![smallest.clone(), upc.clone(), palindrome.clone(), sum.clone()];

    let dir = tempfile::tempdir().unwrap();
    let config = LlmConfig {
        base_url: format!("{}/v1", server.url()),
        api_key_env: String::new(),
        mode: StoreMode::Live,
        model: "model-r".into(),
        timeout_secs: 10.0,
        retry: RetryConfig {
            max_attempts: 2,
            min_delay_ms: 10,
            max_delay_ms: 50,
            max_retry_after_secs: 1,
            resample_attempts: 1,
        },
        ..LlmConfig::default()
    };
    let prompts = Prompts::load(&root().join("prompts")).unwrap();
    let gateway =
        Gateway::new(&config, ResponseStore::open(dir.path().join("store")), None).unwrap();
    let rconfig = RewriteConfig { max_test_chars: 40, ..RewriteConfig::default() };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let out = runtime
        .block_on(rewrite(
            &rconfig,
            &RewritePlans::for_config(&config),
            &RewritePrompts::of(&prompts),
            originals.clone(),
            &gateway,
        ))
        .unwrap();
    assert!(
        out.rejected.is_empty() && out.reference_failures.is_empty(),
        "{:#?}",
        (out.rejected, out.reference_failures)
    );
    let origins: Vec<Vec<TestOrigin>> =
        out.problems.iter().map(|p| p.test_origins.clone()).collect();
    use TestOrigin::{Bijection, Kept, Model};
    assert_eq!(
        origins,
        [vec![Bijection, Bijection, Kept], vec![Model, Model], vec![Model, Kept], vec![Kept]]
    );
    // The bijected flip is wrong for the rewrite: its output is the image of the word that now
    // sorts last.
    let perm = letter_bijection("lcb_900");
    let image = |w: &str| apply_bijection_keeping(w, &perm, &[]);
    assert_eq!(out.problems[0].public_tests[0].output, format!("{}\n", image(&wx)));
    assert!(image(&wx) > image(&wy));
    // References were asked of the rewrite's model, for the three problems with a changed test only.
    let references: Vec<&str> = out
        .problems
        .iter()
        .map(|p| p.reference.as_ref().map_or("-", |r| r.model.as_str()))
        .collect();
    assert_eq!(references, ["model-r", "model-r", "model-r", "-"]);
    assert_eq!((out.stats.references, out.stats.references_missing), (3, 0));
    let sum_prompts =
        asked.lock().unwrap().iter().filter(|b| b.to_string().contains("SUMTWO")).count();
    assert_eq!(
        sum_prompts, 1,
        "only the rewrite itself is asked for a problem whose tests are all kept"
    );

    // Execute: the references first, then a correct solution of each problem.
    let problems: Vec<Problem> =
        out.problems.iter().map(coreb_data::rewritten::as_problem).collect();
    let recheck: Vec<RecheckProblem> = out
        .problems
        .iter()
        .zip(&originals)
        .map(|(r, o)| RecheckProblem {
            problem_id: r.id.clone(),
            test_origins: r.test_origins.clone(),
            reference: r.reference.clone(),
            original_tests: o.public_tests.clone(),
            original_harness: Harness::of(o),
        })
        .collect();
    let correct = [
        SMALLEST,
        "s = input().strip()\nprint(s[0] + \"CYC\")\n",
        "s = input().strip()\nprint(\"Yes\" if s == s[::-1] else \"No\")\n",
        "a, b = map(int, input().split())\nprint(a + b)\n",
    ];
    let solutions: Vec<Solution> =
        problems.iter().zip(correct).map(|(p, code)| python_solution(p, "model-s", code)).collect();
    let sandbox =
        coreb_sandbox::Sandbox::new(coreb_sandbox::SandboxConfig::default()).expect("sandbox");
    let config = ExecuteConfig::default();
    let judged =
        execute_checked(&config, &problems, &recheck, &solutions, &sandbox, 2, &|| {}).unwrap();

    let rows = |i: usize| {
        judged.checks[i]
            .tests
            .iter()
            .map(|t| (t.test_index, t.origin, t.outcome))
            .collect::<Vec<_>>()
    };
    use CheckOutcome::{Passed, Rejected, Unchecked};
    assert_eq!(judged.checks.len(), 3, "the problem without a changed test is not re-checked");
    assert_eq!(rows(0), [(0, Bijection, Rejected), (1, Bijection, Passed), (2, Kept, Passed)]);
    assert!(
        judged.checks[0].tests[0].reason.contains("wrong_answer"),
        "{:?}",
        judged.checks[0].tests[0]
    );
    assert_eq!(rows(1), [(0, Model, Passed), (1, Model, Rejected)]);
    assert_eq!(rows(2), [(0, Model, Unchecked), (1, Kept, Unchecked)]);
    assert!(
        judged.checks[2].tests[0].reason.contains("adaptation is broken")
            && judged.checks[2].tests[0].reason.contains("verbatim test 1"),
        "{:?}",
        judged.checks[2]
    );
    let stats = RecheckStats::of(&judged.checks);
    assert_eq!(
        (
            stats.problems,
            stats.tests_passed,
            stats.tests_rejected,
            stats.tests_unchecked,
            stats.problems_unchecked,
            stats.problems_rejected
        ),
        (3, 3, 2, 2, 1, 0)
    );

    // Every correct solution passes: not judged on a rejected test, whose index is left out.
    let verdicts =
        |i: usize| judged.results[i].tests.iter().map(|t| (t.index, t.verdict)).collect::<Vec<_>>();
    assert!(judged.results.iter().all(|r| r.passed), "{:#?}", judged.results);
    assert_eq!(verdicts(0), [(1, Verdict::Passed), (2, Verdict::Passed)]);
    assert_eq!(verdicts(1), [(0, Verdict::Passed)]);
    assert_eq!(verdicts(2), [(0, Verdict::Passed), (1, Verdict::Passed)]);
    // Without the re-check (today's judge) the same correct solutions fail the broken tests.
    let unchecked = coreb_judge::execute(&config, &problems, &solutions, &sandbox, 2).unwrap();
    assert_eq!(
        unchecked.results.iter().map(|r| r.passed).collect::<Vec<_>>(),
        [false, false, true, true]
    );
    drop(server);
}

/// A problem whose every test the re-check rejects is rejected whole: its solutions are not
/// judged.
/// A Python solution of `problem` by `model` (sample 0).
fn python_solution(problem: &Problem, model: &str, code: &str) -> Solution {
    Solution {
        id: SolutionId::new(&problem.id, model, Language::Python, 0),
        problem_id: problem.id.clone(),
        model: model.into(),
        language: Language::Python,
        sample: 0,
        code: code.into(),
    }
}

/// The re-check of a rewrite of `original` whose tests came by `origins`, with a reference
/// program (model `m`) that is both the original's solution and its adaptation.
fn recheck_of(original: &Problem, origins: Vec<TestOrigin>, reference: &str) -> RecheckProblem {
    RecheckProblem {
        problem_id: original.id.clone(),
        test_origins: origins,
        reference: Some(coreb_data::rewritten::Reference {
            model: "m".into(),
            original: reference.into(),
            adapted: reference.into(),
        }),
        original_tests: original.public_tests.clone(),
        original_harness: Harness::of(original),
    }
}

/// `execute_checked` of one solution of one rewritten problem, one job.
fn judge_one(
    rewritten: Problem,
    recheck: &RecheckProblem,
    solution: &Solution,
    sandbox: &coreb_sandbox::Sandbox,
) -> coreb_judge::ExecuteOutput {
    execute_checked(
        &ExecuteConfig::default(),
        &[rewritten],
        std::slice::from_ref(recheck),
        std::slice::from_ref(solution),
        sandbox,
        1,
        &|| {},
    )
    .unwrap()
}

#[test]
fn a_problem_left_without_tests_is_rejected_whole() {
    let (x, y) = flipped_pair("lcb_910");
    let (wx, wy) = (x.to_string().repeat(30), y.to_string().repeat(30));
    let original = stdin_problem(
        "910",
        "Smallest word",
        "SMALLEST",
        &[(&format!("2\n{wx} {wy}\n"), &format!("{wx}\n"))],
    );
    let perm = letter_bijection("lcb_910");
    let mut rewritten = original.clone();
    rewritten.public_tests =
        vec![coreb_stages::rewrite::biject_test(&original.public_tests[0], &perm)];
    let recheck = recheck_of(&original, vec![TestOrigin::Bijection], SMALLEST);
    let solution = python_solution(&original, "s", SMALLEST);
    let sandbox =
        coreb_sandbox::Sandbox::new(coreb_sandbox::SandboxConfig::default()).expect("sandbox");
    let judged = judge_one(rewritten, &recheck, &solution, &sandbox);
    assert!(judged.checks[0].rejected_whole);
    assert!(judged.results.is_empty());
    assert_eq!(judged.without_problem, [solution.id]);
    assert_eq!(RecheckStats::of(&judged.checks).rejected_problems, [original.id]);
}

/// Issue #58: the re-check compares the reference's outputs as the problem's solutions are
/// compared. A problem whose answer may be in any order: the reference prints the numbers as
/// read, which the original test holds in that order and the model's rewritten test sorted;
/// compared as a multiset the rewritten test passes and is judged, compared exactly it would
/// be rejected (and with it the problem, whole).
#[test]
fn the_recheck_compares_by_the_problems_kind_of_answer() {
    const AS_READ: &str = "input()\nprint(input())\n";
    let original = stdin_problem(
        "911",
        "Any order",
        "Print the numbers in any order.",
        &[("3\n1 2 3\n", "1 2 3\n")],
    );
    let mut rewritten = original.clone();
    rewritten.public_tests[0].input = "2\n5 4\n".into();
    rewritten.public_tests[0].output = "4 5\n".into();
    let recheck = recheck_of(&original, vec![TestOrigin::Model], AS_READ);
    let solution = python_solution(
        &original,
        "s",
        "input()\nprint(*sorted(map(int, input().split()), reverse=True))\n",
    );
    let sandbox =
        coreb_sandbox::Sandbox::new(coreb_sandbox::SandboxConfig::default()).expect("sandbox");
    let judge = |answer: coreb_data::problem::AnswerKind| {
        judge_one(Problem { answer, ..rewritten.clone() }, &recheck, &solution, &sandbox)
    };
    let unordered = judge(coreb_data::problem::AnswerKind::Unordered);
    assert_eq!(unordered.checks[0].tests[0].outcome, CheckOutcome::Passed);
    assert!(!unordered.checks[0].rejected_whole);
    assert!(unordered.results[0].passed, "{:?}", unordered.results[0]);
    let exact = judge(coreb_data::problem::AnswerKind::Exact);
    assert_eq!(exact.checks[0].tests[0].outcome, CheckOutcome::Rejected);
    assert!(exact.checks[0].rejected_whole);
}
