//! Drawing the frame: an immutable pass over [`App`], in functions over it (the state is
//! `app.rs`, the input `input.rs`). Each pane draws itself (in
//! `panes/`, popups included); this lays them out, draws what belongs to no pane (the status
//! line, the empty state, the too-small case), and holds the small formatting helpers they
//! share.

mod empty;
pub mod statusbar;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;

use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::app::{App, Focus};
use super::component::{Component, DrawCx};
use super::layout::{MIN_HEIGHT, MIN_WIDTH, areas};

/// Draws a frame and places the terminal cursor in the editor or prompt.
pub fn draw(app: &App, frame: &mut Frame) {
    let area = frame.area();
    let cursor = render(app, area, frame.buffer_mut());
    if let Some(pos) = cursor {
        frame.set_cursor_position(pos);
    }
}

/// What pane `pane` reads while it draws; `targets` are where F5 sends.
fn draw_cx<'a>(app: &'a App, pane: Focus, targets: &'a [String]) -> DrawCx<'a> {
    let filter_open = app.editing_filter();
    let selected = app.selected.as_deref();
    DrawCx {
        theme: &app.theme,
        settings: &app.settings,
        now: app.now,
        now_i: app.now_i,
        ticks: app.ticks,
        utc_offset: app.utc_offset,
        truecolor: app.truecolor,
        selected,
        focus: app.focus,
        selected_computer: selected
            .and_then(|id| app.computers.list.iter().find(|c| c.trapos_id == id)),
        targets,
        filter_open,
        // The filter line lives on the Computers pane, which stays lit while it is typed in.
        focused: app.focus == pane
            && (app.popup.is_none() || (pane == Focus::Computers && filter_open)),
    }
}

/// Renders everything; returns where the cursor goes.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
    let Some(a) = areas(area) else {
        too_small(app, area, buf);
        return None;
    };
    let targets = app.targets();
    let cx = |pane| draw_cx(app, pane, &targets);
    let computers = cx(Focus::Computers);
    app.computers.whole.set(a.computers.height);
    let (list, device) = crate::tui::panes::device::Device::split(
        a.computers,
        computers.selected_computer,
        app.computers.height_twice(),
    );
    app.computers.draw(list, buf, &computers);
    if let Some(d) = device {
        app.device.draw(d, buf, &computers);
    }
    app.requests.draw(a.requests, buf, &cx(Focus::Requests));
    app.activity.draw(a.activity, buf, &cx(Focus::Activity));
    let output_area = if app.screen.on {
        let monitors = app.selected_status().map_or(&[][..], |s| &s.monitors[..]);
        let (out, scr) = app
            .screen
            .split(a.output, app.selected.as_deref(), monitors);
        app.screen.draw(scr, buf, &cx(Focus::Output));
        out
    } else {
        a.output
    };
    if output_area.width == 0 {
        // The Screen view took the whole pane.
    } else if app.computers.list.is_empty() {
        empty::render(app, &cx(Focus::Output), output_area, buf);
    } else {
        app.output.draw(output_area, buf, &cx(Focus::Output));
    }
    let mut cursor = app.editor.draw(a.editor, buf, &cx(Focus::Editor));
    if let Some(host) = &app.attached {
        attached_marker(app, host, a.editor, buf);
    }
    statusbar::render(app, a.status, buf);
    if let Some(p) = &app.popup {
        cursor = app.popups.view(p).draw(area, buf, &cx(app.focus));
    }
    if app.approval().is_some() {
        app.approvals.draw(area, buf, &cx(Focus::Editor));
        cursor = None;
        // The Quit question asked under an approval (Ctrl-C) takes the keys, so it is
        // drawn over it.
        if let Some(p @ crate::tui::app::Popup::ConfirmQuit(_)) = &app.popup {
            app.popups.view(p).draw(area, buf, &cx(app.focus));
        }
    }
    cursor
}

/// `trapdesk attach`: the editor's top border says, on the right (its title, on the left,
/// says where F5 sends), that this console is a client of a host elsewhere and which host;
/// quitting it leaves that host running.
fn attached_marker(app: &App, host: &str, area: Rect, buf: &mut Buffer) {
    let room = usize::from(area.width / 2);
    if room < 12 {
        return;
    }
    let text = crate::tui::draw::cut(&format!(" attached to {host} "), room);
    let width = crate::tui::draw::width(&text) as u16;
    let x = area.x + area.width.saturating_sub(width + 1);
    buf.set_string(x, area.y, text, app.theme.warn);
}

/// No pane fits: this says so, and it is all the keys do (only quitting acts, `input.rs`), so
/// the quit question asked while requests are pending is asked here too.
fn too_small(app: &App, area: Rect, buf: &mut Buffer) {
    use super::keymap::{Action, Scope, key_for};
    let last = match &app.popup {
        Some(crate::tui::app::Popup::ConfirmQuit(q)) => format!(
            "{} request(s) pending: {} quits and cancels them, {} stays.",
            q.pending,
            key_for(Scope::ConfirmQuit, Action::Yes),
            key_for(Scope::ConfirmQuit, Action::No)
        ),
        _ => format!(
            "Enlarge the window, or press {} to quit.",
            key_for(Scope::Global, Action::Quit)
        ),
    };
    let text = vec![
        Line::from("Terminal too small"),
        Line::from(format!(
            "{}x{} here; trapdesk needs at least {MIN_WIDTH}x{MIN_HEIGHT}.",
            area.width, area.height
        )),
        Line::from(last),
    ];
    let top = area.height.saturating_sub(3) / 2;
    let inner = Rect::new(area.x, area.y + top, area.width, area.height - top);
    Paragraph::new(text)
        .style(app.theme.warn)
        .alignment(Alignment::Center)
        .wrap(Wrap { trim: true })
        .render(inner, buf);
}
