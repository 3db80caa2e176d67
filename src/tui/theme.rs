//! Colours from `assets/theme.toml`, embedded at build time, with `NO_COLOR` respected.
//!
//! Every style the views use comes from here, so a theme file (or `NO_COLOR`) changes the whole
//! console at once. Without colour, meaning is carried by bold, reverse and the marks.

use std::collections::HashMap;
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

use trapdesk_core::session::Status;

const DEFAULT_THEME: &str = include_str!("../../assets/theme.toml");

#[derive(Deserialize)]
struct ThemeFile {
    colors: HashMap<String, String>,
}

/// Resolved styles of every element.
#[derive(Debug, Clone)]
pub struct Theme {
    /// False under `NO_COLOR`: views then also skip syntax colours.
    pub color: bool,
    pub border: Style,
    pub border_focus: Style,
    pub title: Style,
    pub text: Style,
    pub dim: Style,
    pub accent: Style,
    pub ok: Style,
    pub error: Style,
    pub warn: Style,
    pub person: Style,
    pub agent: Style,
    pub selection: Style,
    pub marked: Style,
    pub line_number: Style,
    pub status: Style,
    pub key: Style,
}

impl Theme {
    /// The embedded theme, or a colourless one when the `NO_COLOR` variable is set to any non-empty value.
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if no_color {
            Theme::plain()
        } else {
            Theme::parse(DEFAULT_THEME)
        }
    }

    /// A theme from TOML text; unknown or bad colour names fall back to the terminal default.
    pub fn parse(text: &str) -> Theme {
        let colors = toml::from_str::<ThemeFile>(text)
            .map(|f| f.colors)
            .unwrap_or_default();
        let c = |name: &str| {
            colors
                .get(name)
                .and_then(|v| Color::from_str(v).ok())
                .unwrap_or(Color::Reset)
        };
        let fg = |name: &str| Style::default().fg(c(name));
        Theme {
            color: true,
            border: fg("border"),
            border_focus: fg("border_focus").add_modifier(Modifier::BOLD),
            title: fg("title").add_modifier(Modifier::BOLD),
            text: fg("text"),
            dim: fg("dim"),
            accent: fg("accent"),
            ok: fg("ok"),
            error: fg("error"),
            warn: fg("warn"),
            person: fg("person"),
            agent: fg("agent"),
            selection: Style::default()
                .bg(c("selection_bg"))
                .add_modifier(Modifier::BOLD),
            marked: fg("marked").add_modifier(Modifier::BOLD),
            line_number: fg("line_number"),
            status: Style::default().fg(c("status_fg")).bg(c("status_bg")),
            key: fg("key").add_modifier(Modifier::BOLD),
        }
    }

    /// No colours at all: emphasis only through modifiers.
    pub fn plain() -> Theme {
        let s = Style::default();
        Theme {
            color: false,
            border: s,
            border_focus: s.add_modifier(Modifier::BOLD),
            title: s.add_modifier(Modifier::BOLD),
            text: s,
            dim: s,
            accent: s,
            ok: s,
            error: s.add_modifier(Modifier::BOLD),
            warn: s,
            person: s,
            agent: s,
            selection: s.add_modifier(Modifier::REVERSED),
            marked: s.add_modifier(Modifier::BOLD),
            line_number: s,
            status: s.add_modifier(Modifier::REVERSED),
            key: s.add_modifier(Modifier::BOLD),
        }
    }

    /// The style of a request outcome.
    pub fn status(&self, status: Status) -> Style {
        match status {
            Status::Running => self.accent,
            Status::Ok => self.ok,
            Status::Error | Status::Failed => self.error,
            Status::Timeout | Status::Cancelled | Status::Disconnected => self.warn,
        }
    }
}

impl Default for Theme {
    fn default() -> Self {
        Theme::parse(DEFAULT_THEME)
    }
}
