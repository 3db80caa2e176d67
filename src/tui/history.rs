//! Sent chunks and the unsent draft, kept in `history.json` in the data directory so that
//! nothing typed is lost across restarts.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Most chunks kept.
const MAX_ENTRIES: usize = 500;

/// What is on disk.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// Sent chunks, oldest first.
    #[serde(default)]
    pub entries: Vec<String>,
    /// The editor's text at exit.
    #[serde(default)]
    pub draft: String,
}

/// History with a browsing position.
#[derive(Debug, Default)]
pub struct History {
    pub entries: Vec<String>,
    /// Index into `entries` while browsing with Ctrl-Up/Down.
    pos: Option<usize>,
    /// The text being edited when browsing began, given back past the newest entry.
    parked: Option<String>,
    path: Option<PathBuf>,
}

impl History {
    /// Loads `dir/history.json` (missing or unreadable is empty) and returns it with the draft.
    pub fn load(dir: Option<&Path>) -> (History, String) {
        let path = dir.map(|d| d.join("history.json"));
        let stored: Stored = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        (
            History {
                entries: stored.entries,
                pos: None,
                parked: None,
                path,
            },
            stored.draft,
        )
    }

    /// Writes the history and the draft.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn save(&self, draft: &str) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let stored = Stored {
            entries: self.entries.clone(),
            draft: draft.to_owned(),
        };
        let text = serde_json::to_string_pretty(&stored).map_err(std::io::Error::other)?;
        let tmp = path.with_extension("json.tmp");
        trapdesk_core::config::write_private(&tmp, text.as_bytes())?;
        std::fs::rename(&tmp, path)
    }

    /// Records a sent chunk (not twice in a row) and ends browsing.
    pub fn push(&mut self, chunk: &str) {
        self.pos = None;
        self.parked = None;
        if chunk.trim().is_empty() || self.entries.last().is_some_and(|l| l == chunk) {
            return;
        }
        self.entries.push(chunk.to_owned());
        if self.entries.len() > MAX_ENTRIES {
            self.entries.remove(0);
        }
    }

    /// One step older; `current` is the editor's text. `None` when there is nothing older.
    pub fn older(&mut self, current: &str) -> Option<String> {
        let next = match self.pos {
            None => self.entries.len().checked_sub(1)?,
            Some(0) => return None,
            Some(p) => p - 1,
        };
        if self.pos.is_none() {
            self.parked = Some(current.to_owned());
        }
        self.pos = Some(next);
        self.entries.get(next).cloned()
    }

    /// One step newer; past the newest gives back the parked text.
    pub fn newer(&mut self) -> Option<String> {
        let p = self.pos?;
        if p + 1 < self.entries.len() {
            self.pos = Some(p + 1);
            self.entries.get(p + 1).cloned()
        } else {
            self.pos = None;
            Some(self.parked.take().unwrap_or_default())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browse_and_come_back_to_the_draft() {
        let mut h = History::default();
        h.push("a");
        h.push("b");
        h.push("b");
        assert_eq!(h.entries, vec!["a", "b"]);
        assert_eq!(h.older("draft").as_deref(), Some("b"));
        assert_eq!(h.older("b").as_deref(), Some("a"));
        assert_eq!(h.older("a"), None);
        assert_eq!(h.newer().as_deref(), Some("b"));
        assert_eq!(h.newer().as_deref(), Some("draft"));
        assert_eq!(h.newer(), None);
    }

    #[test]
    fn saved_and_loaded() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let (mut h, draft) = History::load(Some(dir.path()));
        assert_eq!(draft, "");
        h.push("print(1)");
        h.save("unsent")?;
        let (h2, draft) = History::load(Some(dir.path()));
        assert_eq!(h2.entries, vec!["print(1)"]);
        assert_eq!(draft, "unsent");
        Ok(())
    }
}
