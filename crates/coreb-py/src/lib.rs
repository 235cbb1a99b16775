//! `coreb_rs`: coreb's evaluator for Python, in the `coreb-rs` wheel beside the `coreb`
//! command (`scripts/wheel`).
//!
//! - `RelevanceEvaluator`: pytrec_eval's interface over `coreb-trec`, which is trec_eval
//!   10.0 byte for byte: `RelevanceEvaluator(qrels, measures, relevance_level=1)
//!   .evaluate(run)` gives `{query: {measure: value}}` under trec_eval's printed names
//!   (`P_5`, `ndcg_cut_10`, `map` ...), for the queries both in the qrels and in the run, as
//!   `trec_eval -q` evaluates them (`relstring` is a string; `runid` is left out, as
//!   pytrec_eval does).
//! - `evaluate_release`: a run (a TREC file or a `{query: {doc: score}}` dict) scored
//!   against a release folder or one BEIR folder exactly as `coreb eval --run` scores it (a
//!   code query's own document dropped unless `keep_self`), returned as the report `coreb
//!   eval --run --json` prints.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Parser as _;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use coreb_trec::measures::{Combine, Kind};
use coreb_trec::trec::{TrecOptions, evaluate, pytrec_measures};
use coreb_trec::{EvalError, Qrels, Run};

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Judgements and measures, evaluated against runs (pytrec_eval's `RelevanceEvaluator`).
#[pyclass(module = "coreb_rs", frozen)]
struct RelevanceEvaluator {
    qrels: Qrels,
    options: TrecOptions,
}

#[pymethods]
impl RelevanceEvaluator {
    /// `query_relevance`: `{query: {doc: relevance}}`; `measures`: as pytrec_eval takes them
    /// (`"map"`, `"ndcg_cut.10"`, `"P.5,10"`, `"P_5"`, `"all_trec"` ...; the entries of one
    /// measure combined, `{"P.5", "P.10"}` giving both), an iterable or a single string; `relevance_level`: trec_eval's `-l`, the lowest relevance counted as
    /// relevant by binary measures.
    #[new]
    #[pyo3(signature = (query_relevance, measures, relevance_level = 1))]
    fn new(
        query_relevance: BTreeMap<String, BTreeMap<String, i64>>,
        measures: &Bound<'_, PyAny>,
        relevance_level: i64,
    ) -> PyResult<Self> {
        let measures: Vec<String> = if measures.is_instance_of::<PyString>() {
            vec![measures.extract()?]
        } else {
            let mut out = Vec::new();
            for item in measures.try_iter()? {
                out.push(item?.extract::<String>()?);
            }
            out
        };
        if measures.is_empty() {
            return Err(value_error("measures: none given (trec_eval's default is `official`)"));
        }
        // pytrec_eval's reading: `{"P.5", "P.10"}` is both cut-offs, as `{"P.5,10"}` is.
        let measures = pytrec_measures(&measures).map_err(value_error)?;
        let mut options = TrecOptions::from_args(&measures).map_err(value_error)?;
        options.level = relevance_level;
        let triples = query_relevance
            .into_iter()
            .flat_map(|(q, docs)| docs.into_iter().map(move |(d, r)| (q.clone(), d, r)));
        let qrels = Qrels::from_triples(triples).map_err(value_error)?;
        Ok(RelevanceEvaluator { qrels, options })
    }

    /// `run`: `{query: {doc: score}}`. Returns `{query: {measure: value}}` for every query
    /// of the run that has judgements (none: `{}`).
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        run: BTreeMap<String, BTreeMap<String, f64>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut trec_run = Run::new("coreb_rs");
        for (q, docs) in &run {
            for (d, score) in docs {
                trec_run.push(q, d, *score);
            }
        }
        let out = PyDict::new(py);
        let report = match evaluate(&self.qrels, &trec_run, &self.options) {
            Ok(report) => report,
            Err(EvalError::NoQueries) => return Ok(out),
            Err(e) => return Err(value_error(e)),
        };
        for q in &report.queries {
            let values = PyDict::new(py);
            for (m, vals) in report.measures.iter().zip(&q.values) {
                match m.combine() {
                    Combine::RunId => {}
                    Combine::None => {
                        values.set_item(&m.names[0], q.relstring.as_deref().unwrap_or(""))?
                    }
                    _ => {
                        for (name, v) in m.names.iter().zip(vals) {
                            values.set_item(name, *v)?;
                        }
                    }
                }
            }
            out.set_item(&q.qid, values)?;
        }
        Ok(out)
    }
}

/// The flags of `coreb eval`, parsed as the command line parses them.
#[derive(clap::Parser)]
#[command(no_binary_name = true)]
struct EvalArgs {
    #[command(flatten)]
    options: coreb_eval::run::EvalOptions,
}

/// Score `run` (a TREC run file's path, or `{query: {doc: score}}`) against `release` (a
/// release folder or one BEIR folder) as `coreb eval <release> --run <run> --k <k>` does;
/// returns the report `--json` prints (a dict: `retriever`, `ks`, `tasks` ...).
#[pyfunction]
#[pyo3(signature = (release, run, k = vec![1, 5, 10], keep_self = false))]
fn evaluate_release<'py>(
    py: Python<'py>,
    release: PathBuf,
    run: &Bound<'py, PyAny>,
    k: Vec<usize>,
    keep_self: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let scratch = tempfile::tempdir().map_err(value_error)?;
    let run_path = if run.is_instance_of::<PyDict>() {
        let queries: BTreeMap<String, BTreeMap<String, f64>> = run.extract()?;
        let mut trec_run = Run::new("coreb_rs");
        for (q, docs) in &queries {
            for (d, score) in docs {
                trec_run.push(q, d, *score);
            }
        }
        let path = scratch.path().join("run.trec");
        coreb_base::durable::write(&path, trec_run.to_trec(usize::MAX).as_bytes())
            .map_err(value_error)?;
        path
    } else {
        run.extract::<PathBuf>()?
    };
    let ks: Vec<String> = k.iter().map(usize::to_string).collect();
    let mut args = vec![
        release.into_os_string(),
        "--run".into(),
        run_path.into_os_string(),
        "--k".into(),
        ks.join(",").into(),
    ];
    if keep_self {
        args.push("--keep-self".into());
    }
    let parsed =
        EvalArgs::try_parse_from(args).map_err(|e| value_error(e.to_string().trim_end()))?;
    let no_manifest = |_: &std::path::Path| -> anyhow::Result<coreb_eval::run::ManifestSettings> {
        anyhow::bail!("no manifest is read here")
    };
    let runtime = coreb_http::runtime(Some(1)).map_err(value_error)?;
    let report = coreb_eval::run::report(
        &parsed.options,
        &no_manifest,
        &coreb_base::report::Silent,
        runtime.handle(),
    )
    .map_err(|e| value_error(format!("{e:#}")))?;
    let text = serde_json::to_string(&report).map_err(value_error)?;
    py.import("json")?.call_method1("loads", (text,))
}

/// The measures `RelevanceEvaluator` takes, by trec_eval name.
fn supported_measures() -> Vec<&'static str> {
    Kind::all().iter().map(|k| k.name()).collect()
}

#[pymodule]
fn coreb_rs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RelevanceEvaluator>()?;
    m.add_function(wrap_pyfunction!(evaluate_release, m)?)?;
    m.add("supported_measures", supported_measures())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
