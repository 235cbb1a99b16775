//! `coreb-trec`: trec_eval's command line on its own (`coreb-trec [-q] [-c] [-M N] [-l N]
//! [-m MEASURE]... qrels run`), the same output as `coreb trec-eval` and trec_eval 10.0.

use std::io::Write as _;
use std::process::ExitCode;

use coreb_trec::command::{parse_args, trec_eval};

const USAGE: &str = "usage: coreb-trec [-q] [-c] [-M N] [-l N] [-m MEASURE]... qrels run";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!(
            "{USAGE}\n\n-q per-query values too; -c average over every qrels query; -M N at most N documents per query;\n-l N lowest relevant level (default 1); -m a measure or group (`all_trec`, `ndcg_cut.5,10`, `P.10`)."
        );
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(args) {
        Ok(args) => args,
        Err(why) => {
            eprintln!("coreb-trec: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match trec_eval(&args) {
        Ok(text) => {
            // A closed pipe (`coreb-trec … | head`) is not an error: the rest is dropped.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(err) => {
            let mut message = format!("coreb-trec: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
