//! `coreb programs`: write the exact source the judge compiles and runs for every solution of
//! a build — the language's prelude, and a LeetCode solution inside its I/O driver — so that
//! a verdict can be reproduced by hand, and `bench/month/floor.py` runs the same programs as
//! bare processes. It reads the build of `--output-dir` (else the manifest's `output_dir`)
//! and creates nothing there.

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::{Context, bail};
use coreb_data::problem::ProblemId;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::solutions::read_solutions;
use coreb_judge::{Harness, JudgedProgram, program_of};

use crate::artifacts::ArtifactStore;
use crate::cli::ProgramsArgs;
use crate::engine::PlanOverrides;

#[derive(serde::Serialize)]
struct IndexLine<'a> {
    solution_id: &'a str,
    problem_id: &'a str,
    language: &'a str,
    file: String,
    main_class: &'a str,
}

/// Run `coreb programs`.
pub(crate) fn programs(args: ProgramsArgs) -> anyhow::Result<ExitCode> {
    let plan = PlanOverrides { output_dir: args.output_dir.clone(), publish_dir: None }
        .load(&args.manifest, None)?;
    let root = plan.output_dir.join("artifacts");
    let Some(store) = ArtifactStore::existing(&root) else {
        let from = if args.output_dir.is_some() {
            "`--output-dir`".to_owned()
        } else {
            format!("the `output_dir` of `{}`", args.manifest.display())
        };
        bail!(
            "no build at `{}` ({from}): build up to `generate` first, or pass `--output-dir` with the directory it was built in",
            root.display()
        );
    };
    let output = |stage: &str, role: &str| -> anyhow::Result<std::path::PathBuf> {
        let record = store.record(stage)?.with_context(|| {
            format!(
                "stage `{stage}` has not run for `{}`: build up to `generate` first",
                args.manifest.display()
            )
        })?;
        store.output(&record, role)
    };
    // Harnesses come from the starters: the tests are never read.
    let mut harness: HashMap<ProblemId, Harness> = HashMap::new();
    for p in ProblemReader::open_without_test_bodies(&output("rewrite", "problems")?)? {
        let p = p?;
        harness.insert(p.id.clone(), Harness::of(&p));
    }
    let solutions = read_solutions(&output("generate", "solutions")?)?;
    fs_err::create_dir_all(&args.out)?;
    let mut index = Vec::new();
    let mut written = 0usize;
    for s in &solutions {
        let Some(h) = harness.get(&s.problem_id) else {
            continue;
        };
        let JudgedProgram { source_name, code, main_class } =
            program_of(&plan.stages.execute.toolchain(s.language), s, h);
        let dir = args.out.join(s.id.as_str());
        fs_err::create_dir_all(&dir)?;
        coreb_base::durable::write(&dir.join(&source_name), code.as_bytes())?;
        let line = IndexLine {
            solution_id: s.id.as_str(),
            problem_id: s.problem_id.as_str(),
            language: s.language.as_str(),
            file: format!("{}/{source_name}", s.id.as_str()),
            main_class: &main_class,
        };
        index.extend(serde_json::to_vec(&line)?);
        index.push(b'\n');
        written += 1;
    }
    // The index last: a directory with an index is complete.
    coreb_base::durable::write(&args.out.join("index.jsonl"), &index)?;
    eprintln!(
        "{written} programs of {} solutions written to `{}`",
        solutions.len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
