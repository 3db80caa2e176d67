//! The panes and the popups, each owning its state, its keys (as [`Action`]s of the keymap) and
//! its drawing. Where a pane goes on screen is `layout.rs`; how a key reaches it is `keymap.rs`
//! and the app's dispatch.

pub mod activity;
pub mod approval;
pub mod computers;
pub mod confirm;
pub mod detail;
pub mod device;
pub mod editor;
pub mod help;
pub mod link;
pub mod messages;
pub mod output;
pub mod policy;
pub mod prompt;
pub mod requests;
pub mod screen;

use ratatui::layout::Rect;

use super::keymap::Action;
use super::layout::areas;

/// Rows a page key moves a list selection on a screen of `size`.
pub fn list_page(size: Rect) -> usize {
    areas(size).map_or(5, |a| a.requests.height.saturating_sub(3).max(1) as usize)
}

/// A list selection after a move action, within `0..=last`.
pub fn moved(sel: usize, action: Action, page: usize, last: usize) -> usize {
    match action {
        Action::Up => sel.saturating_sub(1),
        Action::Down => (sel + 1).min(last),
        Action::Top => 0,
        Action::Bottom => last,
        Action::PageUp => sel.saturating_sub(page),
        Action::PageDown => (sel + page).min(last),
        _ => sel,
    }
}

/// A list selection after one wheel step in a list of `len`.
pub fn step(sel: usize, up: bool, len: usize) -> usize {
    if up {
        sel.saturating_sub(1)
    } else {
        (sel + 1).min(len.saturating_sub(1))
    }
}
