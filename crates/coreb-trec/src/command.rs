//! The `trec-eval` command's behaviour, shared by `coreb trec-eval` and the `coreb-trec`
//! binary: read a qrels file and a run file, evaluate, return trec_eval's text. Parsing the
//! command line and printing stay with the caller.

use std::path::PathBuf;

use crate::trec::{TrecOptions, evaluate};
use crate::{EvalError, Qrels, Run};

/// The options of `trec_eval [-q] [-c] [-M N] [-l N] [-m MEASURE]... qrels run`.
#[derive(Debug, Clone)]
pub struct TrecEvalArgs {
    /// `-q`: also print the measures of every query.
    pub per_query: bool,
    /// `-c`: average over every query of the qrels, not only those in the run.
    pub complete: bool,
    /// `-M N`: use at most N retrieved documents per query.
    pub max_retrieved: Option<usize>,
    /// `-l N`: lowest relevance level that counts as relevant for binary measures (trec_eval's
    /// default is 1).
    pub level: i64,
    /// `-m`: measures or measure groups with optional parameters (`ndcg_cut.5,10`, `all_trec`);
    /// empty means trec_eval's default set.
    pub measures: Vec<String>,
    /// The qrels file.
    pub qrels: PathBuf,
    /// The run file.
    pub run: PathBuf,
}

/// Why `trec-eval` failed: which input, and the evaluator's error as its source.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The qrels file could not be read or parsed.
    #[error("reading qrels `{}`", path.display())]
    Qrels {
        /// The qrels file.
        path: PathBuf,
        /// What went wrong (names the line where there is one).
        #[source]
        source: EvalError,
    },
    /// The run file could not be read or parsed.
    #[error("reading run `{}`", path.display())]
    Run {
        /// The run file.
        path: PathBuf,
        /// What went wrong (names the line where there is one).
        #[source]
        source: EvalError,
    },
    /// Bad measures, or nothing to evaluate.
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// Runs `trec-eval`: trec_eval's text output (one line per value, `\n`-terminated).
pub fn trec_eval(args: &TrecEvalArgs) -> Result<String, CommandError> {
    let mut opts = TrecOptions::from_args(&args.measures)?;
    opts.level = args.level;
    opts.max_retrieved = args.max_retrieved;
    opts.complete = args.complete;
    let qrels = Qrels::read(&args.qrels)
        .map_err(|source| CommandError::Qrels { path: args.qrels.clone(), source })?;
    let run = Run::read(&args.run)
        .map_err(|source| CommandError::Run { path: args.run.clone(), source })?;
    let report = evaluate(&qrels, &run, &opts)?;
    Ok(report.to_text(args.per_query))
}

/// Parses trec_eval's own command line (`-q`, `-c`, `-M N`/`-MN`, `-l N`/`-lN`,
/// `-m M`/`-mM`, then the qrels and run paths); `Err` holds the message for a usage error.
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<TrecEvalArgs, String> {
    let mut out = TrecEvalArgs {
        per_query: false,
        complete: false,
        max_retrieved: None,
        level: 1,
        measures: Vec::new(),
        qrels: PathBuf::new(),
        run: PathBuf::new(),
    };
    let mut paths = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let Some(flag) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            paths.push(PathBuf::from(arg));
            continue;
        };
        let mut chars = flag.chars();
        let name = chars.next().map(String::from).unwrap_or_default();
        let inline = chars.as_str();
        let mut value = |what: &str| -> Result<String, String> {
            if inline.is_empty() {
                args.next().ok_or_else(|| format!("-{name} needs {what}"))
            } else {
                Ok(inline.to_owned())
            }
        };
        match name.as_str() {
            "q" if inline.is_empty() => out.per_query = true,
            "c" if inline.is_empty() => out.complete = true,
            "M" => out.max_retrieved = Some(parse_number(&value("a number")?, &name)?),
            "l" => out.level = parse_number(&value("a number")?, &name)?,
            "m" => out.measures.push(value("a measure")?),
            _ => return Err(format!("unknown option `{arg}`")),
        }
    }
    let [qrels, run] = <[PathBuf; 2]>::try_from(paths)
        .map_err(|p| format!("expected a qrels file and a run file, got {} paths", p.len()))?;
    out.qrels = qrels;
    out.run = run;
    Ok(out)
}

fn parse_number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("-{flag}: `{text}` is not a number"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(args: &[&str]) -> Result<TrecEvalArgs, String> {
        parse_args(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn parses_trec_eval_flags_joined_and_separate() {
        let a = parse(&[
            "-q",
            "-c",
            "-M100",
            "-l",
            "2",
            "-m",
            "all_trec",
            "-mrelstring.20",
            "qrels",
            "run",
        ])
        .unwrap();
        assert!(a.per_query && a.complete);
        assert_eq!(a.max_retrieved, Some(100));
        assert_eq!(a.level, 2);
        assert_eq!(a.measures, ["all_trec", "relstring.20"]);
        assert_eq!((a.qrels.as_path(), a.run.as_path()), (Path::new("qrels"), Path::new("run")));
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        assert!(parse(&["qrels"]).unwrap_err().contains("got 1 paths"));
        assert!(parse(&["-x", "qrels", "run"]).unwrap_err().contains("`-x`"));
        assert!(
            parse(&["-M", "ten", "qrels", "run"]).unwrap_err().contains("`ten` is not a number")
        );
        assert!(parse(&["qrels", "run", "-m"]).unwrap_err().contains("-m needs a measure"));
    }

    #[test]
    fn errors_name_the_input() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("qrels"), "1 0 a 1\n1 0 b\n").unwrap();
        std::fs::write(dir.path().join("run"), "1 Q0 a 1 2.0 r\n").unwrap();
        let args = parse_args(
            [dir.path().join("qrels"), dir.path().join("run")].map(|p| p.display().to_string()),
        )
        .unwrap();
        let err = trec_eval(&args).unwrap_err();
        assert!(matches!(err, CommandError::Qrels { .. }), "{err:?}");
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(source.contains("qrels:2") && source.contains("malformed"), "{source}");
    }
}
