//! Drawing the frame: an immutable pass over [`App`]. Each pane draws itself (in
//! `panes/`, popups included); this lays them out, draws what belongs to no pane (the status
//! line, the empty state, the too-small case), and holds the small formatting helpers they
//! share.

mod empty;
pub mod statusbar;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

pub use empty::link_text;

use super::app::{App, Focus};
use super::component::{Component, DrawCx};
use super::layout::{MIN_HEIGHT, MIN_WIDTH, areas};
use super::theme::Theme;

impl App {
    /// Draws a frame and places the terminal cursor in the editor or prompt.
    pub fn draw(&self, frame: &mut Frame) {
        let area = frame.area();
        let cursor = self.render_all(area, frame.buffer_mut());
        if let Some(pos) = cursor {
            frame.set_cursor_position(pos);
        }
    }

    /// What pane `pane` reads while it draws; `targets` are where F5 sends.
    pub(crate) fn draw_cx<'a>(&'a self, pane: Focus, targets: &'a [String]) -> DrawCx<'a> {
        let filter_open = self.editing_filter();
        let selected = self.selected.as_deref();
        DrawCx {
            theme: &self.theme,
            settings: &self.settings,
            now: self.now,
            now_i: self.now_i,
            ticks: self.ticks,
            utc_offset: self.utc_offset,
            truecolor: self.truecolor,
            selected,
            focus: self.focus,
            selected_computer: selected
                .and_then(|id| self.computers.list.iter().find(|c| c.trapos_id == id)),
            targets,
            filter_open,
            // The filter line lives on the Computers pane, which stays lit while it is typed in.
            focused: self.focus == pane
                && (self.popup.is_none() || (pane == Focus::Computers && filter_open)),
        }
    }

    /// Renders everything; returns where the cursor goes.
    fn render_all(&self, area: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
        let Some(a) = areas(area) else {
            too_small(self, area, buf);
            return None;
        };
        let targets = self.targets();
        let cx = |pane| self.draw_cx(pane, &targets);
        self.computers.draw(a.computers, buf, &cx(Focus::Computers));
        self.requests.draw(a.requests, buf, &cx(Focus::Requests));
        self.activity.draw(a.activity, buf, &cx(Focus::Activity));
        let output_area = if self.screen.on {
            let (out, scr) = self.screen.split(a.output);
            self.screen.draw(scr, buf, &cx(Focus::Output));
            out
        } else {
            a.output
        };
        if output_area.width == 0 {
            // The Screen view took the whole pane.
        } else if self.computers.list.is_empty() {
            empty::render(self, &cx(Focus::Output), output_area, buf);
        } else {
            self.output.draw(output_area, buf, &cx(Focus::Output));
        }
        let mut cursor = self.editor.draw(a.editor, buf, &cx(Focus::Editor));
        statusbar::render(self, a.status, buf);
        if let Some(p) = &self.popup {
            cursor = self.popups.view(p).draw(area, buf, &cx(self.focus));
        }
        if self.approval().is_some() {
            self.approvals.draw(area, buf, &cx(Focus::Editor));
            cursor = None;
        }
        cursor
    }
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.render_all(area, buf);
    }
}

fn too_small(app: &App, area: Rect, buf: &mut Buffer) {
    let text = vec![
        Line::from("Terminal too small"),
        Line::from(format!(
            "{}x{} here; trapdesk needs at least {MIN_WIDTH}x{MIN_HEIGHT}.",
            area.width, area.height
        )),
        Line::from(format!(
            "Enlarge the window, or press {} to quit.",
            super::keymap::key_for(super::keymap::Scope::Global, super::keymap::Action::Quit)
        )),
    ];
    let top = area.height.saturating_sub(3) / 2;
    let inner = Rect::new(area.x, area.y + top, area.width, area.height - top);
    Paragraph::new(text)
        .style(app.theme.warn)
        .alignment(Alignment::Center)
        .wrap(Wrap { trim: true })
        .render(inner, buf);
}

/// A centred rectangle of at most `w`x`h`.
pub fn centred(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// A popup's frame.
pub fn popup_frame<'a>(t: &Theme, title: &'a str) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(t.border_focus)
        .title(Span::styled(title, t.title))
}

/// `HH:MM:SS` of a time, `utc_offset` seconds east of UTC.
pub fn clock(t: SystemTime, utc_offset: i32) -> String {
    let s = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
        + i64::from(utc_offset);
    let s = s.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// How the help names the time zone of the clock times: `UTC` or `UTC+02:00`.
pub fn zone(utc_offset: i32) -> String {
    if utc_offset == 0 {
        return "UTC".to_owned();
    }
    let sign = if utc_offset < 0 { '-' } else { '+' };
    let m = utc_offset.unsigned_abs() / 60;
    format!("UTC{sign}{:02}:{:02}", m / 60, m % 60)
}

/// A short age: `4s`, `3m`, `2h`, `5d`.
pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// A duration in milliseconds, compactly: `12 ms`, `1.4 s`, `2m05s`.
pub fn millis(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// Cuts to `max` chars with `…`.
pub fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > max.saturating_sub(1) {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Columns a string takes on the terminal (a CJK character takes two), which is what layout
/// must count, not chars.
pub fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// A computer's display name: its label and id, or just the id. The label is the computer's
/// text, so it goes through [`printable`](crate::tui::output::printable) like its output.
pub fn name_of(trapos_id: &str) -> String {
    let name = match trapos_id.split_once(':') {
        Some((id, label)) if !label.is_empty() => format!("{label} #{id}"),
        Some((id, _)) => format!("#{id}"),
        None => trapos_id.to_owned(),
    };
    crate::tui::output::printable(&name)
}

/// The spinner frame for tick `n`.
pub fn spinner(n: u64) -> &'static str {
    const FRAMES: [&str; 4] = ["◐", "◓", "◑", "◒"];
    FRAMES[(n % 4) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_times_follow_the_offset() {
        let t = UNIX_EPOCH + Duration::from_secs(23 * 3600 + 30 * 60);
        assert_eq!(clock(t, 0), "23:30:00");
        assert_eq!(clock(t, 2 * 3600), "01:30:00");
        assert_eq!(clock(t, -(5 * 3600 + 1800)), "18:00:00");
        assert_eq!(zone(0), "UTC");
        assert_eq!(zone(5 * 3600 + 1800), "UTC+05:30");
        assert_eq!(zone(-3 * 3600), "UTC-03:00");
    }

    #[test]
    fn cut_counts_terminal_columns() {
        assert_eq!(cut("hello", 5), "hello");
        assert_eq!(cut("hello world", 6), "hello…");
        // Each of these takes two columns: four of them fill 8, so 7 holds three and the mark.
        assert_eq!(cut("採掘採掘", 8), "採掘採掘");
        assert_eq!(cut("採掘採掘", 7), "採掘採…");
        assert_eq!(width("採掘"), 4);
    }
}
