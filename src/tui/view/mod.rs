//! Drawing: an immutable pass over [`App`]. Each pane has its own file; this one lays them out,
//! handles the too-small case, and holds the small formatting helpers they share.

mod approval;
mod computers;
mod editor;
mod empty;
mod lists;
mod output;
mod popup;
mod screen;
pub mod statusbar;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders, Paragraph, Widget, Wrap};

pub use popup::popup_max_scroll;

use super::app::{App, Focus};
use super::layout::{MIN_HEIGHT, MIN_WIDTH, areas};

impl App {
    /// Draws a frame and places the terminal cursor in the editor or prompt.
    pub fn draw(&self, frame: &mut Frame) {
        let area = frame.area();
        let cursor = self.render_all(area, frame.buffer_mut());
        if let Some(pos) = cursor {
            frame.set_cursor_position(pos);
        }
    }

    /// Renders everything; returns where the cursor goes.
    fn render_all(&self, area: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
        let Some(a) = areas(area) else {
            too_small(self, area, buf);
            return None;
        };
        computers::render(self, a.computers, buf);
        lists::render_requests(self, a.requests, buf);
        lists::render_activity(self, a.activity, buf);
        let output_area = if self.screen_on {
            let (out, scr) = screen::split(self, a.output);
            screen::render(self, scr, buf);
            out
        } else {
            a.output
        };
        if output_area.width == 0 {
            // The Screen view took the whole pane.
        } else if self.computers.is_empty() {
            empty::render(self, output_area, buf);
        } else {
            output::render(self, output_area, buf);
        }
        let mut cursor = editor::render(self, a.editor, buf);
        statusbar::render(self, a.status, buf);
        if let Some(p) = &self.popup {
            let c = popup::render(self, p, area, buf);
            cursor = c;
        }
        if self.approval().is_some() {
            approval::render(self, area, buf);
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
        Line::from("Enlarge the window, or press Ctrl-C to quit."),
    ];
    let top = area.height.saturating_sub(3) / 2;
    let inner = Rect::new(area.x, area.y + top, area.width, area.height - top);
    Paragraph::new(text)
        .style(app.theme.warn)
        .alignment(Alignment::Center)
        .wrap(Wrap { trim: true })
        .render(inner, buf);
}

/// A pane's frame, highlighted when focused.
fn pane<'a>(app: &App, title: impl Into<Line<'a>>, focus: Focus) -> Block<'a> {
    // The filter line lives on the Computers pane, which stays lit while it is typed in.
    let focused = app.focus == focus
        && (app.popup.is_none() || (focus == Focus::Computers && computers::editing_filter(app)));
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused {
            app.theme.border_focus
        } else {
            app.theme.border
        })
        .title(title.into().style(app.theme.title))
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
