//! The selected computer's device, under the Computers list: what it is (computer, turtle or
//! pocket computer, advanced, its screen size, as its `hello` said), how many peripherals it
//! has and which monitors, and for a turtle its fuel, fuel limit and selected slot, as its last
//! status said (`ping` with `status`, docs/protocol.md). The pane also keeps that status
//! fresh: it asks when the selection changes, when the Screen view opens, and every few
//! seconds while the view is open, never more often.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};
use tokio::time::Instant;

use crate::tui::component::DrawCx;
use crate::tui::draw::{cut, name_of};
use crate::tui::hub::Hub;
use crate::tui::output::printable;
use trapdesk_core::session::ComputerInfo;
use trapdesk_core::session::devices::{DeviceStatus, Fuel};

/// How often the status is asked again while the Screen view is open (a monitor attached or
/// taken away shows within this; a status ping costs the computer one event).
pub const STATUS_EVERY: Duration = Duration::from_secs(5);

/// Peripherals listed by name in the pane; more are counted (`+N more`), and
/// `list-peripherals` gives them all.
const SHOWN: usize = 4;

/// Rows the Computers list keeps (borders included: "All computers" and two computers) before
/// the device pane takes any, when its computers are on one row each.
const LIST_KEEPS: u16 = 5;

/// The most rows the pane takes: its frame, what the device is, the peripherals' count, the
/// first few by name, `+N more`, and a turtle's fuel and slot.
const MOST: u16 = 2 + 1 + 1 + SHOWN as u16 + 1 + 1;

/// Whether the Computers list, in an area `whole` rows high (the Device pane's rows included),
/// puts each computer on two lines (its served types on the second): when they fit beside
/// the largest Device pane. So the second lines depend on the area and the list alone, never
/// on whether a pane is shown or how high it is, which change with the selection and with
/// each status.
pub fn two_lines(whole: u16, twice: u16) -> bool {
    whole >= twice.saturating_add(MOST)
}

#[derive(Debug, Default)]
pub struct Device {
    /// The computer whose status was last asked, and when.
    asked: Option<(String, Instant)>,
}

impl Device {
    /// Asks the selected computer's status when it is due: another computer was selected,
    /// the Screen view opened ([`Device::opened`]), or, while the view is open, the last ask
    /// is [`STATUS_EVERY`] old.
    pub fn pull<H: Hub>(&mut self, hub: &H, selected: Option<&str>, screen_on: bool, now: Instant) {
        let Some(id) = selected else {
            self.asked = None;
            return;
        };
        let due = match &self.asked {
            None => true,
            Some((asked, at)) => {
                asked != id || (screen_on && now.saturating_duration_since(*at) >= STATUS_EVERY)
            }
        };
        if due {
            hub.refresh_status(id);
            self.asked = Some((id.to_owned(), now));
        }
    }

    /// The Screen view opened: its monitors are asked for at the next pull.
    pub fn opened(&mut self) {
        self.asked = None;
    }

    /// Something says the status is out of date (the monitor shown is gone): asked at the
    /// next pull, unless it was asked within the last second (its answer is on the way).
    pub fn recheck(&mut self, now: Instant) {
        if self
            .asked
            .as_ref()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) >= Duration::from_secs(1))
        {
            self.asked = None;
        }
    }

    /// Where the list and the device pane go in the Computers area: the pane, framed, at the
    /// bottom when a computer with something to say is selected and the list keeps its rows
    /// ([`LIST_KEEPS`], or all of them on two lines when [`two_lines`] says so).
    pub fn split(area: Rect, c: Option<&ComputerInfo>, twice: u16) -> (Rect, Option<Rect>) {
        let n = c.map_or(0, |c| lines(c).len()) as u16;
        let h = n + 2;
        let keeps = if two_lines(area.height, twice) {
            twice.max(LIST_KEEPS)
        } else {
            LIST_KEEPS
        };
        if n == 0 || area.height < h + keeps {
            return (area, None);
        }
        let list = Rect::new(area.x, area.y, area.width, area.height - h);
        let pane = Rect::new(area.x, area.y + area.height - h, area.width, h);
        (list, Some(pane))
    }

    pub fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) {
        let Some(c) = cx.selected_computer else {
            return;
        };
        let t = cx.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border)
            .title(Line::from(format!(" Device {} ", name_of(&c.trapos_id))).style(t.title));
        let inner = block.inner(area);
        block.render(area, buf);
        let width = usize::from(inner.width);
        let text: Vec<Line> = lines(c)
            .into_iter()
            .map(|(words, dim)| {
                let words = cut(&words, width);
                Line::from(if dim {
                    Span::styled(words, t.dim)
                } else {
                    Span::styled(words, t.text)
                })
            })
            .collect();
        Paragraph::new(text).render(inner, buf);
    }
}

/// A fuel level as the pane writes it: `80`, `unlimited`.
fn fuel(f: Fuel) -> String {
    f.to_string()
}

/// The pane's lines (words, dim), none for a computer that said nothing of its device (a client
/// from before `device` in `hello`, and no status): the pane is not drawn then.
pub fn lines(c: &ComputerInfo) -> Vec<(String, bool)> {
    let m = &c.machine;
    if m.device.is_none() && c.status.is_none() {
        return Vec::new();
    }
    let mut what = m.device.clone().unwrap_or_else(|| "computer".to_owned());
    if m.command == Some(true) {
        what.push_str(" · command");
    }
    match m.advanced {
        Some(true) => what.push_str(" · advanced"),
        Some(false) => what.push_str(" · basic"),
        None => {}
    }
    if let (Some(w), Some(h)) = (m.screen_width, m.screen_height) {
        what.push_str(&format!(" · {w}x{h}"));
    }
    let mut out = vec![(printable(&what), false)];
    match &c.status {
        // A client from before status pings is never asked (it would not answer one).
        None if !c.serves.iter().any(|s| s == "peripherals") => {
            out.push(("no status: update its client".to_owned(), true));
        }
        None => out.push(("peripherals not known yet".to_owned(), true)),
        Some(s) => out.extend(status_lines(s)),
    }
    out
}

/// What the status says: the peripherals and monitors, and a turtle's fuel and slot.
fn status_lines(s: &DeviceStatus) -> Vec<(String, bool)> {
    let plural = if s.peripherals == 1 { "" } else { "s" };
    let mut out = vec![(format!("{} peripheral{plural}", s.peripherals), false)];
    if !s.types.is_empty() {
        // Each peripheral by name with its main type (monitors among them), the first few.
        for (name, kind) in s.types.iter().take(SHOWN) {
            out.push((format!("  {} {}", printable(name), printable(kind)), false));
        }
        if s.types.len() > SHOWN {
            out.push((format!("  +{} more", s.types.len() - SHOWN), true));
        }
    } else if !s.monitors.is_empty() {
        let names: Vec<String> = s.monitors.iter().map(|m| printable(m)).collect();
        let word = if names.len() == 1 {
            "monitor"
        } else {
            "monitors"
        };
        out.push((format!("{word} {}", names.join(", ")), false));
    }
    let mut turtle: Vec<String> = Vec::new();
    if let Some(level) = s.fuel {
        let limit = s
            .fuel_limit
            .map(|l| format!("/{}", fuel(l)))
            .unwrap_or_default();
        turtle.push(format!("fuel {}{limit}", fuel(level)));
    }
    if let Some(slot) = s.selected {
        turtle.push(format!("slot {slot}"));
    }
    if !turtle.is_empty() {
        out.push((turtle.join(" · "), false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ComputerInfo {
        trapdesk_core::session::fleet::test_computer(4, Some("digger"), true)
    }

    #[test]
    fn a_computer_that_said_nothing_has_no_pane() {
        let c = info();
        assert!(lines(&c).is_empty());
        assert_eq!(Device::split(Rect::new(0, 0, 30, 20), Some(&c), 7).1, None);
    }

    #[test]
    fn a_turtle_says_its_fuel_and_slot() {
        let mut c = info();
        c.machine.device = Some("turtle".into());
        c.machine.advanced = Some(true);
        c.machine.screen_width = Some(39);
        c.machine.screen_height = Some(13);
        assert_eq!(
            lines(&c)[1],
            ("no status: update its client".to_owned(), true)
        );
        c.serves = vec!["peripherals".into()];
        assert_eq!(
            lines(&c),
            vec![
                ("turtle · advanced · 39x13".to_owned(), false),
                ("peripherals not known yet".to_owned(), true)
            ]
        );
        c.status = Some(DeviceStatus {
            peripherals: 1,
            monitors: vec!["top".into()],
            fuel: Some(Fuel::Level(80)),
            fuel_limit: Some(Fuel::Unlimited),
            selected: Some(3),
            types: Default::default(),
        });
        let words: Vec<String> = lines(&c).into_iter().map(|(w, _)| w).collect();
        assert_eq!(
            words,
            [
                "turtle · advanced · 39x13",
                "1 peripheral",
                "monitor top",
                "fuel 80/unlimited · slot 3"
            ]
        );
        // Four lines in a frame under a list that keeps its rows; none on a short pane.
        let (list, pane) = Device::split(Rect::new(0, 0, 30, 20), Some(&c), 7);
        assert_eq!(pane, Some(Rect::new(0, 14, 30, 6)));
        assert_eq!(list, Rect::new(0, 0, 30, 14));
        assert_eq!(Device::split(Rect::new(0, 0, 30, 10), Some(&c), 7).1, None);
        // A list whose computers fit on two rows in the area keeps them: the pane fits under
        // that, or is not shown.
        assert!(!two_lines(24, 15));
        assert!(two_lines(25, 15));
        assert_eq!(
            Device::split(Rect::new(0, 0, 30, 25), Some(&c), 15).0,
            Rect::new(0, 0, 30, 19)
        );
    }

    #[test]
    fn each_peripheral_is_named_with_its_type_the_first_four() {
        let mut c = info();
        c.machine.device = Some("computer".into());
        let types = [
            ("back", "modem"),
            ("left", "drive"),
            ("minecraft:chest_0", "minecraft:chest"),
            ("monitor_0", "monitor"),
            ("top", "monitor"),
        ];
        c.status = Some(DeviceStatus {
            peripherals: 5,
            monitors: vec!["monitor_0".into(), "top".into()],
            types: types
                .iter()
                .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
                .collect(),
            ..DeviceStatus::default()
        });
        let words: Vec<String> = lines(&c).into_iter().map(|(w, _)| w).collect();
        assert_eq!(
            words,
            [
                "computer",
                "5 peripherals",
                "  back modem",
                "  left drive",
                "  minecraft:chest_0 minecraft:chest",
                "  monitor_0 monitor",
                "  +1 more"
            ]
        );
    }

    /// Three lines (a computer with monitors, a turtle without) fit from 100x33, four (a
    /// turtle with monitors) from 120x32, under a list on one row per computer.
    #[test]
    fn where_the_pane_fits() {
        let computers = |w, h| {
            crate::tui::layout::areas(Rect::new(0, 0, w, h))
                .map(|a| a.computers)
                .unwrap_or_default()
        };
        let mut c = info();
        c.machine.device = Some("computer".into());
        c.serves = vec!["peripherals".into()];
        c.status = Some(DeviceStatus {
            peripherals: 1,
            monitors: vec!["top".into()],
            ..DeviceStatus::default()
        });
        assert_eq!(lines(&c).len(), 3);
        assert!(Device::split(computers(100, 33), Some(&c), 99).1.is_some());
        assert!(Device::split(computers(80, 24), Some(&c), 99).1.is_none());
        c.machine.device = Some("turtle".into());
        if let Some(s) = c.status.as_mut() {
            s.fuel = Some(Fuel::Level(1));
        }
        assert_eq!(lines(&c).len(), 4);
        assert!(Device::split(computers(100, 33), Some(&c), 99).1.is_none());
        assert!(Device::split(computers(120, 32), Some(&c), 99).1.is_some());
    }
}
