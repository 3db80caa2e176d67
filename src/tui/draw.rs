//! Drawing helpers every pane and popup shares: a centred rectangle and a popup's frame, the
//! text that links a computer, and the forms of text on screen (clock times, ages, durations,
//! cut to a width, a computer's name, the spinner). Beneath the panes and the frame alike, so
//! that neither imports the other for them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use crate::tui::theme::Theme;
use trapdesk_core::config::{SecretSource, Settings};

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

/// A computer's display name: its traposId (`7:miner`), as agents, the CLI, the log and the
/// transcript write it, so that the name a person reads is the name an agent or a command
/// takes; it holds both the id and the label. The label is the computer's text, so it goes
/// through [`printable`](crate::tui::output::printable) like its output.
pub fn name_of(trapos_id: &str) -> String {
    crate::tui::output::printable(trapos_id)
}

/// The spinner frame for tick `n`.
pub fn spinner(n: u64) -> &'static str {
    const FRAMES: [&str; 4] = ["◐", "◓", "◑", "◒"];
    FRAMES[(n % 4) as usize]
}

/// How to link a computer, with the secret: the empty screen, and the `s` popup once computers
/// are linked.
pub fn link_text(s: &Settings, t: &Theme, inner: Rect, buf: &mut Buffer) {
    let where_secret = match &s.secret_source {
        SecretSource::Flag => "given with --secret".to_owned(),
        SecretSource::File(p) => format!("read from {} (--secret-file)", p.display()),
        SecretSource::Env => "from the SANDBOX_PASSWORD environment variable".to_owned(),
        SecretSource::ConfigFile => "from config.toml".to_owned(),
        SecretSource::Generated(p) => format!("generated and stored in {}", p.display()),
        SecretSource::Stored(p) => format!("stored in {}", p.display()),
    };
    // A wildcard bind is no address a computer can use; the person must put the LAN one in.
    let (addr, host) = if s.gateway_bind.ip().is_unspecified() {
        let host = "<this host's address>".to_owned();
        (format!("{host}:{}", s.gateway_bind.port()), host)
    } else {
        (s.gateway_bind.to_string(), s.gateway_bind.ip().to_string())
    };
    let rule = |text: String| Line::from(Span::styled(format!("  {text}"), t.accent));
    let lines = vec![
        Line::from(Span::styled("Link a ComputerCraft computer:", t.title)),
        Line::from("On the computer, run:"),
        Line::from(Span::styled(
            format!("  wget run http://{addr}/install.lua {}", s.secret),
            t.accent,
        )),
        Line::from(Span::styled(
            format!("The secret is {where_secret}."),
            t.dim,
        )),
        Line::from(""),
        Line::from(vec![
            Span::styled("Blocked? ", t.warn),
            // The port matters: CC matches a rule without one on every port of the host.
            Span::raw(
                "CC denies private addresses: in serverconfig/computercraft-server.toml, \
                 above host = \"$private\", add this (keep the port, or every local service \
                 here is open to every computer in the world):",
            ),
        ]),
        rule("[[http.rules]]".into()),
        rule(format!("host = \"{host}\"")),
        rule(format!("port = {}", s.gateway_bind.port())),
        rule("action = \"allow\"".into()),
        Line::from("`trapdesk doctor --minecraft DIR` checks the server's file and the rest."),
        Line::from(vec![
            Span::styled("Refused? ", t.warn),
            Span::raw(
                "a refused link shows in the status line and in session-log; the installer says so \
                 on the computer too.",
            ),
        ]),
        Line::from(vec![
            Span::raw("No computer at hand? Start with "),
            Span::styled("--demo", t.key),
            Span::raw(" to link emulated ones."),
        ]),
    ];
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(inner, buf);
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
