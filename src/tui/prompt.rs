//! The one-line prompts: F6 `run-file` (path and shell-style quoted arguments, Tab completes
//! paths from the computer's `list-files`) and `/` search in the output.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use serde_json::json;

use super::app::{App, Intent, Popup, Prompt, PromptKind};

/// A parsed run-file line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFile {
    pub path: String,
    pub args: Vec<String>,
}

/// Splits `programs/dig.lua 3 "deep shaft"` into the path and its arguments.
///
/// # Errors
/// A one-line reason (an unclosed quote, or no path).
pub fn parse_run_file(line: &str) -> Result<RunFile, String> {
    let mut words = shell_words::split(line).map_err(|e| format!("cannot parse: {e}"))?;
    if words.is_empty() {
        return Err("type a path to run, then its arguments".into());
    }
    let path = words.remove(0);
    Ok(RunFile { path, args: words })
}

/// The last word of a prompt line and the directory part of it (`programs/di` → `programs/`).
fn last_word(text: &str) -> (&str, &str) {
    let word = text.rsplit(' ').next().unwrap_or("");
    let word = word.trim_start_matches('"');
    let dir = match word.rfind('/') {
        Some(i) => &word[..=i],
        None => "",
    };
    (word, dir)
}

/// The deadline prompt's text: seconds (`90`, `90s`), minutes (`5m`), or nothing / `none` for
/// no deadline.
///
/// # Errors
/// A hint for the prompt when the text is none of these or out of 1 s ..= 10 min.
pub fn parse_deadline(text: &str) -> Result<Option<std::time::Duration>, String> {
    let t = text.trim().to_ascii_lowercase();
    if t.is_empty() || t == "none" || t == "0" {
        return Ok(None);
    }
    let (num, mult) = if let Some(n) = t.strip_suffix('m') {
        (n, 60)
    } else {
        (t.strip_suffix('s').unwrap_or(&t), 1)
    };
    let secs: u64 = num
        .trim()
        .parse()
        .map_err(|_| "seconds (90), minutes (5m), or empty for none".to_owned())?;
    let secs = secs.saturating_mul(mult);
    if !(1..=600).contains(&secs) {
        return Err("between 1 s and 10 min (600), or empty for none".into());
    }
    Ok(Some(std::time::Duration::from_secs(secs)))
}

/// Opens a prompt.
pub fn open(app: &mut App, kind: PromptKind) {
    let text = match kind {
        // A new `/` starts a new search (the old one is still there with n / N until Enter).
        PromptKind::Search | PromptKind::RunFile => String::new(),
        // Opening the filter again edits the one in force.
        PromptKind::Filter => app.fleet.filter.clone(),
        PromptKind::Deadline => app
            .run_deadline
            .map(|d| format!("{}", d.as_secs()))
            .unwrap_or_default(),
    };
    app.popup = Some(Popup::Prompt(Prompt {
        kind,
        text,
        hint: None,
    }));
}

/// A key while a prompt is open.
pub fn key(app: &mut App, mut p: Prompt, key: KeyEvent) -> Vec<Intent> {
    if p.kind == PromptKind::Filter {
        return app.filter_key(p, key);
    }
    let mut out = Vec::new();
    match key.code {
        KeyCode::Esc => {
            app.popup = None;
            return out;
        }
        KeyCode::Char(c) => {
            p.text.push(c);
            p.hint = None;
        }
        KeyCode::Backspace => {
            p.text.pop();
            p.hint = None;
        }
        KeyCode::Tab if p.kind == PromptKind::RunFile => match app.targets().first() {
            Some(target) => {
                let (_, dir) = last_word(&p.text);
                out.push(Intent::Complete {
                    target: target.clone(),
                    dir: dir.to_owned(),
                });
            }
            None => p.hint = Some("select a computer to complete paths on".into()),
        },
        KeyCode::Enter => return submit(app, p),
        _ => {}
    }
    app.popup = Some(Popup::Prompt(p));
    out
}

fn submit(app: &mut App, mut p: Prompt) -> Vec<Intent> {
    match p.kind {
        PromptKind::Search => {
            app.popup = None;
            let q = p.text.trim().to_owned();
            app.scroll.hit = None;
            if q.is_empty() {
                app.scroll.search = None;
                return Vec::new();
            }
            app.scroll.search = Some(q.clone());
            let found = match app.output.rows(app.selected.as_deref()) {
                Some(rows) => app.scroll.find(rows, true),
                None => false,
            };
            if !found {
                app.notify(format!("no match for {q:?}"), true);
            }
            Vec::new()
        }
        // Handled by `App::filter_key`, which never submits here.
        PromptKind::Filter => {
            app.popup = None;
            Vec::new()
        }
        PromptKind::Deadline => match parse_deadline(&p.text) {
            Ok(d) => {
                app.popup = None;
                app.run_deadline = d;
                let text = match d {
                    Some(d) => format!("your runs (F5, F6) now stop after {} s", d.as_secs()),
                    None => "your runs (F5, F6) have no deadline; cancel one with c in Requests"
                        .to_owned(),
                };
                app.notify(text, false);
                Vec::new()
            }
            Err(e) => {
                p.hint = Some(e);
                app.popup = Some(Popup::Prompt(p));
                Vec::new()
            }
        },
        PromptKind::RunFile => {
            let targets = app.targets();
            if targets.is_empty() {
                p.hint =
                    Some("no computer selected: select one, or mark several with Space".into());
                app.popup = Some(Popup::Prompt(p));
                return Vec::new();
            }
            match parse_run_file(&p.text) {
                Ok(rf) => {
                    app.popup = None;
                    app.run_or_confirm(Intent::Start {
                        targets,
                        kind: "run-file".into(),
                        payload: json!({"path": rf.path, "args": rf.args}),
                        deadline: app.run_deadline,
                    })
                }
                Err(e) => {
                    p.hint = Some(e);
                    app.popup = Some(Popup::Prompt(p));
                    Vec::new()
                }
            }
        }
    }
}

/// Applies a `list-files` answer to the open run-file prompt: a unique match completes, several
/// extend to their common prefix and are listed.
pub fn complete(app: &mut App, dir: &str, entries: &[(String, bool)]) {
    let Some(Popup::Prompt(p)) = app.popup.as_mut() else {
        return;
    };
    if p.kind != PromptKind::RunFile {
        return;
    }
    let (word, word_dir) = last_word(&p.text);
    if word_dir != dir {
        return; // The person typed on; this answer is stale.
    }
    let base = &word[dir.len()..];
    let mut hits: Vec<&(String, bool)> = entries
        .iter()
        .filter(|(n, _)| n.starts_with(base))
        .collect();
    hits.sort();
    let keep = p.text.len() - word.len();
    match hits.as_slice() {
        [] => p.hint = Some(format!("nothing in {:?} starts with {base:?}", dir)),
        [(name, is_dir)] => {
            let tail = if *is_dir { "/" } else { " " };
            p.text = format!("{}{dir}{name}{tail}", &p.text[..keep]);
            p.hint = None;
        }
        many => {
            let mut prefix = many[0].0.clone();
            for (n, _) in many.iter() {
                while !n.starts_with(&prefix) {
                    prefix.pop();
                }
            }
            p.text = format!("{}{dir}{prefix}", &p.text[..keep]);
            let names: Vec<String> = many
                .iter()
                .map(|(n, d)| if *d { format!("{n}/") } else { n.clone() })
                .collect();
            p.hint = Some(names.join("  "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_group_arguments() {
        assert_eq!(
            parse_run_file(r#"programs/dig.lua 3 "deep shaft""#),
            Ok(RunFile {
                path: "programs/dig.lua".into(),
                args: vec!["3".into(), "deep shaft".into()],
            })
        );
        assert!(parse_run_file(r#"x.lua "open"#).is_err());
        assert!(parse_run_file("   ").is_err());
    }

    #[test]
    fn last_word_splits_dir() {
        assert_eq!(last_word("programs/di"), ("programs/di", "programs/"));
        assert_eq!(last_word("x.lua a/b"), ("a/b", "a/"));
        assert_eq!(last_word("st"), ("st", ""));
    }
}
