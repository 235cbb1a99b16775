//! The README's architecture picture and crate table against `cargo metadata` (issue #33): every
//! workspace crate in the table with its path and the coreb crates it depends on, and in the
//! picture on a layer above every crate it depends on (no arrow runs back up); and every
//! crate where its name says (`crates/<package>`, but the binary's `pipeline/` and the stages'
//! `stages/`), its library named as its package (issue #49).

use std::collections::{BTreeMap, BTreeSet};

use crate::support::root;

/// `cargo metadata` of the workspace's own packages.
fn metadata() -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each workspace crate: its path relative to the root (`pipeline/`, `crates/coreb-data`) and
/// the coreb crates it depends on (normal dependencies).
fn workspace() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let meta = metadata();
    let root = root();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let dir = std::path::Path::new(p["manifest_path"].as_str().unwrap())
                .parent()
                .unwrap()
                .to_owned();
            let rel = dir.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null() && d["name"].as_str().unwrap().starts_with("coreb"))
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect();
            (p["name"].as_str().unwrap().to_owned(), (rel, deps))
        })
        .collect()
}

fn layout_section(readme: &str) -> &str {
    let start = readme.find("\n## Layout").expect("README has a `## Layout` section");
    let rest = &readme[start + 1..];
    &rest[..rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3)]
}

#[test]
fn the_readme_crate_table_and_picture_match_cargo_metadata() {
    let crates = workspace();
    let readme = fs_err::read_to_string(root().join("README.md")).unwrap();
    let section = layout_section(&readme);

    // The table: | `name` (`path`) | owns | deps, or "all below", or — |
    let mut table = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let name = cells[0].split('`').nth(1).unwrap().to_owned();
        let path = cells[0].split('`').nth(3).unwrap().trim_end_matches('/').to_owned();
        let deps: BTreeSet<String> = match cells[2] {
            "—" => BTreeSet::new(),
            "all below" => crates.keys().filter(|k| **k != name).cloned().collect(),
            list => list.split(',').map(|d| d.trim().to_owned()).collect(),
        };
        table.insert(name, (path, deps));
    }
    assert_eq!(
        table.keys().collect::<Vec<_>>(),
        crates.keys().collect::<Vec<_>>(),
        "the README's crate table lists other crates than the workspace"
    );
    for (name, (path, deps)) in &crates {
        let (readme_path, readme_deps) = &table[name];
        assert_eq!(readme_path, path, "README: the path of `{name}`");
        assert_eq!(readme_deps, deps, "README: the coreb crates `{name}` depends on");
    }

    // The picture: a `text` block, one layer a line from the top, crates joined by ` · `,
    // `↓` lines between layers.
    let picture = section
        .split("```text\n")
        .nth(1)
        .expect("a ```text picture in `## Layout`")
        .split("```")
        .next()
        .unwrap();
    let mut layer_of = BTreeMap::new();
    for (layer, line) in
        picture.lines().map(str::trim).filter(|l| !l.is_empty() && *l != "↓").enumerate()
    {
        let names = line.split("  ").next().unwrap();
        for name in names.split(" · ").map(str::trim) {
            assert!(
                crates.contains_key(name),
                "the picture names `{name}`, which is not a workspace crate"
            );
            assert!(
                layer_of.insert(name.to_owned(), layer).is_none(),
                "`{name}` stands twice in the picture"
            );
        }
    }
    assert_eq!(layer_of.len(), crates.len(), "the picture leaves out a crate: {layer_of:?}");
    for (name, (_, deps)) in &crates {
        for dep in deps {
            assert!(
                layer_of[dep] > layer_of[name],
                "`{name}` depends on `{dep}`, which the picture does not draw below it"
            );
        }
    }
}

/// The cuts of issue "the house, step two": curation sits beside the stages, not above them
/// (it runs no stage: the model audit's run is the binary's), and the judge is a library of
/// its own that no build stage is needed for.
#[test]
fn curation_depends_on_no_stage_and_the_judge_only_on_what_judging_needs() {
    let crates = workspace();
    let (_, curation) = &crates["coreb-curation"];
    assert!(
        !curation.contains("coreb-stages"),
        "coreb-curation depends on coreb-stages again: {curation:?}"
    );
    let (path, judge) = &crates["coreb-judge"];
    assert_eq!(path, "crates/coreb-judge");
    assert_eq!(
        judge.iter().map(String::as_str).collect::<Vec<_>>(),
        ["coreb-base", "coreb-data", "coreb-sandbox"]
    );
    for user in ["coreb", "coreb-stages"] {
        assert!(crates[user].1.contains("coreb-judge"), "{user} judges through coreb-judge");
    }
}

/// Package, folder and library agree (issue #49): every crate but the binary's (`pipeline/`)
/// and the stages' (`stages/`, the top level the design card names) lives in
/// `crates/<package>`, and a Rust library is named as its package with `-` as `_`
/// (`coreb-stages` → `coreb_stages`), so a `use` names the crate `Cargo.toml` lists. The one
/// library that is not a Rust library, coreb-py's Python extension, is named as Python imports
/// it (`coreb_rs`, the module of the `coreb-rs` wheel).
#[test]
fn every_crate_lives_in_its_folder_and_its_library_is_named_as_its_package() {
    for (name, (path, _)) in workspace() {
        let expected = match name.as_str() {
            "coreb" => "pipeline".to_owned(),
            // The design card's top level: Cargo.toml, pipeline, stages, prompts, manifests,
            // releases, tests (issue #59).
            "coreb-stages" => "stages".to_owned(),
            _ => format!("crates/{name}"),
        };
        assert_eq!(path, expected, "the folder of `{name}`");
    }
    let meta = metadata();
    let mut libraries = 0;
    for p in meta["packages"].as_array().unwrap() {
        let package = p["name"].as_str().unwrap();
        for t in p["targets"].as_array().unwrap() {
            let kinds: Vec<&str> =
                t["kind"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
            let lib = t["name"].as_str().unwrap();
            if kinds.iter().any(|k| ["lib", "rlib", "proc-macro"].contains(k)) {
                libraries += 1;
                assert_eq!(
                    lib,
                    package.replace('-', "_"),
                    "the library of `{package}` is not named as its package"
                );
            } else if kinds.contains(&"cdylib") {
                assert_eq!(
                    (package, lib),
                    ("coreb-py", "coreb_rs"),
                    "a Python extension other than coreb-py's"
                );
            }
        }
    }
    assert!(libraries >= 10, "{libraries} Rust libraries in the workspace");
}

/// Library crates never print (issue #49): they tell a `coreb_base::report::Report` what they
/// have to say and the binary renders it. No library crate depends on the terminal's crate
/// (`indicatif`) or on `clap` but behind a feature (coreb-py, a front end like the binary, parses
/// `coreb eval`'s arguments with it), and no library source prints outside its tests and its
/// binaries (`src/main.rs`, `src/bin/`).
#[test]
fn library_crates_report_through_a_sink_and_never_print() {
    let meta = metadata();
    for p in meta["packages"].as_array().unwrap() {
        let package = p["name"].as_str().unwrap();
        if package == "coreb" {
            continue;
        }
        for d in p["dependencies"].as_array().unwrap() {
            let (name, optional) =
                (d["name"].as_str().unwrap(), d["optional"].as_bool().unwrap_or(false));
            let normal = d["kind"].is_null();
            assert!(
                !(normal && name == "indicatif"),
                "`{package}` depends on indicatif: libraries report through coreb_base::report"
            );
            assert!(
                !(normal && name == "clap" && !optional && package != "coreb-py"),
                "`{package}` depends on clap unconditionally"
            );
        }
        let src = std::path::Path::new(p["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .join("src");
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    if rel != "bin" {
                        stack.push(path);
                    }
                    continue;
                }
                if rel == "main.rs" || path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap();
                for (n, line) in code.lines().enumerate() {
                    let printing = ["println!(", "eprintln!(", "print!(", "eprint!("]
                        .iter()
                        .any(|m| line.contains(m));
                    assert!(
                        !printing || line.trim_start().starts_with("//"),
                        "{}:{}: a library prints: {line}",
                        path.display(),
                        n + 1
                    );
                }
            }
        }
    }
}

/// The published release has one home (issue #59): the engine's `release` stage is its key and
/// a call into `coreb::release` (at most 250 lines), no `KIT_` name (the regeneration kit's
/// files) is written anywhere under the engine, and the human-validation pages are the
/// release's (`coreb::release::review`), not a module of coreb-curation.
#[test]
fn the_release_has_one_home() {
    let root = root();
    let stage = std::fs::read_to_string(root.join("pipeline/src/engine/release.rs")).unwrap();
    assert!(
        stage.lines().count() <= 250,
        "pipeline/src/engine/release.rs has {} lines: the release stage is its key and a call into `coreb::release`",
        stage.lines().count()
    );
    let mut stack = vec![root.join("pipeline/src/engine")];
    let mut read = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                read += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                if let Some((n, line)) = text.lines().enumerate().find(|(_, l)| l.contains("KIT_"))
                {
                    panic!(
                        "{}:{}: the engine names the regeneration kit's files (they are `coreb::release::kit`'s): {line}",
                        path.display(),
                        n + 1
                    );
                }
            }
        }
    }
    assert!(read > 10, "read {read} files of the engine");
    let curation = root.join("crates/coreb-curation/src");
    assert!(
        !curation.join("review").exists() && !curation.join("review.rs").exists(),
        "coreb-curation holds a `review` module: the review pages are the release's"
    );
    let lib = std::fs::read_to_string(curation.join("lib.rs")).unwrap();
    assert!(
        !lib.lines().any(|l| l.trim_start().starts_with("pub mod review")
            || l.trim_start().starts_with("mod review")),
        "coreb-curation's lib.rs declares a `review` module"
    );
    assert!(root.join("pipeline/src/release/review/mod.rs").is_file());
}
