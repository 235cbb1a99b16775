//! `coreb leaderboard`: the static site and the table of the results store under the releases
//! directory. The store, the releases and the audits are read by
//! [`coreb_eval::leaderboard::store`]; the analytics are [`coreb_eval::leaderboard`]'s.

use std::path::PathBuf;
use std::process::ExitCode;

use coreb_eval::leaderboard::store::{self, RESULTS_DIR};
use coreb_eval::leaderboard::{self as board, Leaderboard, View, ViewSpec};

use crate::cli::LeaderboardArgs;
use crate::printer::Printer;

/// Run `coreb leaderboard`.
pub(crate) fn leaderboard(args: LeaderboardArgs) -> anyhow::Result<ExitCode> {
    let LeaderboardArgs {
        releases_dir,
        results,
        out,
        audits,
        json,
        from,
        to,
        after_cutoff,
        metric,
        category,
    } = args;
    let printer = Printer::new(json);
    let results = results.unwrap_or_else(|| releases_dir.join(RESULTS_DIR));
    let (lb, frames) = store::load(&releases_dir, &results, &audits, &printer)?;
    let view = board::view(&lb, &frames, &ViewSpec { from, to, after_cutoff, metric, category })?;
    if lb.models.is_empty() {
        anyhow::bail!(
            "no results recorded in `{}` (the results store of `--releases-dir {}`; `--results` names another): record one with `coreb eval <release> --record`",
            results.display(),
            releases_dir.display()
        );
    }
    let out = match (out, json) {
        (Some(o), _) => Some(o),
        (None, false) => Some(PathBuf::from("build/leaderboard")),
        (None, true) => None,
    };
    if let Some(dir) = &out {
        store::write_site(&lb, dir)?;
        printer.status(format!(
            "leaderboard: {} releases, {} models, {} values from {} record(s) in `{}`; wrote `{}`",
            lb.releases.len(),
            lb.models.len(),
            lb.cells.len(),
            lb.models.iter().map(|m| m.records).sum::<u64>(),
            results.display(),
            dir.join("index.html").display()
        ));
    }
    if json {
        #[derive(serde::Serialize)]
        struct Printed<'a> {
            #[serde(flatten)]
            leaderboard: &'a Leaderboard,
            view: &'a View,
        }
        printer.out(serde_json::to_string_pretty(&Printed { leaderboard: &lb, view: &view })?);
    } else {
        printer.out(store::markdown(&lb, &view).trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use coreb_base::report::{Recorded, Said};
    use coreb_eval::leaderboard::ReleaseInfo;
    use coreb_eval::leaderboard::store::attach_audits;

    #[test]
    fn an_audit_report_as_coreb_audit_writes_it_is_read() {
        use coreb_curation::audit::model::{ModelReport, WindowPass};
        let overall = WindowPass {
            window: "all".into(),
            problems: 10,
            excluded: 0,
            pass_at_1_original: 0.6,
            pass_at_1_rewritten: 0.45,
            drop: 0.15,
            relative_drop: Some(0.25),
        };
        let report = ModelReport {
            release: "releases/v202503".into(),
            model: "m".into(),
            endpoint: "http://127.0.0.1:1/v1".into(),
            language: coreb_data::solution::Language::Python,
            samples: 2,
            sampling: Default::default(),
            prompt_sha256: "ab".into(),
            windows: vec![overall.clone()],
            overall,
            problems: Vec::new(),
            unanswered: 0,
        };
        let text = serde_json::to_string_pretty(&report).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.json");
        fs_err::write(&path, &text).unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        fs_err::write(&elsewhere, text.replace("releases/v202503", "releases/v209912")).unwrap();
        let mut releases = vec![
            ReleaseInfo::from_store("v202503", Default::default()),
            ReleaseInfo::from_store("v202504", Default::default()),
        ];
        let said = Recorded::default();
        attach_audits(&mut releases, &[path.clone(), path, elsewhere.clone()], &said).unwrap();
        assert_eq!(releases[0].audits.len(), 1, "the same report given twice is shown once");
        assert_eq!(
            (releases[0].audits[0].drop, releases[0].audits[0].relative_drop),
            (0.15, Some(0.25))
        );
        assert!(releases[1].audits.is_empty());
        // An audit of a release neither published nor recorded is not shown, and said so.
        let warning = format!(
            "warning: `{}` audits release `releases/v209912`, which is neither published nor recorded: not shown",
            elsewhere.display()
        );
        assert_eq!(said.said(), [Said::Status(warning)]);
    }
}
