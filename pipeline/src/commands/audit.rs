//! `coreb audit <release> <audit>`: contamination audits of a published release — `overlap
//! <corpus>`, `rewrite` and `model`, in [`coreb_curation::audit`] (`model` run by
//! [`crate::ops::model_audit`]). This command turns the flags
//! into the audits' options, finds the build the release was made from
//! ([`BuildLookup`], checking the release's sandbox settings for `model`), writes `--out` and
//! prints the report.

use std::process::ExitCode;

use coreb_curation::audit::{self, Report, overlap, rewrite};

use crate::cli::{AuditArgs, AuditKind, RewriteArgs};
use crate::engine::release_build::BuildLookup;
use crate::printer::Printer;

/// Run `coreb audit`.
pub(crate) fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let AuditArgs { release, audit, out, json } = args;
    let printer = Printer::new(json);
    audit::check_release(&release)?;
    let report = match audit {
        AuditKind::Overlap(options) => Report::Overlap(overlap::overlap(&release, &options)?),
        AuditKind::Rewrite(RewriteArgs { options, build_dir }) => {
            let options =
                rewrite::RewriteOptions { tests: options.tests || build_dir.is_some(), ..options };
            Report::Rewrite(rewrite::rewrite(
                &release,
                &options,
                || BuildLookup::open(&release, build_dir.as_deref()),
                &printer,
            )?)
        }
        AuditKind::Model(a) => {
            let (build_dir, trust) = (a.build_dir.clone(), a.trust_release_sandbox);
            let open_build = || {
                let lookup = BuildLookup::open(&release, build_dir.as_deref())?;
                lookup.check_sandbox(trust)?;
                Ok(lookup)
            };
            let runtime = super::runtime()?;
            Report::Model(crate::ops::model_audit::model_audit(
                &release,
                a.options,
                open_build,
                &printer,
                runtime.handle(),
            )?)
        }
    };
    let mut code = ExitCode::SUCCESS;
    if let Report::Model(r) = &report
        && r.unanswered > 0
    {
        // The report is still written; the exit code tells scripts it is incomplete.
        printer.status(format!(
            "warning: {} samples got no answer from the endpoint (see `unanswered`); run again to ask for them (stored answers are not asked again)",
            r.unanswered
        ));
        code = ExitCode::from(1);
    }
    let (value, md) = (report.to_json()?, report.markdown());
    if let Some(dir) = out {
        let (json_path, md_path) = audit::write(&dir, report.name(), &value, &md)?;
        printer.status(format!("wrote `{}` and `{}`", json_path.display(), md_path.display()));
    }
    if json {
        printer.json_line(&value);
    } else {
        printer.out(md);
    }
    Ok(code)
}
