//! The limits themselves. Each failure names the file and line, so the message says where
//! the second idea grew.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{known, scan};

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 80;
/// An inherent `impl` in a type's own file and at most one other (its tests, or one concept
/// split off); a type spread wider is a partial class whose invariants nobody can see whole.
const MAX_IMPL_FILES: usize = 2;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `src/` of the workspace: the root crate's and each of `crates/*`.
fn source_dirs() -> Vec<(String, PathBuf)> {
    let mut dirs = vec![("trapdesk".to_owned(), root().join("src"))];
    if let Ok(entries) = std::fs::read_dir(root().join("crates")) {
        for entry in entries.flatten() {
            let src = entry.path().join("src");
            if src.is_dir() {
                dirs.push((entry.file_name().to_string_lossy().into_owned(), src));
            }
        }
    }
    dirs.sort();
    dirs
}

fn files_with(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            // Build output and tools' hidden folders (.git, a pytest cache with its own
            // README.md) are no part of the tree.
            let skipped = name
                .to_str()
                .is_none_or(|n| n == "target" || n == "node_modules" || n.starts_with('.'));
            if !skipped {
                files_with(&path, ext, out);
            }
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// Each Rust source file of the workspace's crates, with its crate's name and its text.
fn sources() -> Vec<(String, PathBuf, String)> {
    let mut all = Vec::new();
    for (krate, dir) in source_dirs() {
        let mut files = Vec::new();
        files_with(&dir, "rs", &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            all.push((krate.clone(), file, text));
        }
    }
    assert!(all.len() > 100, "found only {} source files", all.len());
    all
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Splits `found` (each a violation's key and its description) into the new violations, those
/// whose key `known` does not list, and the stale entries of `known`, those nothing violates
/// any more; fails when either is not empty, so `known.rs` only shrinks.
fn judge(what: &str, found: Vec<(String, String)>, known: &[&str]) {
    let keys: BTreeSet<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
    let new: Vec<&str> = found
        .iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(_, d)| d.as_str())
        .collect();
    let stale: Vec<&str> = known
        .iter()
        .copied()
        .filter(|k| !keys.contains(k))
        .collect();
    assert!(new.is_empty(), "{what}:\n{}", new.join("\n"));
    assert!(
        stale.is_empty(),
        "listed in tests/integration/house/known.rs but within the limit now: remove them:\n{}",
        stale.join("\n")
    );
}

#[test]
fn no_source_file_is_over_500_lines() {
    let long: Vec<(String, String)> = sources()
        .iter()
        .filter(|(_, _, text)| text.lines().count() > MAX_FILE_LINES)
        .map(|(_, path, text)| {
            let at = shown(path);
            let d = format!("{at} ({} lines)", text.lines().count());
            (at, d)
        })
        .collect();
    let known: Vec<&str> = known::LONG_FILES.iter().map(|(f, _)| *f).collect();
    judge(
        &format!("files over {MAX_FILE_LINES} lines: split them by concept"),
        long,
        &known,
    );
}

#[test]
fn no_function_is_over_80_lines() {
    let mut long = Vec::new();
    for (_, path, text) in sources() {
        for f in scan::functions(&scan::code_lines(&text)) {
            if f.lines > MAX_FN_LINES {
                let at = shown(&path);
                let d = format!("{at}:{} {} ({} lines)", f.line, f.name, f.lines);
                long.push((format!("{at} {}", f.name), d));
            }
        }
    }
    let known: Vec<String> = known::LONG_FNS
        .iter()
        .map(|(file, name, _)| format!("{file} {name}"))
        .collect();
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    judge(
        &format!("functions over {MAX_FN_LINES} lines: one function per thing it does"),
        long,
        &known,
    );
}

#[test]
fn no_type_has_its_inherent_impl_in_more_than_two_files() {
    let mut files_of: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (krate, path, text) in sources() {
        for line in scan::code_lines(&text) {
            if let Some(ty) = scan::inherent_impl(&line) {
                files_of
                    .entry((krate.clone(), ty))
                    .or_default()
                    .insert(shown(&path));
            }
        }
    }
    let spread: Vec<(String, String)> = files_of
        .iter()
        .filter(|(_, files)| files.len() > MAX_IMPL_FILES)
        .map(|((krate, ty), files)| {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            let key = format!("{krate}::{ty}");
            let d = format!("{key}: {}", files.join(", "));
            (key, d)
        })
        .collect();
    let known: Vec<&str> = known::SPREAD_TYPES.iter().map(|(t, _)| *t).collect();
    judge(
        &format!("types whose inherent impl is spread over more than {MAX_IMPL_FILES} files"),
        spread,
        &known,
    );
}

#[test]
fn the_markdown_stays_within_its_budget() {
    let mut files = Vec::new();
    files_with(&root(), "md", &mut files);
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let total: u64 = files.iter().map(|p| size(p)).sum();
    for name in ["BENCHMARKS.md", "CHANGELOG.md"] {
        let bytes = size(&root().join(name));
        assert!(bytes > 0, "{name} is missing");
        assert!(
            bytes <= 40_000,
            "{name} is {bytes} bytes, over 40,000: the current figures only, history in git"
        );
    }
    assert!(
        total <= 350_000,
        "all Markdown is {total} bytes, over 350,000: a page says each thing once"
    );
}
