//! The one-line prompts: F6 `run-file` (path and shell-style quoted arguments, Tab completes
//! paths from the computer's `list-files`), `/` search in the output, `t` the deadline of the
//! person's runs, and the Computers pane's filter line (drawn on that pane's border). A prompt
//! edits its own text; what its text means is handed to the app as [`Submitted`].

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use crate::tui::component::{
    Component, Cx, DrawCx, Intent, Outcome, PromptKind, RunFile, Submitted,
};
use crate::tui::draw::{centred, cut, popup_frame, width};
use crate::tui::keymap::{Action, Scope, key_for};

/// A one-line prompt over the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
    /// Completion candidates or a parse error, shown under the prompt.
    pub hint: Option<String>,
    /// Where the cursor is, as characters after it (0: at the end, where text set from
    /// outside, a completion, leaves it).
    pub back: usize,
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

impl Prompt {
    pub fn new(kind: PromptKind, text: &str) -> Prompt {
        Prompt {
            kind,
            text: text.to_owned(),
            hint: None,
            back: 0,
        }
    }

    /// The cursor as a byte offset into the text.
    fn cursor(&self) -> usize {
        let n = self.text.chars().count();
        let at = n.saturating_sub(self.back);
        self.text
            .char_indices()
            .nth(at)
            .map_or(self.text.len(), |(i, _)| i)
    }

    /// The line editing keys a shell's prompt has (readline's): move, erase a character, the
    /// word before the cursor (Ctrl-W), the line up to the cursor (Ctrl-U).
    fn edit(&mut self, action: Action) -> bool {
        let at = self.cursor();
        let n = self.text.chars().count();
        match action {
            Action::Left => self.back = (self.back + 1).min(n),
            Action::Right => self.back = self.back.saturating_sub(1),
            Action::Top => self.back = n,
            Action::Bottom => self.back = 0,
            Action::Erase => {
                if let Some((i, _)) = self.text[..at].char_indices().next_back() {
                    self.text.replace_range(i..at, "");
                }
            }
            Action::EraseWord => {
                // Blanks before the cursor, then the word before them: what Ctrl-W does.
                let head = self.text[..at].trim_end_matches(' ');
                let start = head.rfind(' ').map_or(0, |i| i + 1);
                self.text.replace_range(start..at, "");
            }
            Action::EraseLine => self.text.replace_range(..at, ""),
            _ => return false,
        }
        self.hint = None;
        true
    }

    /// Enter: what the text means, or (with the reason as the hint) nothing yet.
    fn submit(&mut self, cx: Cx) -> Outcome {
        let meant = match self.kind {
            PromptKind::Search => Ok(Submitted::Search(self.text.trim().to_owned())),
            PromptKind::Filter => Ok(Submitted::FilterKept),
            PromptKind::Deadline => parse_deadline(&self.text).map(Submitted::Deadline),
            PromptKind::RunFile if cx.targets.is_empty() => Err(format!(
                "no computer selected: select one, or mark several with {}",
                key_for(Scope::Computers, Action::Mark)
            )),
            PromptKind::RunFile => parse_run_file(&self.text).map(Submitted::RunFile),
        };
        match meant {
            Ok(s) => Outcome::Submit(s),
            Err(e) => {
                self.hint = Some(e);
                Outcome::Done
            }
        }
    }

    /// Tab in the run-file prompt: list the directory of the last word on the first target.
    fn complete_request(&mut self, cx: Cx) -> Outcome {
        if self.kind != PromptKind::RunFile {
            return Outcome::Done;
        }
        match cx.targets.first() {
            Some(target) => {
                let (_, dir) = last_word(&self.text);
                Outcome::Intents(vec![Intent::Complete {
                    target: target.clone(),
                    dir: dir.to_owned(),
                }])
            }
            None => {
                self.hint = Some("select a computer to complete paths on".into());
                Outcome::Done
            }
        }
    }

    /// The filter line: typing filters at once, Enter keeps the filter, Esc clears it.
    fn filter_act(&mut self, action: Action) -> Outcome {
        match action {
            Action::ClearFilter => Outcome::Submit(Submitted::FilterCleared),
            Action::Submit => Outcome::Submit(Submitted::FilterKept),
            Action::Erase => {
                self.text.pop();
                Outcome::Submit(Submitted::FilterTyped(self.text.clone()))
            }
            _ => Outcome::Done,
        }
    }

    /// Applies a `list-files` answer to the open run-file prompt: a unique match completes, several
    /// extend to their common prefix and are listed.
    pub fn complete(&mut self, dir: &str, entries: &[(String, bool)]) {
        let p = self;
        if p.kind != PromptKind::RunFile {
            return;
        }
        let (word, word_dir) = last_word(&p.text);
        if word_dir != dir {
            return; // The person typed on; this answer is stale.
        }
        p.back = 0;
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

    fn draw_box(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> (u16, u16) {
        let p = self;
        let t = cx.theme;
        let key = |a| key_for(Scope::Prompt, a);
        let (enter, esc) = (key(Action::Submit), key(Action::Close));
        let search = key_for(Scope::Output, Action::Search);
        let (title, label) = match p.kind {
            PromptKind::RunFile => (
                format!(
                    " Run file ({enter} runs, {} completes, {esc}) ",
                    key(Action::Complete)
                ),
                "run ".to_owned(),
            ),
            PromptKind::Search => (format!(" Search output ({enter}, {esc}) "), search),
            // Never drawn as a box (the filter line is the Computers pane's border); named
            // so that the match stays whole.
            PromptKind::Filter => (
                format!(
                    " Filter computers ({}, {}) ",
                    key_for(Scope::Filter, Action::Submit),
                    key_for(Scope::Filter, Action::ClearFilter)
                ),
                key_for(Scope::Computers, Action::Filter),
            ),
            PromptKind::Deadline => (
                format!(" Deadline for your runs ({enter}, {esc}) "),
                "seconds: ".to_owned(),
            ),
        };
        let label = label.as_str();
        let r = centred(area, area.width.saturating_sub(10).min(90), 4);
        Clear.render(r, buf);
        let inner_w = r.width.saturating_sub(2) as usize;
        let shown = cut_left(&p.text, inner_w.saturating_sub(label.len() + 1));
        let hint = p.hint.clone().unwrap_or_else(|| match p.kind {
            PromptKind::RunFile => "e.g. programs/dig.lua 3 \"deep shaft\"".into(),
            PromptKind::Search => format!(
                "case-insensitive; {} / {} for more",
                key_for(Scope::Output, Action::FindNext),
                key_for(Scope::Output, Action::FindPrev)
            ),
            PromptKind::Filter => "* any run, ? one character".into(),
            PromptKind::Deadline => format!(
                "empty: none (cancel with {}); 90, 90s or 5m: stop after that",
                key_for(Scope::Requests, Action::Cancel)
            ),
        });
        let lines = vec![
            Line::from(vec![Span::styled(label, t.key), Span::raw(shown.clone())]),
            Line::from(Span::styled(cut(&hint, inner_w), t.dim)),
        ];
        Paragraph::new(lines)
            .block(popup_frame(t, &title))
            .render(r, buf);
        let after: String = shown
            .chars()
            .skip(shown.chars().count().saturating_sub(p.back))
            .collect();
        let x = label.len() + width(&shown) - width(&after);
        (r.x + 1 + x as u16, r.y + 1)
    }

    /// The filter line is the Computers pane's bottom border, drawn with the pane; only the
    /// cursor is placed here: after the last character typed, before the closing space.
    fn filter_cursor(&self, area: Rect) -> Option<(u16, u16)> {
        let r = crate::tui::layout::areas(area)?.computers;
        let text = filter_text(&self.text, r.width.saturating_sub(2) as usize);
        let x = r.x + width(&text) as u16;
        Some((x, r.y + r.height - 1))
    }
}

impl Component for Prompt {
    fn scope(&self) -> Scope {
        if self.kind == PromptKind::Filter {
            Scope::Filter
        } else {
            Scope::Prompt
        }
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        if self.kind == PromptKind::Filter {
            return self.filter_act(action);
        }
        match action {
            Action::Close => Outcome::Close,
            Action::Submit => self.submit(cx),
            Action::Complete => self.complete_request(cx),
            a if self.edit(a) => Outcome::Done,
            _ => Outcome::Ignored,
        }
    }

    /// Characters typed at the cursor. A Ctrl key that is not a row of the table is no
    /// character: typing its letter would put text the person never meant in the line.
    fn input(&mut self, key: KeyEvent, _cx: Cx) -> Outcome {
        let KeyCode::Char(c) = key.code else {
            return Outcome::Done;
        };
        if key.modifiers.contains(KeyModifiers::CONTROL) {
            return Outcome::Done;
        }
        if self.kind == PromptKind::Filter {
            self.text.push(c);
            return Outcome::Submit(Submitted::FilterTyped(self.text.clone()));
        }
        let at = self.cursor();
        self.text.insert(at, c);
        self.hint = None;
        Outcome::Done
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        if self.kind == PromptKind::Filter {
            return self.filter_cursor(area);
        }
        Some(self.draw_box(area, buf, cx))
    }
}

/// The filter as shown on the Computers pane's bottom border (` /miner* `), cut to `room`
/// columns from the left so that the end being typed stays visible.
pub fn filter_text(filter: &str, room: usize) -> String {
    let text = crate::tui::output::printable(filter);
    let n = text.chars().count();
    let keep = room.saturating_sub(4);
    if width(&text) <= keep {
        return format!(" /{text} ");
    }
    let tail: String = text
        .chars()
        .skip(n.saturating_sub(keep.saturating_sub(1)))
        .collect();
    format!(" /…{tail} ")
}

/// The last `max` chars of `s`, so the end of a long prompt line stays visible.
fn cut_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    s.chars().skip(n.saturating_sub(max)).collect()
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
