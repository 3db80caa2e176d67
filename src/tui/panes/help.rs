//! The help popup (`?` / F1): every key of the table, how to link a computer and where the
//! endpoints are. On a short terminal it scrolls; it keeps its place between openings, so the
//! app keeps it (in [`Popups`](crate::tui::app::Popups)) while it is closed.
//!
//! The scrolling and closing it shares with the tool call details are here too.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::MouseEventKind;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{centred, popup_frame, zone};
use crate::tui::keymap::{self, Action, Scope, key_for};
use crate::tui::theme::Theme;
use trapdesk_core::config::Settings;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Help {
    /// First line on screen.
    pub scroll: u16,
}

/// Where the help goes: all of it when the screen is tall enough, else as much as fits (it
/// scrolls).
fn rect(area: Rect) -> Rect {
    centred(area, 92, keymap::help().len() as u16 + 5)
}

/// The help's text: the keys, then how to link a computer and where the endpoints are.
fn lines(t: &Theme, settings: &Settings, utc_offset: i32) -> Vec<Line<'static>> {
    keymap::help()
        .into_iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:>18}  "), t.key),
                Span::raw(what),
            ])
        })
        .chain([
            Line::from(vec![
                Span::styled("link a computer: ", t.dim),
                Span::styled(
                    trapdesk_core::config::install_line(settings.gateway_bind, &settings.secret),
                    t.accent,
                ),
            ]),
            Line::from(Span::styled(
                format!(
                    "gateway ws://{}/gateway · MCP http://{}/mcp",
                    settings.gateway_bind, settings.mcp_bind
                ),
                t.dim,
            )),
            Line::from(Span::styled(
                format!(
                    "times are {} · {} closes",
                    zone(utc_offset),
                    key_for(Scope::Scroll, Action::Close)
                ),
                t.dim,
            )),
        ])
        .collect()
}

impl Help {
    fn max(&self, cx: &Cx) -> u16 {
        let r = rect(cx.size);
        max_scroll(
            &lines(cx.theme, cx.settings, cx.utc_offset),
            r.width.saturating_sub(2),
            r.height.saturating_sub(2),
        )
    }
}

impl Component for Help {
    fn scope(&self) -> Scope {
        Scope::Scroll
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let max = self.max(&cx);
        scroll_act(&mut self.scroll, action, cx.size, max)
    }

    fn mouse(&mut self, kind: MouseEventKind, cx: Cx) -> Outcome {
        let max = self.max(&cx);
        scroll_mouse(&mut self.scroll, kind, max)
    }

    /// Every key; on a short terminal it scrolls, and the title says so and where it is.
    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        scrolled(
            cx.theme,
            lines(cx.theme, cx.settings, cx.utc_offset),
            rect(area),
            self.scroll,
            " Keys ".to_owned(),
            |top, max| format!(" Keys ({top}/{max} {} scroll) ", scroll_keys()),
            buf,
        );
        None
    }
}

/// How far text of `lines` wrapped at `width` can scroll in `height` rows (an estimate by
/// characters, which is exact for the ASCII of pretty-printed JSON).
pub(crate) fn max_scroll(lines: &[Line], width: u16, height: u16) -> u16 {
    let w = usize::from(width.max(1));
    let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum();
    u16::try_from(rows.saturating_sub(usize::from(height))).unwrap_or(u16::MAX)
}

/// The keys a scrolling popup's title names: `↑↓ PgUp PgDn`.
pub(crate) fn scroll_keys() -> String {
    let key = |a| key_for(Scope::Scroll, a);
    format!(
        "{}{} {} {}",
        key(Action::Up),
        key(Action::Down),
        key(Action::PageUp),
        key(Action::PageDown)
    )
}

/// `top` moved by `delta` lines, within `0..=max`.
fn moved(top: u16, delta: i32, max: u16) -> u16 {
    let t = i32::from(top)
        .saturating_add(delta)
        .clamp(0, i32::from(max));
    u16::try_from(t).unwrap_or(0)
}

/// The keys of a popup that scrolls text up to `max` (the help, a tool call's details).
pub(crate) fn scroll_act(top: &mut u16, action: Action, size: Rect, max: u16) -> Outcome {
    // A page is the screen less the popup's margins and frame, less one line kept in view.
    let page = i32::from(size.height.saturating_sub(8).max(2)) - 1;
    *top = match action {
        Action::Close => return Outcome::Close,
        Action::Up => moved(*top, -1, max),
        Action::Down => moved(*top, 1, max),
        Action::PageUp => moved(*top, -page, max),
        Action::PageDown => moved(*top, page, max),
        Action::Top => 0,
        Action::Bottom => moved(*top, i32::MAX, max),
        _ => return Outcome::Ignored,
    };
    Outcome::Done
}

/// The wheel scrolls three lines; a click closes.
pub(crate) fn scroll_mouse(top: &mut u16, kind: MouseEventKind, max: u16) -> Outcome {
    match kind {
        MouseEventKind::ScrollUp => *top = moved(*top, -3, max),
        MouseEventKind::ScrollDown => *top = moved(*top, 3, max),
        MouseEventKind::Down(_) => return Outcome::Close,
        _ => {}
    }
    Outcome::Done
}

/// Lines that may not all fit in `r`: scrolled to `top`, with a title that says where it is
/// when it scrolls (`scrolling` gets the top and the last top).
pub(crate) fn scrolled(
    t: &Theme,
    lines: Vec<Line<'static>>,
    r: Rect,
    top: u16,
    still: String,
    scrolling: impl Fn(u16, u16) -> String,
    buf: &mut Buffer,
) {
    Clear.render(r, buf);
    let max = max_scroll(
        &lines,
        r.width.saturating_sub(2),
        r.height.saturating_sub(2),
    );
    let top = top.min(max);
    let title = if max == 0 { still } else { scrolling(top, max) };
    Paragraph::new(lines)
        .block(popup_frame(t, &title))
        .wrap(Wrap { trim: false })
        .scroll((top, 0))
        .render(r, buf);
}
