//! The fenced blocks of README.md and docs/*.md, which of them are shell, and the marker that
//! says why one cannot run here. Read from the files themselves, so a new block is run (or
//! must say why not) the moment it is written.

use std::path::PathBuf;

/// The fence tags of blocks a person types into a shell. An untagged block is one too: a
/// block that is no command (a screen, a diagram) is tagged `text`.
const SHELL_TAGS: [&str; 6] = ["", "sh", "bash", "shell", "console", "zsh"];

/// What a marker may give as its reason, each the start of the reason (which goes on to say
/// what exactly, e.g. "needs the network (an SSH server)"). Everything else runs.
pub const ALLOWED_REASONS: [&str; 7] = [
    "needs a Minecraft world",
    "needs the network",
    "needs a model",
    "needs an interactive terminal",
    // The agent clients' lines, run with the clients installed from npm.
    "run by agent_clients.rs",
    // Installing a system service: a test must not add users or units to the machine.
    "needs root",
    // `cargo test` inside `cargo test`.
    "is the test suite itself",
];

const MARKER_OPEN: &str = "<!-- not run:";
const MARKER_CLOSE: &str = "-->";

/// One fenced block: where it is, its tag, its text and the marker on the line before it.
#[derive(Debug, Clone)]
pub struct Block {
    pub file: String,
    /// The 1-based line of its opening fence.
    pub line: usize,
    pub tag: String,
    pub body: String,
    pub marker: Option<String>,
}

impl Block {
    pub fn is_shell(&self) -> bool {
        SHELL_TAGS.contains(&self.tag.as_str())
    }

    /// Where it is, as an editor opens it.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// The commands, one per logical line as a person pastes them: a line ending in `\` goes
    /// on on the next; blank lines and comment lines are skipped; in a `console` block only
    /// the lines after a `$ ` prompt are commands (the rest is what they print).
    pub fn commands(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut pending = String::new();
        for raw in self.body.lines() {
            let line = raw.trim();
            if pending.is_empty() {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if self.tag == "console" && !line.starts_with("$ ") {
                    continue;
                }
            }
            let line = if pending.is_empty() && self.tag == "console" {
                &line[2..]
            } else {
                line
            };
            match line.strip_suffix('\\') {
                Some(head) => {
                    pending.push_str(head);
                    pending.push(' ');
                }
                None => {
                    pending.push_str(line);
                    out.push(std::mem::take(&mut pending));
                }
            }
        }
        if !pending.is_empty() {
            out.push(pending);
        }
        out
    }
}

/// The marker's reason, when `line` is a marker (`<!-- not run: REASON -->`); a line that
/// starts like a marker but is not one is returned whole, so it is reported, not ignored.
fn marker(line: &str) -> Option<String> {
    let line = line.trim();
    if !line.starts_with("<!--") || !line.contains("not run") {
        return None;
    }
    Some(
        line.strip_prefix(MARKER_OPEN)
            .and_then(|r| r.strip_suffix(MARKER_CLOSE))
            .map_or_else(|| line.to_owned(), |r| r.trim().to_owned()),
    )
}

/// Whether a marker's reason is one of [`ALLOWED_REASONS`].
pub fn allowed(reason: &str) -> bool {
    ALLOWED_REASONS.iter().any(|a| reason.starts_with(a))
}

/// Every fenced block of `text` (the file `file`).
pub fn parse(file: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(tag) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        let mut body = String::new();
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            body.push_str(lines[i]);
            body.push('\n');
            i += 1;
        }
        out.push(Block {
            file: file.to_owned(),
            line: start + 1,
            tag: tag.trim().to_owned(),
            body,
            marker: start.checked_sub(1).and_then(|p| marker(lines[p])),
        });
        i += 1;
    }
    out
}

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents a person reads: README.md, then docs/*.md by name.
pub fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// Every block of every document, in order.
pub fn all_blocks() -> Vec<Block> {
    documents()
        .iter()
        .flat_map(|p| {
            let name = p.strip_prefix(root()).unwrap_or(p).display().to_string();
            parse(&name, &std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// The shell blocks whose marker gives no allowed reason, each as one line saying so.
pub fn bad_markers(blocks: &[Block]) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b.is_shell())
        .filter_map(|b| {
            let reason = b.marker.as_deref()?;
            (!allowed(reason)).then(|| {
                format!(
                    "{}: the marker's reason {reason:?} is not one of {ALLOWED_REASONS:?} \
                     (write `<!-- not run: REASON -->`, or let the block run)",
                    b.place()
                )
            })
        })
        .collect()
}

#[test]
fn shell_blocks_markers_and_commands_are_read_as_a_person_reads_them() {
    let doc = "intro\n\n```sh\ntrapdesk computers   # list\n# a comment\ntrapdesk exec miner \\\n  'return 1'\n```\n\n<!-- not run: needs the network (an SSH server) -->\n```\nssh host\n```\n<!-- not run: too slow -->\n```bash\nsleep 100\n```\n```text\nnot a command\n```\n```console\n$ trapdesk ls miner:/\nstartup.lua\n```\n";
    let blocks = parse("x.md", doc);
    let shell: Vec<_> = blocks.iter().filter(|b| b.is_shell()).collect();
    assert_eq!(shell.len(), 4, "{blocks:?}");
    assert_eq!(shell[0].line, 3);
    assert_eq!(
        shell[0].commands(),
        [
            "trapdesk computers   # list",
            "trapdesk exec miner  'return 1'"
        ]
    );
    assert_eq!(
        shell[1].marker.as_deref(),
        Some("needs the network (an SSH server)")
    );
    assert_eq!(shell[3].commands(), ["trapdesk ls miner:/"]);
    let bad = bad_markers(&blocks);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with("x.md:15: the marker's reason \"too slow\""),
        "{bad:?}"
    );
    // A marker that is not written as one is reported whole, never taken for no marker.
    let odd = parse("y.md", "<!-- not run yet: later -->\n```sh\nfalse\n```\n");
    assert_eq!(bad_markers(&odd).len(), 1);
}

#[test]
fn every_marker_in_the_docs_gives_an_allowed_reason() {
    let bad = bad_markers(&all_blocks());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
