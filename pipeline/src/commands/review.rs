//! `coreb review`: the human validation of a release's rewrites ([`crate::release::review`]).
//!
//! `coreb review RELEASE --sample N --seed S --out DIR` writes the review page of a draw of
//! the release (the build it was made from found as `coreb audit … rewrite` finds it, or
//! `--build-dir`); `coreb review report RELEASE FILE...` merges the reviewers' answer files
//! into `review.json` and `review.md` and, with `--record`, re-publishes the release card with
//! its "Human validation" section.

use std::process::ExitCode;

use coreb_base::errors::Usage;

use crate::cli::{ReviewArgs, ReviewCommand};
use crate::engine::release_build::BuildLookup;
use crate::printer::Printer;
use crate::release::review::{page, report};

/// Run `coreb review`.
pub(crate) fn review(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(false);
    if let Some(ReviewCommand::Report(a)) = args.command {
        let w = report::report(&a.release, &a.files, a.out.as_deref(), a.record)?;
        printer.status(format!(
            "wrote `{}` and `{}`",
            w.out.join("review.json").display(),
            w.out.join("review.md").display()
        ));
        if w.recorded {
            printer.status(format!(
                "re-published the card `{}` with its Human validation section",
                a.release.join("README.md").display()
            ));
        }
        printer.out(report::markdown(&w.report));
        return Ok(ExitCode::SUCCESS);
    }
    let missing =
        || Usage("`coreb review RELEASE --sample N --seed S --out DIR`: give all four".into());
    let (Some(release), Some(n), Some(seed), Some(out)) =
        (args.release, args.sample, args.seed, args.out)
    else {
        return Err(missing().into());
    };
    if n == 0 {
        return Err(Usage("`--sample` must be at least 1".into()).into());
    }
    coreb_curation::audit::check_release(&release)?;
    let build = BuildLookup::open(&release, args.build_dir.as_deref())?;
    let s = page::write_page(&release, &build, n, seed, &out)?;
    printer.status(format!(
        "drew {} problems of `{}` (seed {seed}, N = {n}; MANIFEST sha256 {})",
        s.ids.len(),
        s.release,
        s.release_sha256
    ));
    printer.out(format!("wrote `{}`", s.path.display()));
    Ok(ExitCode::SUCCESS)
}
