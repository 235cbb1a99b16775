//! A human review recorded beside the releases (`coreb review report --record`), as the
//! `release` stage puts its section into the card again.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

/// A human review recorded by `coreb review report --record` for release `version` of
/// `releases_dir`: its card section and the data digest (and MANIFEST sha256) of the release
/// it reviewed.
#[derive(Debug, serde::Serialize)]
pub(crate) struct RecordedReview {
    /// `<releases_dir>/reviews/<version>/`.
    #[serde(skip)]
    pub(crate) dir: PathBuf,
    /// The card's "Human validation" section (`card.md`).
    pub(crate) section: String,
    /// `release_sha256` of `review.json`.
    pub(crate) reviewed_sha256: String,
    /// `data_sha256` of `review.json` (absent in a review recorded before reviews named
    /// their data: then the MANIFEST's digest decides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) data_sha256: Option<String>,
}

/// What the release stage reads of a recorded review's `review.json`: which release it is of.
#[derive(Deserialize)]
struct ReviewOf {
    /// The release's version.
    release: Option<String>,
    /// The sha256 of the MANIFEST reviewed.
    release_sha256: Option<String>,
    /// The digest of the data reviewed ([`ReleaseManifest::data_sha256`]).
    data_sha256: Option<String>,
}

/// The review recorded beside the releases (`<releases_dir>/reviews/<version>/card.md` and
/// `review.json`), if any: the `release` stage puts its section into the card again, so that
/// a rebuild of a reviewed release publishes the card the review re-published.
pub(crate) fn recorded_review(
    releases_dir: &Path,
    version: &str,
    review_dir: Option<&Path>,
) -> anyhow::Result<Option<RecordedReview>> {
    let json = match review_dir {
        Some(dir) => dir.join("review.json"),
        None => coreb_eval::gates::review_path(&releases_dir.join(version), version),
    };
    let dir = json.parent().map(Path::to_owned).unwrap_or_default();
    let card = dir.join(super::report::CARD_SECTION);
    if !card.is_file() {
        return Ok(None);
    }
    let review: ReviewOf = serde_json::from_str(&fs_err::read_to_string(&json)?)
        .with_context(|| format!("reading `{}`", json.display()))?;
    let reviewed_sha256 = review
        .release_sha256
        .with_context(|| format!("`{}`: no `release_sha256`", json.display()))?;
    if review.release.as_deref() != Some(version) {
        anyhow::bail!(
            "`{}` is a review of `{}`, not of `{version}`",
            json.display(),
            review.release.unwrap_or_default()
        );
    }
    Ok(Some(RecordedReview {
        section: fs_err::read_to_string(&card)?,
        reviewed_sha256,
        data_sha256: review.data_sha256,
        dir,
    }))
}
