//! The centre with no computer linked yet: how to link one.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::config::{SecretSource, Settings};
use crate::tui::app::App;
use crate::tui::component::DrawCx;
use crate::tui::theme::Theme;

pub fn render(app: &App, cx: &DrawCx, area: Rect, buf: &mut Buffer) {
    let block = cx.frame(" No computer linked yet ");
    let inner = block.inner(area);
    block.render(area, buf);
    link_text(&app.settings, &app.theme, inner, buf);
}

/// How to link a computer, with the secret: the empty screen, and the `s` popup once computers
/// are linked.
pub fn link_text(s: &Settings, t: &Theme, inner: Rect, buf: &mut Buffer) {
    let where_secret = match &s.secret_source {
        SecretSource::Flag => "given with --secret".to_owned(),
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
