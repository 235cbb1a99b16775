//! `coreb export --layout hf-coreb <releases_dir> <out>`: every release as one Hugging Face
//! dataset folder in the published CoREB layout ([`crate::ops::export`]).

use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{ExportArgs, ExportLayout};
use crate::printer::Printer;

/// Run `coreb export`.
pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let ExportArgs {
        layout,
        releases_dir,
        out,
    } = args;
    let printer = Printer::new(false);
    match layout {
        ExportLayout::HfCoreb => {
            let releases =
                crate::ops::export::export_hf_coreb(&releases_dir, &out).with_context(|| {
                    format!(
                        "exporting `{}` to `{}`",
                        releases_dir.display(),
                        out.display()
                    )
                })?;
            for r in &releases {
                let rows: Vec<String> = r.rows.iter().map(|(c, n)| format!("{c} {n}")).collect();
                printer.status(format!("{}: {}", r.split(), rows.join(", ")));
            }
            printer.out(format!(
                "wrote {} ({} release(s), 8 configs)",
                out.display(),
                releases.len()
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}
