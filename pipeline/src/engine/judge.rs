//! The build's toolchain preflight, and what it leaves for `execute` ([`Judge`]).
//!
//! Before any stage of a build that reaches `execute` runs, [`preflight`] sets up the sandbox
//! and asks every program the manifest's languages (`stages.generate.languages`) need for its
//! version, inside the sandbox. A missing one stops the build at once, naming the Debian
//! package to install and the manifest key that drops the language — instead of failing half
//! way through `execute`. The versions are part of `execute`'s key and summary
//! (`super::execute`). In an image that records the Debian packages of its toolchains
//! (`PACKAGES_ENV`), their exact versions join them.

use anyhow::Context;
use coreb_judge::{ExecuteError, ToolchainVersions, toolchain_versions};
use coreb_sandbox::Sandbox;

use crate::manifest::RunPlan;

/// The sandbox of a build and the toolchains it found.
#[derive(Debug)]
pub struct Judge {
    /// The sandbox every solution runs in.
    pub(crate) sandbox: Sandbox,
    /// Per language: program → version.
    pub versions: ToolchainVersions,
}

/// Set up the sandbox and check the toolchains of the plan's languages.
pub fn preflight(plan: &RunPlan) -> anyhow::Result<Judge> {
    let config = &plan.stages.execute;
    config.validate()?;
    let sandbox = Sandbox::new(config.sandbox.clone()).context("setting up the sandbox")?;
    let languages = &plan.stages.generate.languages;
    let versions = toolchain_versions(config, &sandbox, languages).map_err(|e| match e {
        ExecuteError::MissingToolchain { language, .. } => anyhow::anyhow!(
            "preflight: {e} (`scripts/setup` installs every toolchain the judge runs, from \
             scripts/debian-packages.txt); or remove `{language}` from `stages.generate.languages` in `{}`",
            plan.manifest_path.display()
        ),
        e => anyhow::Error::new(e).context("preflight: asking the toolchains for their versions"),
    })?;
    let mut versions = versions;
    if let Some(file) = std::env::var_os(PACKAGES_ENV).filter(|f| !f.is_empty()) {
        let file = std::path::PathBuf::from(file);
        let text = fs_err::read_to_string(&file)
            .with_context(|| format!("preflight: `{PACKAGES_ENV}`"))?;
        add_packages(&mut versions, &text, &file)?;
    }
    Ok(Judge { sandbox, versions })
}

/// The environment variable naming the file in which an image records the Debian packages of
/// the toolchains it installed (the container sets it: `scripts/toolchain-packages` writes the
/// file when the image is built).
const PACKAGES_ENV: &str = "COREB_TOOLCHAIN_PACKAGES";

/// Add the packages of `text` (lines `<language>\t<package>\t<version>`, as
/// `scripts/toolchain-packages` writes them) to `versions`, each as the program
/// `deb:<package>` of its language, for the languages the build judges (the others are not
/// the build's toolchains). So the MANIFEST's toolchains record the exact package versions of
/// an image; like every toolchain version, they are the release's provenance. A malformed line
/// is an error naming `file` and the line.
fn add_packages(
    versions: &mut ToolchainVersions,
    text: &str,
    file: &std::path::Path,
) -> anyhow::Result<()> {
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let [language, package, version] = fields[..] else {
            anyhow::bail!(
                "`{}`, line {}: not `<language>\\t<package>\\t<version>`",
                file.display(),
                i + 1
            );
        };
        let Some(language) = coreb_data::solution::Language::parse(language) else {
            anyhow::bail!("`{}`, line {}: unknown language `{language}`", file.display(), i + 1);
        };
        if let Some(programs) = versions.get_mut(&language) {
            programs.insert(format!("deb:{package}"), version.to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::solution::Language;

    #[test]
    fn an_images_packages_join_its_languages_toolchains() {
        let mut versions = ToolchainVersions::from([(
            Language::Java,
            [("java".to_owned(), "openjdk 17.0.15".to_owned())].into(),
        )]);
        let file = std::path::Path::new("packages.tsv");
        add_packages(
            &mut versions,
            "java\topenjdk-17-jdk-headless\t17.0.15+6-1~deb12u1\ngo\tgolang-go\t2:1.19~1\n",
            file,
        )
        .unwrap();
        assert_eq!(versions[&Language::Java]["deb:openjdk-17-jdk-headless"], "17.0.15+6-1~deb12u1");
        assert!(!versions.contains_key(&Language::Go), "not a language of the build");
        let err = add_packages(&mut versions, "java openjdk\n", file).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`packages.tsv`, line 1: not `<language>\\t<package>\\t<version>`"
        );
        let err = add_packages(&mut versions, "\ncobol\tgnucobol\t3\n", file).unwrap_err();
        assert_eq!(err.to_string(), "`packages.tsv`, line 2: unknown language `cobol`");
    }
}
