//! Which local files belong to a sync: a walk that honours `.gitignore` and `--ignore`, the
//! relative `/`-separated names they get on the computer, and their content hashes. No name
//! that could leave the sync folder is ever produced or accepted.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use sha2::{Digest, Sha256};

/// The local side of a sync.
pub struct Tree {
    /// The folder, canonical.
    pub root: PathBuf,
    ignore: GlobSet,
    gitignore: ignore::gitignore::Gitignore,
}

/// A file's content hash.
pub type Hash = [u8; 32];

pub fn hash(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

impl Tree {
    /// # Errors
    /// When the folder does not exist or a glob is malformed.
    pub fn new(root: &Path, ignores: &[String]) -> Result<Tree, String> {
        let root = root
            .canonicalize()
            .map_err(|e| format!("cannot use {}: {e}", root.display()))?;
        if !root.is_dir() {
            return Err(format!("{} is not a folder", root.display()));
        }
        let mut set = GlobSetBuilder::new();
        for g in ignores {
            let glob = Glob::new(g).map_err(|e| format!("--ignore {g:?}: {e}"))?;
            set.add(glob);
            // `build` also ignores everything under a matching directory.
            if let Ok(under) = Glob::new(&format!("{}/**", g.trim_end_matches('/'))) {
                set.add(under);
            }
        }
        let ignore = set.build().map_err(|e| format!("--ignore: {e}"))?;
        let (gitignore, _) = ignore::gitignore::Gitignore::new(root.join(".gitignore"));
        Ok(Tree {
            root,
            ignore,
            gitignore,
        })
    }

    /// Whether a relative name is left out (`.git`, `.gitignore` files themselves and what
    /// they name, `--ignore` globs).
    pub fn ignored(&self, rel: &str, is_dir: bool) -> bool {
        if rel == ".git" || rel.starts_with(".git/") {
            return true;
        }
        // A `.gitignore` says what to leave out of the project; it is no program for the
        // computer.
        if rel == ".gitignore" || rel.ends_with("/.gitignore") {
            return true;
        }
        if self.ignore.is_match(rel) {
            return true;
        }
        self.gitignore
            .matched_path_or_any_parents(rel, is_dir)
            .is_ignore()
    }

    /// The relative name of a path under the root, or `None` when it is outside, ignored or
    /// not a plain name.
    pub fn rel(&self, path: &Path) -> Option<String> {
        let rest = path.strip_prefix(&self.root).ok()?;
        let rel = rel_name(rest)?;
        let is_dir = path.is_dir();
        (!self.ignored(&rel, is_dir)).then_some(rel)
    }

    /// Every file to sync with its content hash, by relative name.
    pub fn files(&self) -> BTreeMap<String, Hash> {
        let mut out = BTreeMap::new();
        let walk = ignore::WalkBuilder::new(&self.root)
            .hidden(false)
            .git_ignore(true)
            .require_git(false)
            .follow_links(false)
            .build();
        for entry in walk.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(rel) = self.rel(entry.path()) else {
                continue;
            };
            if let Ok(bytes) = std::fs::read(entry.path()) {
                out.insert(rel, hash(&bytes));
            }
        }
        out
    }

    /// The local path of a relative name, when the name stays inside the root.
    pub fn local(&self, rel: &str) -> Option<PathBuf> {
        let p = Path::new(rel);
        let plain = p.components().all(|c| matches!(c, Component::Normal(_)));
        (plain && !rel.is_empty()).then(|| self.root.join(p))
    }
}

/// `a/b.lua` from a relative path made only of plain components.
fn rel_name(p: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?.to_owned()),
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_never_leave_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "secret.txt\nbuild/\n").unwrap();
        let t = Tree::new(dir.path(), &["*.bak".into()]).unwrap();
        assert!(t.local("../x").is_none());
        assert!(t.local("/etc/passwd").is_none());
        assert!(t.local("a/../../x").is_none());
        assert!(t.local("a/b.lua").is_some());
        assert!(t.rel(&t.root.join("..").join("x")).is_none());
        assert!(t.ignored("secret.txt", false));
        assert!(t.ignored("build/out.lua", false));
        assert!(t.ignored("old.bak", false));
        assert!(t.ignored(".git/config", false));
        assert!(
            t.ignored(".gitignore", false),
            "the .gitignore itself stays home"
        );
        assert!(t.ignored("lib/.gitignore", false));
        assert!(!t.ignored("main.lua", false));
    }
}
