//! The centre with no computer linked yet: how to link one.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use crate::tui::app::App;
use crate::tui::component::DrawCx;
use crate::tui::draw::link_text;

pub fn render(app: &App, cx: &DrawCx, area: Rect, buf: &mut Buffer) {
    let block = cx.frame(" No computer linked yet ");
    let inner = block.inner(area);
    block.render(area, buf);
    link_text(&app.settings, &app.theme, inner, buf);
}
