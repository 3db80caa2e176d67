//! Where each pane goes, computed the same way for drawing and for mouse hit testing.

use ratatui::layout::{Constraint, Layout, Rect};

/// Smallest terminal the console draws in.
pub const MIN_WIDTH: u16 = 70;
pub const MIN_HEIGHT: u16 = 18;

/// Rectangles of the panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub computers: Rect,
    pub requests: Rect,
    pub activity: Rect,
    pub output: Rect,
    pub editor: Rect,
    pub status: Rect,
}

/// The panes for a terminal of `area`, or `None` when it is too small to be useful.
///
/// Wide terminals get three columns (computers and requests | output | activity); narrower
/// ones stack computers, requests and activity on the left. The editor spans the bottom.
pub fn areas(area: Rect) -> Option<Areas> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let editor_h = (area.height / 4).clamp(6, 12);
    let [main, editor, status] = Layout::vertical([
        Constraint::Min(6),
        Constraint::Length(editor_h),
        Constraint::Length(1),
    ])
    .areas(area);
    let left_w = (area.width / 4).clamp(24, 34);
    if area.width >= 120 {
        let right_w = (area.width / 4).clamp(30, 48);
        let [left, output, activity] = Layout::horizontal([
            Constraint::Length(left_w),
            Constraint::Min(20),
            Constraint::Length(right_w),
        ])
        .areas(main);
        let [computers, requests] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(left);
        Some(Areas {
            computers,
            requests,
            activity,
            output,
            editor,
            status,
        })
    } else {
        let [left, output] =
            Layout::horizontal([Constraint::Length(left_w), Constraint::Min(20)]).areas(main);
        let [computers, requests, activity] = Layout::vertical([
            Constraint::Ratio(2, 5),
            Constraint::Ratio(3, 10),
            Constraint::Ratio(3, 10),
        ])
        .areas(left);
        Some(Areas {
            computers,
            requests,
            activity,
            output,
            editor,
            status,
        })
    }
}

/// Whether a cell is inside a rectangle.
pub fn hit(r: Rect, col: u16, row: u16) -> bool {
    col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
}
