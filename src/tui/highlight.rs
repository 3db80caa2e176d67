//! Lua syntax colours for the editor, from syntect's default syntaxes and theme.
//!
//! Highlighting a line needs the parser state after the line before it, so the cache keeps,
//! per line, its text, its spans and the state after it. An edit invalidates from the first
//! changed line on; drawing highlights only up to the last visible line.

use std::cell::RefCell;

use ratatui::style::{Color, Style};
use ratatui::text::Span;
use syntect::highlighting::{HighlightState, Highlighter, RangedHighlightIterator, ThemeSet};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

struct Cached {
    text: String,
    spans: Vec<(Style, String)>,
    parse: ParseState,
    highlight: HighlightState,
}

/// Syntax set, theme and the per-line cache.
pub struct Highlight {
    syntaxes: SyntaxSet,
    theme: syntect::highlighting::Theme,
    cache: RefCell<Vec<Cached>>,
}

impl std::fmt::Debug for Highlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Highlight")
    }
}

impl Highlight {
    /// Loads syntect's defaults (a few milliseconds; done once).
    pub fn new() -> Self {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .unwrap_or_default();
        Highlight {
            syntaxes,
            theme,
            cache: RefCell::new(Vec::new()),
        }
    }

    /// Styled spans of lines `from..upto` (at most `lines.len()`), from the cache where it
    /// still matches the text. Only those are made into spans: the lines above are highlighted
    /// once into the cache (each needs the state after the one before), never copied again,
    /// so a frame of a long text costs what it shows.
    pub fn lines(&self, lines: &[String], from: usize, upto: usize) -> Vec<Vec<Span<'static>>> {
        let Some(syntax) = self.syntaxes.find_syntax_by_extension("lua") else {
            return lines
                .iter()
                .take(upto)
                .skip(from)
                .map(|l| vec![Span::raw(l.clone())])
                .collect();
        };
        let highlighter = Highlighter::new(&self.theme);
        let mut cache = self.cache.borrow_mut();
        let valid = cache
            .iter()
            .zip(lines)
            .take_while(|(c, l)| &c.text == *l)
            .count();
        cache.truncate(valid);
        let upto = upto.min(lines.len());
        while cache.len() < upto {
            let (mut parse, mut hl) = match cache.last() {
                Some(c) => (c.parse.clone(), c.highlight.clone()),
                None => (
                    ParseState::new(syntax),
                    HighlightState::new(&highlighter, ScopeStack::new()),
                ),
            };
            let text = lines.get(cache.len()).cloned().unwrap_or_default();
            let with_nl = format!("{text}\n");
            let ops = parse
                .parse_line(&with_nl, &self.syntaxes)
                .unwrap_or_default();
            let spans = RangedHighlightIterator::new(&mut hl, &ops, &with_nl, &highlighter)
                .filter_map(|(style, piece, _)| {
                    let piece = piece.trim_end_matches('\n');
                    (!piece.is_empty()).then(|| {
                        let c = style.foreground;
                        (
                            Style::default().fg(Color::Rgb(c.r, c.g, c.b)),
                            piece.to_owned(),
                        )
                    })
                })
                .collect();
            cache.push(Cached {
                text,
                spans,
                parse,
                highlight: hl,
            });
        }
        cache
            .iter()
            .take(upto)
            .skip(from)
            .map(|c| {
                c.spans
                    .iter()
                    .map(|(s, t)| Span::styled(t.clone(), *s))
                    .collect()
            })
            .collect()
    }
}

impl Default for Highlight {
    fn default() -> Self {
        Highlight::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_get_colour_and_cache_follows_edits() {
        let h = Highlight::new();
        let a = vec!["local x = 1".to_owned(), "print(x)".to_owned()];
        let out = h.lines(&a, 0, 2);
        assert_eq!(out.len(), 2);
        let text: String = out[0].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "local x = 1");
        assert!(out[0].len() > 1, "several styled pieces");
        let b = vec!["local y = 2".to_owned(), "print(x)".to_owned()];
        let text: String = h.lines(&b, 0, 1)[0]
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(text, "local y = 2");
    }
}
