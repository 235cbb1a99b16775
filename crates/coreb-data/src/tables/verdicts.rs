//! The `verdicts` table: one row per judged solution (keyed by `solution_id`) with its
//! per-test results as a list column. Written by `execute`, read by `qrels`.
//!
//! The timing and memory columns are measurements and differ between runs; `passed`,
//! `pass_rate` and the verdicts do not for programs well inside their limits.
//! `memory_bound` says what held the memory of the solution's runs (`cgroup_v2`,
//! `cgroup_v1`, or `rlimit` where no cgroup could be used); `comparison` how its outputs
//! were compared (`exact`, `unordered` for an answer that may be in any order, `any_case` for
//! one whose letter case does not matter; a table
//! written before the column existed reads as `exact`). `stopped_at` and `stopped_by`
//! (null when every test ran) name the test whose failure ended a solution's judging and its
//! verdict (`stages.execute.mode = "labels"`, or the public-test gate); a table written
//! before those columns existed reads as every test run. A `wrong_answer` test records its
//! output as `output_sha256` (the sha256 of its canonical form, never the output) and
//! `output_alternative` (laid out as another answer could be); null for any other verdict,
//! and in a table written before those fields existed.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, ListArray, RecordBatch, StringArray, StructArray,
    UInt32Array, UInt64Array,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use crate::verdict::MemoryBound;

use super::TableError;
use crate::problem::{AnswerKind, ProblemId};
use crate::solution::{Language, SolutionId};
use crate::verdict::{SolutionResult, Stopped, TestResult, Verdict, WrongOutput};

/// Rows per record batch.
const BATCH_ROWS: usize = 1024;

fn test_fields() -> Fields {
    Fields::from(vec![
        Field::new("index", DataType::UInt32, false),
        Field::new("verdict", DataType::Utf8, false),
        Field::new("wall_ms", DataType::UInt64, false),
        Field::new("cpu_ms", DataType::UInt64, false),
        Field::new("peak_memory_kb", DataType::UInt64, false),
        Field::new("output_sha256", DataType::Utf8, true),
        Field::new("output_alternative", DataType::Boolean, true),
    ])
}

fn tests_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Struct(test_fields()), false))
}

/// The Arrow schema of the verdicts table.
pub fn verdicts_schema() -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("solution_id"),
        text("problem_id"),
        text("model"),
        text("language"),
        Field::new("passed", DataType::Boolean, false),
        Field::new("pass_rate", DataType::Float64, false),
        Field::new("tests", DataType::List(tests_item()), false),
        text("message"),
        text("memory_bound"),
        text("comparison"),
        Field::new("stopped_at", DataType::UInt32, true),
        Field::new("stopped_by", DataType::Utf8, true),
    ]))
}

fn to_batch(rows: &[SolutionResult]) -> RecordBatch {
    let text = |f: fn(&SolutionResult) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let all: Vec<&TestResult> = rows.iter().flat_map(|r| &r.tests).collect();
    let mut offsets = vec![0i32];
    for r in rows {
        offsets.push(offsets[offsets.len() - 1] + r.tests.len() as i32);
    }
    let children: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(all.iter().map(|t| t.index))),
        Arc::new(StringArray::from_iter_values(all.iter().map(|t| t.verdict.as_str()))),
        Arc::new(UInt64Array::from_iter_values(all.iter().map(|t| t.wall_ms))),
        Arc::new(UInt64Array::from_iter_values(all.iter().map(|t| t.cpu_ms))),
        Arc::new(UInt64Array::from_iter_values(all.iter().map(|t| t.peak_memory_kb))),
        Arc::new(StringArray::from_iter(
            all.iter().map(|t| t.wrong_output.as_ref().map(|w| w.sha256.as_str())),
        )),
        Arc::new(BooleanArray::from_iter(
            all.iter().map(|t| t.wrong_output.as_ref().map(|w| w.alternative)),
        )),
    ];
    let values = StructArray::new(test_fields(), children, None);
    let tests = ListArray::new(
        tests_item(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(values),
        None,
    );
    let columns: Vec<ArrayRef> = vec![
        text(|r| r.solution_id.as_str()),
        text(|r| r.problem_id.as_str()),
        text(|r| &r.model),
        text(|r| r.language.as_str()),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.passed)))),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.pass_rate))),
        Arc::new(tests),
        text(|r| &r.message),
        text(|r| r.memory_bound.as_str()),
        text(|r| r.comparison.as_str()),
        Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.stopped.map(|s| s.index)))),
        Arc::new(StringArray::from_iter(
            rows.iter().map(|r| r.stopped.map(|s| s.verdict.as_str())),
        )),
    ];
    RecordBatch::try_new(verdicts_schema(), columns).expect("columns match verdicts_schema")
}

/// Write `rows` to `path` atomically (`<path>.tmp`, then rename).
pub fn write_verdicts(path: &Path, rows: &[SolutionResult]) -> Result<usize, TableError> {
    super::write_atomic(path, verdicts_schema(), rows.chunks(BATCH_ROWS).map(to_batch))?;
    Ok(rows.len())
}

/// Read the whole table.
pub fn read_verdicts(path: &Path) -> Result<Vec<SolutionResult>, TableError> {
    let mut out: Vec<SolutionResult> = Vec::new();
    for batch in super::read_batches(path, BATCH_ROWS)? {
        let batch = batch?;
        let view = super::BatchView::new(&batch, path, out.len());
        let err = |row: usize, column: &str, reason: String| view.err(row, column, reason);
        let bad = |name: &str| err(0, name, "missing or of the wrong type".into());
        let text = |name: &str| view.column::<StringArray>(name);
        let (sid, pid, model, language, message, bound) = (
            text("solution_id")?,
            text("problem_id")?,
            text("model")?,
            text("language")?,
            text("message")?,
            text("memory_bound")?,
        );
        let comparison = batch
            .column_by_name("comparison")
            .map(|c| c.as_any().downcast_ref::<StringArray>().ok_or_else(|| bad("comparison")))
            .transpose()?;
        let passed = view.column::<BooleanArray>("passed")?;
        let rate = view.column::<Float64Array>("pass_rate")?;
        let tests = view.column::<ListArray>("tests")?;
        let values =
            tests.values().as_any().downcast_ref::<StructArray>().ok_or_else(|| bad("tests"))?;
        let field = |i: usize| values.column(i).as_any();
        let (index, verdict) = (
            field(0).downcast_ref::<UInt32Array>().ok_or_else(|| bad("tests.index"))?,
            field(1).downcast_ref::<StringArray>().ok_or_else(|| bad("tests.verdict"))?,
        );
        let nums = |i: usize, n: &str| field(i).downcast_ref::<UInt64Array>().ok_or_else(|| bad(n));
        let (wall, cpu, mem) =
            (nums(2, "tests.wall_ms")?, nums(3, "tests.cpu_ms")?, nums(4, "tests.peak_memory_kb")?);
        // Absent from tables written before wrong outputs were digested: none known.
        let (digest, alternative) = if values.num_columns() > 6 {
            (
                Some(
                    field(5)
                        .downcast_ref::<StringArray>()
                        .ok_or_else(|| bad("tests.output_sha256"))?,
                ),
                Some(
                    field(6)
                        .downcast_ref::<BooleanArray>()
                        .ok_or_else(|| bad("tests.output_alternative"))?,
                ),
            )
        } else {
            (None, None)
        };
        let offsets = tests.value_offsets();
        // Absent from tables written before judging could stop early: every test ran.
        let stopped_at = batch
            .column_by_name("stopped_at")
            .map(|_| view.column::<UInt32Array>("stopped_at"))
            .transpose()?;
        let stopped_by = batch
            .column_by_name("stopped_by")
            .map(|_| view.column::<StringArray>("stopped_by"))
            .transpose()?;
        for r in 0..batch.num_rows() {
            let lang = Language::parse(language.value(r)).ok_or_else(|| {
                err(r, "language", format!("unknown language `{}`", language.value(r)))
            })?;
            let mut results = Vec::new();
            for i in offsets[r] as usize..offsets[r + 1] as usize {
                let v = Verdict::parse(verdict.value(i)).ok_or_else(|| {
                    err(r, "tests.verdict", format!("unknown verdict `{}`", verdict.value(i)))
                })?;
                results.push(TestResult {
                    index: index.value(i),
                    verdict: v,
                    wall_ms: wall.value(i),
                    cpu_ms: cpu.value(i),
                    peak_memory_kb: mem.value(i),
                    wrong_output: match (digest, alternative) {
                        (Some(d), Some(a)) if d.is_valid(i) => Some(WrongOutput {
                            sha256: d.value(i).to_owned(),
                            alternative: a.is_valid(i) && a.value(i),
                        }),
                        _ => None,
                    },
                });
            }
            let memory_bound = match bound.value(r) {
                "cgroup_v2" => MemoryBound::CgroupV2,
                "cgroup_v1" => MemoryBound::CgroupV1,
                "rlimit" => MemoryBound::Rlimit,
                other => {
                    return Err(err(r, "memory_bound", format!("unknown memory bound `{other}`")));
                }
            };
            let comparison = match comparison.map(|c| c.value(r)) {
                None | Some("exact") => AnswerKind::Exact,
                Some("unordered") => AnswerKind::Unordered,
                Some("any_of_several") => AnswerKind::AnyOfSeveral,
                Some("any_case") => AnswerKind::AnyCase,
                Some(other) => {
                    return Err(err(r, "comparison", format!("unknown comparison `{other}`")));
                }
            };
            let stopped = match (stopped_at, stopped_by) {
                (Some(at), Some(by)) if at.is_valid(r) && by.is_valid(r) => {
                    let verdict = Verdict::parse(by.value(r)).ok_or_else(|| {
                        err(r, "stopped_by", format!("unknown verdict `{}`", by.value(r)))
                    })?;
                    Some(Stopped { index: at.value(r), verdict })
                }
                (Some(at), Some(by)) if at.is_valid(r) != by.is_valid(r) => {
                    return Err(err(
                        r,
                        "stopped_at",
                        "`stopped_at` and `stopped_by` are null together or not at all".into(),
                    ));
                }
                _ => None,
            };
            out.push(SolutionResult {
                solution_id: SolutionId::from_raw(sid.value(r).to_owned()),
                problem_id: ProblemId::from_raw(pid.value(r).to_owned()),
                model: model.value(r).to_owned(),
                language: lang,
                passed: passed.value(r),
                pass_rate: rate.value(r),
                tests: results,
                message: message.value(r).to_owned(),
                memory_bound,
                comparison,
                stopped,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let rows: Vec<SolutionResult> = (0..1500)
            .map(|i| {
                let p = ProblemId::from_question_id(&format!("{}", i % 3));
                let tests: Vec<TestResult> = (0..i % 4)
                    .map(|t| TestResult {
                        index: t as u32,
                        verdict: Verdict::ALL[(i + t) % 7],
                        wall_ms: 10 + t as u64,
                        cpu_ms: 5,
                        peak_memory_kb: 1024,
                        wrong_output: (t == 1).then(|| WrongOutput {
                            sha256: format!("{i:064x}"),
                            alternative: i % 2 == 0,
                        }),
                    })
                    .collect();
                SolutionResult {
                    solution_id: SolutionId::new(&p, "m", Language::Go, i as u32),
                    problem_id: p,
                    model: "m".into(),
                    language: Language::Go,
                    passed: i % 2 == 0,
                    pass_rate: 0.5,
                    tests,
                    message: if i % 5 == 0 { "boom".into() } else { String::new() },
                    memory_bound: [
                        MemoryBound::CgroupV2,
                        MemoryBound::CgroupV1,
                        MemoryBound::Rlimit,
                    ][i % 3],
                    comparison: match i % 4 {
                        1 => AnswerKind::Unordered,
                        2 => AnswerKind::AnyCase,
                        _ => AnswerKind::Exact,
                    },
                    stopped: (i % 4 == 3)
                        .then_some(Stopped { index: 2, verdict: Verdict::ALL[(i + 2) % 7] }),
                }
            })
            .collect();
        super::super::assert_round_trip("v.parquet", &rows, write_verdicts, read_verdicts);
    }
}
