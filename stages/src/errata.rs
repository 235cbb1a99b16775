//! Errata: lists of problems whose tests cannot judge a solution right, which `filter` drops
//! with the reason `errata:<kind>` ([`crate::filter`]).
//!
//! Two lists can apply: LiveCodeBench's own errata, built in ([`livecodebench`], the file
//! `stages/errata/livecodebench.toml`: each entry with its kind, and the list with the URL and
//! date it was copied from), on while `[stages.filter] livecodebench_errata` is; and a team's
//! own, written in the manifest as `[[stages.filter.errata]]` entries. [`applied`] names the
//! lists a configuration applies with their sha256, as the release MANIFEST records them.
//!
//! What it does NOT do: fetch a list (the built-in one changes with coreb's source, by hand,
//! from the URL it names), or decide anything from a statement (that is the statement's
//! answer kind, not an erratum).

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use coreb_data::problem::{Platform, Problem};

/// What is wrong with a problem's tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrataKind {
    /// The problem accepts several outputs; its tests hold one.
    SeveralAnswers,
    /// The program must interact with a judge; a test cannot.
    Interactive,
    /// The tests are wrong (scraped wrongly, or inputs outside the constraints).
    ErroneousTests,
}

impl ErrataKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ErrataKind; 3] =
        [ErrataKind::SeveralAnswers, ErrataKind::Interactive, ErrataKind::ErroneousTests];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrataKind::SeveralAnswers => "several_answers",
            ErrataKind::Interactive => "interactive",
            ErrataKind::ErroneousTests => "erroneous_tests",
        }
    }

    /// The filter's reason for it: `errata:<kind>`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrataKind::SeveralAnswers => "errata:several_answers",
            ErrataKind::Interactive => "errata:interactive",
            ErrataKind::ErroneousTests => "errata:erroneous_tests",
        }
    }
}

/// One listed problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Erratum {
    /// The problem: its LiveCodeBench `question_id` (`abc350_c`, `3194`), its coreb id
    /// (`lcb_3194`), or a LeetCode problem's title slug (`find-the-peaks`), as LiveCodeBench's
    /// errata name LeetCode problems.
    pub problem: String,
    /// What is wrong.
    pub kind: ErrataKind,
    /// What the list says of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Where it was reported (a URL), when the entry names its own source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// When it was reported or copied, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

impl Erratum {
    /// Does this entry name `problem`?
    pub fn names(&self, problem: &Problem) -> bool {
        let p = self.problem.as_str();
        p == problem.question_id
            || p == problem.id.as_str()
            || (problem.platform == Platform::Leetcode && p == problem.question_title)
    }

    /// Check the entry: a problem named, a date that is a date.
    pub fn validate(&self) -> Result<(), String> {
        if self.problem.trim().is_empty() {
            return Err("`problem` is empty".into());
        }
        if let Some(d) = &self.date
            && !coreb_data::problem::is_iso_day(d)
        {
            return Err(format!("`{}`: `date` = `{d}` is not a `YYYY-MM-DD` date", self.problem));
        }
        Ok(())
    }
}

/// A list of errata from one source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrataList {
    /// Its name (`livecodebench`).
    pub name: String,
    /// Where it was copied from (a URL at a fixed commit).
    pub source: String,
    /// The day it was copied, `YYYY-MM-DD`.
    pub date: String,
    /// The problems listed.
    pub problems: Vec<Erratum>,
}

/// The text of the built-in list, LiveCodeBench's errata.
pub const LIVECODEBENCH_TEXT: &str = include_str!("../errata/livecodebench.toml");

static LIVECODEBENCH: LazyLock<ErrataList> = LazyLock::new(|| {
    // The file is coreb's own, parsed by a unit test: it cannot fail at run time.
    toml::from_str(LIVECODEBENCH_TEXT).expect("stages/errata/livecodebench.toml parses")
});

/// LiveCodeBench's errata, built in.
pub fn livecodebench() -> &'static ErrataList {
    &LIVECODEBENCH
}

/// The name the manifest's own list is recorded under.
pub const MANIFEST_LIST: &str = "manifest";

/// A list of errata a filter applied, as the release MANIFEST records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrataPin {
    /// `livecodebench` (the built-in list) or `manifest` (`[[stages.filter.errata]]`).
    pub name: String,
    /// sha256 of the list: of the built-in file's bytes, or of the manifest entries' JSON.
    pub sha256: String,
    /// The problems it lists.
    pub problems: usize,
    /// Where the built-in list was copied from, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The day it was copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// The lists applied: the built-in one while `livecodebench` is on, then the manifest's own
/// entries when there are any.
pub fn applied(livecodebench_on: bool, own: &[Erratum]) -> Vec<ErrataPin> {
    let mut pins = Vec::new();
    if livecodebench_on {
        let list = livecodebench();
        pins.push(ErrataPin {
            name: list.name.clone(),
            sha256: coreb_base::hashing::sha256_hex(LIVECODEBENCH_TEXT.as_bytes()),
            problems: list.problems.len(),
            source: Some(list.source.clone()),
            date: Some(list.date.clone()),
        });
    }
    if !own.is_empty() {
        let json = serde_json::to_vec(own).unwrap_or_default();
        pins.push(ErrataPin {
            name: MANIFEST_LIST.into(),
            sha256: coreb_base::hashing::sha256_hex(&json),
            problems: own.len(),
            source: None,
            date: None,
        });
    }
    pins
}

/// The first entry that names `problem`, and its list's name: the built-in list first (while
/// on), then the manifest's.
pub fn find<'a>(
    livecodebench_on: bool,
    own: &'a [Erratum],
    problem: &Problem,
) -> Option<(&'static str, &'a Erratum)> {
    if livecodebench_on && let Some(e) = livecodebench().problems.iter().find(|e| e.names(problem))
    {
        return Some(("livecodebench", e));
    }
    own.iter().find(|e| e.names(problem)).map(|e| (MANIFEST_LIST, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_list_parses_and_names_its_source() {
        let list = livecodebench();
        assert_eq!(list.name, "livecodebench");
        assert!(
            list.source.starts_with("https://github.com/LiveCodeBench/LiveCodeBench/blob/")
                && list.source.ends_with("/ERRATA.md"),
            "{}",
            list.source
        );
        assert!(coreb_data::problem::is_iso_day(&list.date));
        let count = |k| list.problems.iter().filter(|e| e.kind == k).count();
        assert_eq!(
            (
                count(ErrataKind::SeveralAnswers),
                count(ErrataKind::Interactive),
                count(ErrataKind::ErroneousTests)
            ),
            (9, 2, 3)
        );
        for e in &list.problems {
            e.validate().unwrap();
        }
        let mut ids: Vec<&str> = list.problems.iter().map(|e| e.problem.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), list.problems.len(), "no problem listed twice");
    }

    #[test]
    fn applied_lists_carry_a_sha256_that_follows_their_content() {
        assert!(applied(false, &[]).is_empty());
        let own = vec![Erratum {
            problem: "abc999_z".into(),
            kind: ErrataKind::ErroneousTests,
            note: None,
            source: None,
            date: Some("2026-01-02".into()),
        }];
        let pins = applied(true, &own);
        assert_eq!(
            pins.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["livecodebench", "manifest"]
        );
        assert_eq!(pins[0].problems, 14);
        assert!(coreb_base::hashing::is_sha256_hex(&pins[1].sha256));
        let mut other = own.clone();
        other[0].kind = ErrataKind::Interactive;
        assert_ne!(applied(false, &other)[0].sha256, pins[1].sha256);
    }
}
