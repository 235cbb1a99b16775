//! `generate`: solutions per rewritten problem × model × language × sample.
//!
//! One request per solution, prompt `generate`. A stdin problem asks for a whole program
//! (fragments `task_program`, `language_<lang>`, `io_stdin`). A LeetCode (call-based)
//! problem asks for the solution only (`task_solution`, `solution_<lang>`, `io_functional`):
//! the class or function of the skeleton with its helpers and imports, no entry point and no
//! I/O, since the judge adds the I/O driver ([`coreb_judge::driver`]). The skeleton is
//! the Python starter for Python and, for the other languages, the one rendered from the
//! starter's signature ([`coreb_judge::signature`], 64-bit integers); a starter without a usable
//! signature (which `filter` rejects) is shown as it is. Sample `s` is sent with seed `seed + s` so that samples differ on
//! endpoints that honour seeds; the sample index is part of the request key either way.
//! The code is extracted with [`extract_code`] (first `<code>…</code>`, else an unclosed
//! `<code>`, else the first fenced block, else the whole text; `#` lines are kept), then its
//! comments and docstrings are removed ([`strip_comments`]); an answer without code is rejected. No I/O; nothing is compiled or run here (`execute` does).

use serde::{Deserialize, Serialize};

use coreb_data::rewritten::RewrittenProblem;
use coreb_data::solution::{Language, Solution, SolutionId};
use coreb_data::strip::strip_comments;
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{self, LlmStageError, ModelPlan, RejectReason, Rejection};
use coreb_llm::text::extract_code;
use coreb_llm::{LlmGateway, LlmStage};

/// `[stages.generate]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenerateConfig {
    /// Solutions in flight at once.
    pub concurrency: usize,
    /// Languages.
    pub languages: Vec<Language>,
    /// Samples per (problem, model, language).
    pub samples: u32,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig { concurrency: 16, languages: Language::ALL.to_vec(), samples: 1 }
    }
}

/// What `generate` returns: solutions in (problem, model, language, sample) order; a rejection's
/// item is a solution id and the counts count solutions.
pub type GenerateOutput = run::Answers<Solution>;

/// Generate every solution.
pub async fn generate(
    config: &GenerateConfig,
    plan: &ModelPlan,
    prompt: &Prompt,
    problems: &[RewrittenProblem],
    gateway: &dyn LlmGateway,
) -> Result<GenerateOutput, LlmStageError> {
    let stage = LlmStage::Generate;
    if config.languages.is_empty() || config.samples == 0 {
        return Err(LlmStageError::Config {
            stage,
            message: "`languages` and `samples` must not be empty".into(),
        });
    }
    let mut items = Vec::new();
    for p in problems {
        for model in &plan.models {
            for &language in &config.languages {
                for sample in 0..config.samples {
                    items.push((p, model.as_str(), language, sample));
                }
            }
        }
    }
    let n = items.len() as u64;
    let results =
        run::ordered(items, config.concurrency, |(p, model, language, sample)| async move {
            let id = SolutionId::new(&p.id, model, language, sample);
            let messages = render(prompt, p, language)
                .map_err(|source| LlmStageError::Prompt { stage, source })?;
            let mut request = plan.request(stage, id.as_str(), model, messages, sample, prompt);
            request.params.seed = request.params.seed.map(|s| s.wrapping_add(u64::from(sample)));
            // Several samples at a temperature above 0: a cut answer may give way to another one.
            request.on_incomplete.samples = config.samples;
            let outcome = match run::ask(gateway, &request).await? {
                Ok(completion) => {
                    // The code document is the solution only: comments and docstrings go before
                    // anything runs, so the judge runs exactly what is published.
                    let code = strip_comments(&extract_code(&completion.text), language);
                    if code.is_empty() {
                        gateway.verdict(&completion, Some(&RejectReason::NoCode)).await;
                        Err((
                            Rejection {
                                item: id.to_string(),
                                model: model.to_owned(),
                                key: Some(completion.key.clone()),
                                reason: RejectReason::NoCode,
                            },
                            Some(completion),
                        ))
                    } else {
                        gateway.verdict(&completion, None).await;
                        Ok((
                            Solution {
                                id,
                                problem_id: p.id.clone(),
                                model: model.to_owned(),
                                language,
                                sample,
                                code,
                            },
                            completion,
                        ))
                    }
                }
                Err(rejection) => Err((rejection, None)),
            };
            Ok::<_, LlmStageError>(outcome)
        })
        .await;
    let mut out = GenerateOutput::new(n, &prompt.sha256);
    for result in run::settle(results)? {
        match result {
            Ok((solution, completion)) => {
                out.stats.count(&completion);
                out.rows.push(solution);
            }
            Err((rejection, completion)) => {
                if let Some(c) = completion {
                    out.stats.count(&c);
                }
                out.stats.items_rejected += 1;
                out.rejected.push(rejection);
            }
        }
    }
    out.stats.items_out = out.rows.len() as u64;
    Ok(out)
}

/// Is the problem call-based (LeetCode functional tests)?
fn is_functional(p: &RewrittenProblem) -> bool {
    p.func_name.is_some()
        || p.public_tests
            .iter()
            .chain(&p.private_tests)
            .any(|t| t.testtype == coreb_data::problem::TestType::Functional)
}

fn render(
    prompt: &Prompt,
    p: &RewrittenProblem,
    language: Language,
) -> Result<Vec<coreb_llm::ChatMessage>, coreb_llm::prompt::PromptError> {
    let functional = is_functional(p);
    let (task, instructions, io) = if functional {
        ("task_solution", format!("solution_{language}"), "io_functional")
    } else {
        ("task_program", format!("language_{language}"), "io_stdin")
    };
    let skeleton;
    let starter = if p.starter_code.trim().is_empty() {
        prompt.fragment("starter_none")?.trim()
    } else {
        match coreb_judge::signature::parse(&p.starter_code) {
            Ok(signature) if functional && language != Language::Python => {
                skeleton = signature.skeleton(language);
                skeleton.as_str()
            }
            _ => p.starter_code.as_str(),
        }
    };
    prompt.render(&[
        ("title", &p.title),
        ("statement", &p.statement),
        ("language_name", language.versioned_name()),
        ("task_instructions", prompt.fragment(task)?.trim()),
        ("language_instructions", prompt.fragment(&instructions)?.trim()),
        ("io_instructions", prompt.fragment(io)?.trim()),
        ("starter_code", starter),
    ])
}
