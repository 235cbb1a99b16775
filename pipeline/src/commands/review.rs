//! `coreb review`: the human validation of a release's rewrites ([`crate::release::review`]).
//!
//! `coreb review RELEASE --sample N --seed S --out DIR` writes the review page of a draw of
//! the release (the build it was made from found as `coreb audit … rewrite` finds it, or
//! `--build-dir`); `coreb review report RELEASE FILE...` merges the reviewers' answer files
//! into `review.json` and `review.md` and, with `--record`, re-publishes the release card with
//! its "Human validation" section.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::release::review::{page, report};
use clap::{Args, Subcommand};
use coreb_base::errors::Usage;

use crate::engine::release_build::BuildLookup;
use crate::printer::Printer;

/// Arguments of `coreb review`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReviewArgs {
    /// `report`: merge reviewers' answer files.
    #[command(subcommand)]
    pub command: Option<ReviewCommand>,
    /// The release directory.
    #[arg(required = true)]
    pub release: Option<PathBuf>,
    /// How many problems to draw (stratified by platform and difficulty).
    #[arg(long, required = true)]
    pub sample: Option<usize>,
    /// The seed of the draw.
    #[arg(long, required = true)]
    pub seed: Option<u64>,
    /// Write the page here (`DIR/index.html`).
    #[arg(long, required = true)]
    pub out: Option<PathBuf>,
    /// The build directory holding the release's artifacts (default: the `output_dir` of the
    /// build manifest embedded in the release).
    #[arg(long)]
    pub build_dir: Option<PathBuf>,
}

/// The subcommands of `coreb review`.
#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// Merge reviewers' answer files: shares of "yes" with Wilson intervals, Cohen's and
    /// Fleiss' κ, Krippendorff's α, the problems they disagree on.
    Report(ReportArgs),
}

/// Arguments of `coreb review report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The release directory.
    pub release: PathBuf,
    /// The answer files (JSONL, exported by the review page).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write `review.json` and `review.md` here (default: `<release>/../reviews/<version>/`,
    /// where the `[gates] review` gate reads it).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Record the review in the release: re-publish its card (`README.md`) with a "Human
    /// validation" section and the card's entry in `MANIFEST.json`; the data files are not
    /// touched.
    #[arg(long)]
    pub record: bool,
}

/// Run `coreb review`.
pub fn review(args: ReviewArgs) -> anyhow::Result<ExitCode> {
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
