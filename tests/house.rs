//! The house's structural facts (issue 59), read from the source tree:
//!
//! - a stage is named once: every stage has one row in `pipeline/src/engine/stage_name.rs`, a
//!   module of its own under `pipeline/src/engine/` that names it, and a subcommand of its
//!   own made from its row (`coreb <stage> --help` says its row's help); no other file of the
//!   workspace lists stage names (neither as strings nor as `StageName::` variants), so adding
//!   a stage touches its module and its row (and, for a stage that asks models, its prompt;
//!   for a stage with parameters, its `[stages.<name>]` section, which must be a stage's);
//!   none of these tests names the stages itself, so a stage added by its module and its row
//!   passes them unchanged (shown by adding a shardable `annotate` after `queries`: its module,
//!   its `mod` line, its row; `coreb annotate --help` offered `--shard`, the library's and
//!   these tests passed);
//! - no two sibling modules of any crate import each other (no cycle, of any length, among
//!   the `crate::`/`super::` paths of the modules of one parent).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use coreb::engine::stage_name::StageName;

use crate::support::{coreb, root};

/// The build's stages as the stage table's rows name them: (variant, name), in order.
fn rows() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("pipeline/src/engine/stage_name.rs")).unwrap();
    let body = &text[text.find("$then! {").expect("the rows of `stage_rows!`")..];
    let mut rows = Vec::new();
    for line in body.lines().map(str::trim) {
        // `Variant = "name", run …`
        let Some((variant, rest)) = line.split_once(" = \"") else {
            continue;
        };
        if variant.chars().all(|c| c.is_ascii_alphanumeric()) {
            let name = rest.split('"').next().unwrap();
            rows.push((variant.to_owned(), name.to_owned()));
        }
    }
    rows
}

/// Every `.rs` file under `dir` (no `target/`, `vendor/` or hidden folders).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "vendor") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The text of a Rust file without its comments (line comments and doc comments).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_stage_is_its_row_its_module_and_a_subcommand_made_from_its_row() {
    let rows = rows();
    let names: Vec<&str> = rows.iter().map(|(_, n)| n.as_str()).collect();
    // The rows as read here are the stages the binary knows, in order.
    let known: Vec<&str> = StageName::ALL.into_iter().map(StageName::as_str).collect();
    assert_eq!(names, known, "the rows of the stage table");
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "a stage named twice: {names:?}");
    let engine = root().join("pipeline/src/engine");
    for (variant, name) in &rows {
        // Its module names it (`const NAME: StageName = StageName::X`, or a question's NAME).
        let module = std::fs::read_to_string(engine.join(format!("{name}.rs")))
            .unwrap_or_else(|e| panic!("stage `{name}` has no module `engine/{name}.rs`: {e}"));
        assert!(
            module.contains(&format!("NAME: StageName = StageName::{variant};")),
            "`engine/{name}.rs` does not name its stage `StageName::{variant}`"
        );
        // Its subcommand, with the help its row gives.
        let out = coreb().args([name.as_str(), "--help"]).output().unwrap();
        assert!(out.status.success(), "coreb {name} --help");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains(&format!("Usage: coreb {name} [OPTIONS] <MANIFEST>")), "{help}");
        let row_text = std::fs::read_to_string(engine.join("stage_name.rs")).unwrap();
        let row = &row_text[row_text.find(&format!("{variant} = \"{name}\"")).unwrap()..];
        let about = row.split("about \"").nth(1).unwrap().split('"').next().unwrap();
        let first_words: String = about.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
        assert!(
            help.starts_with(&first_words),
            "`coreb {name} --help` does not start with its row's help `{first_words}`:\n{help}"
        );
        // A stage that runs as shard processes takes `--shard`, the others refuse it.
        assert_eq!(
            help.contains("--shard <I/N>"),
            row.split_once(';').unwrap().0.contains("shardable true"),
            "`coreb {name} --help`:\n{help}"
        );
    }
    // Each `[stages.<name>]` section of the manifest is a stage's.
    let manifest = std::fs::read_to_string(root().join("pipeline/src/manifest.rs")).unwrap();
    let body = &manifest[manifest.find("struct StagesFile {").unwrap()..];
    let body = &body[..body.find("\n}").unwrap()];
    let sections: Vec<&str> = body
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("pub(crate) ").or(l.strip_prefix("pub "))?.split_once(':')
        })
        .map(|(field, _)| field)
        .collect();
    assert!(!sections.is_empty(), "no sections in `StagesFile`");
    for section in sections {
        assert!(
            names.contains(&section),
            "`[stages.{section}]` of `StagesFile` is not a stage of the table"
        );
    }
    // The one dispatch arm: the command line knows the stages only through the table.
    let lib = std::fs::read_to_string(root().join("pipeline/src/lib.rs")).unwrap();
    assert_eq!(lib.matches("commands::build::stage(").count(), 1, "{lib}");
}

#[test]
fn no_other_file_lists_the_stages() {
    let rows = rows();
    let names: BTreeSet<&str> = rows.iter().map(|(_, n)| n.as_str()).collect();
    let variants: BTreeSet<&str> = rows.iter().map(|(v, _)| v.as_str()).collect();
    let mut files = Vec::new();
    // The sources (tests, the integration tests' and each file's `#[cfg(test)]` module, state
    // what they expect of the stages in their own words).
    for dir in ["pipeline/src", "stages/src", "crates", "bench"] {
        let dir = root().join(dir);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    let table = root().join("pipeline/src/engine/stage_name.rs");
    let mut lists = Vec::new();
    for file in files.iter().filter(|f| **f != table) {
        let text = std::fs::read_to_string(file).unwrap();
        let code = code_of(text.split("#[cfg(test)]").next().unwrap());
        // A list: a bracketed or braced run of items, of which four or more are stage names
        // (as strings) or `StageName::` variants. Fewer is a stage reading its upstream or a
        // test picking stages, not a second copy of the table.
        for (open, close) in [('[', ']'), ('{', '}'), ('(', ')')] {
            let mut stack: Vec<usize> = Vec::new();
            for (i, c) in code.char_indices() {
                if c == open {
                    stack.push(i);
                } else if c == close
                    && let Some(start) = stack.pop()
                {
                    let inner = &code[start + 1..i];
                    if inner.contains(open) {
                        continue; // only innermost lists
                    }
                    let items: Vec<&str> = inner.split(',').map(str::trim).collect();
                    let named = items
                        .iter()
                        .filter(|item| {
                            let item = item.trim_end_matches(')');
                            names.contains(item.trim_matches('"')) && item.starts_with('"')
                                || item
                                    .strip_prefix("StageName::")
                                    .is_some_and(|v| variants.contains(v))
                        })
                        .count();
                    if named >= 4 {
                        let line = code[..start].lines().count();
                        lists.push(format!(
                            "{}:{line}: {}",
                            file.strip_prefix(root()).unwrap().display(),
                            inner.split_whitespace().collect::<Vec<_>>().join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(
        lists.is_empty(),
        "lists of stage names outside the stage table (`pipeline/src/engine/stage_name.rs`): \
         derive them from `StageName` and its rows instead:\n{}",
        lists.join("\n")
    );
}

/// A crate's modules: module path (`["engine", "stage"]`) → its files.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let mut parts: Vec<String> =
            rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.first().is_some_and(|p| p == "bin") {
            continue; // other crate roots
        }
        let last = parts.pop().unwrap();
        match last.trim_end_matches(".rs") {
            "lib" | "main" | "mod" => {}
            stem => parts.push(stem.to_owned()),
        }
        if parts.is_empty() && last == "main.rs" && src.join("lib.rs").exists() {
            continue; // the binary beside a library: its own crate
        }
        out.insert(parts, file);
    }
    out
}

/// The module paths that `code` (of the file of module `at`) names through `crate::` and
/// `super::`, each as far as its first names go.
fn paths_named(code: &str, at: &[String], is_mod_file: bool) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
    };
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let (mut base, skip): (Vec<String>, usize) = if boundary && rest.starts_with("crate::") {
            (Vec::new(), "crate::".len())
        } else if boundary && rest.starts_with("super::") {
            // `super` of a file `a/b.rs` (module a::b) is `a`; of `a/b/mod.rs` (a::b) too.
            let mut base = at.to_vec();
            let mut skip = 0;
            while code[i + skip..].starts_with("super::") {
                base.pop();
                skip += "super::".len();
            }
            let _ = is_mod_file;
            (base, skip)
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let tail = &code[i + skip..];
        let heads: Vec<Vec<String>> = if let Some(group) = tail.strip_prefix('{') {
            // `crate::{a::b, c}`: the first names of each item of the group.
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|item| item.trim().split("::").map(ident).collect())
                .collect()
        } else {
            let path: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            vec![path.split("::").map(ident).collect()]
        };
        for head in heads {
            let mut full = base.clone();
            full.extend(head.into_iter().filter(|s| !s.is_empty()));
            out.push(full);
        }
        base.clear();
        i += skip;
    }
    out
}

/// The cycles among the sibling modules of each parent of the crate at `src`, as
/// `parent: a -> b -> a`.
fn sibling_cycles(src: &Path) -> Vec<String> {
    let modules = modules(src);
    // Edges between siblings: (parent, from, to).
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (path, file) in &modules {
        let Some((name, parent)) = path.split_last() else {
            continue;
        };
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let is_mod = file.ends_with("mod.rs");
        for named in paths_named(&code, path, is_mod) {
            // Which ancestor's children does it reach? Every level from the crate root down
            // to this module's parent: the module of `path` at that level is the "from".
            for depth in 0..path.len() {
                let level = &path[..depth];
                if named.len() > depth && named[..depth] == *level && named[depth] != path[depth] {
                    let to = &named[depth];
                    let mut target = level.to_vec();
                    target.push(to.clone());
                    if modules.contains_key(&target) {
                        edges
                            .entry(level.to_vec())
                            .or_default()
                            .entry(path[depth].clone())
                            .or_default()
                            .insert(to.clone());
                    }
                }
            }
        }
        let _ = (name, parent);
    }
    let mut cycles = Vec::new();
    for (parent, graph) in &edges {
        // Depth-first search for a back edge, per start node: report each cycle once.
        let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
        for start in graph.keys() {
            let mut stack = vec![(start.clone(), vec![start.clone()])];
            while let Some((node, trail)) = stack.pop() {
                for next in graph.get(&node).into_iter().flatten() {
                    if next == start {
                        let mut cycle = trail.clone();
                        let min = cycle.iter().min().unwrap().clone();
                        let at = cycle.iter().position(|m| *m == min).unwrap();
                        cycle.rotate_left(at);
                        if seen.insert(cycle.clone()) {
                            cycle.push(cycle[0].clone());
                            let parent = match parent.is_empty() {
                                true => "crate".to_owned(),
                                false => parent.join("::"),
                            };
                            cycles.push(format!("{parent}: {}", cycle.join(" -> ")));
                        }
                    } else if !trail.contains(next) && next > start {
                        let mut trail = trail.clone();
                        trail.push(next.clone());
                        stack.push((next.clone(), trail));
                    }
                }
            }
        }
    }
    cycles
}

/// Every crate of the workspace: the `src/` of each package.
fn crate_sources() -> Vec<PathBuf> {
    let mut out = vec![root().join("pipeline/src"), root().join("stages/src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    out.extend(crates);
    out
}

#[test]
fn the_scan_finds_a_cycle_between_sibling_modules() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod cli;\nmod commands;\nmod engine;\n").unwrap();
    std::fs::write(src.join("cli.rs"), "use crate::commands::review::Args;\n").unwrap();
    std::fs::create_dir(src.join("commands")).unwrap();
    std::fs::write(src.join("commands/mod.rs"), "pub mod review;\n").unwrap();
    std::fs::write(
        src.join("commands/review.rs"),
        "use crate::{cli::Cli, engine::Engine};\n// crate::engine in a comment is no import\n",
    )
    .unwrap();
    std::fs::create_dir(src.join("engine")).unwrap();
    std::fs::write(src.join("engine/mod.rs"), "mod a;\nmod b;\npub struct Engine;\n").unwrap();
    std::fs::write(src.join("engine/a.rs"), "use super::b::B;\n").unwrap();
    std::fs::write(src.join("engine/b.rs"), "pub struct B;\nuse super::Engine;\n").unwrap();
    assert_eq!(sibling_cycles(src), ["crate: cli -> commands -> cli"]);
    std::fs::write(src.join("engine/b.rs"), "use super::a::A;\n").unwrap();
    let cycles = sibling_cycles(src);
    assert!(cycles.contains(&"engine: a -> b -> a".to_owned()), "{cycles:?}");
}

#[test]
fn no_two_sibling_modules_of_a_crate_import_each_other() {
    let mut cycles = Vec::new();
    for src in crate_sources() {
        for cycle in sibling_cycles(&src) {
            cycles.push(format!(
                "{}: {cycle}",
                src.parent().unwrap().strip_prefix(root()).unwrap().display()
            ));
        }
    }
    assert!(
        cycles.is_empty(),
        "sibling modules that import each other (move what both need to one of them or to \
         their parent):\n{}",
        cycles.join("\n")
    );
}
