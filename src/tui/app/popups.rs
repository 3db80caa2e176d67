//! The popups: what covers part of the screen and takes keys first ([`Popup`]), and the ones
//! that live on while closed ([`Popups`]).

use super::super::component::{Component, Open};
use super::super::panes::confirm::{ConfirmQuit, ConfirmRun};
use super::super::panes::detail::Detail;
use super::super::panes::help::Help;
use super::super::panes::link::Link;
use super::super::panes::messages::Messages;
use super::super::panes::policy::Policy;
use super::super::panes::prompt::Prompt;
use super::super::panes::screen::Menu;

/// What covers part of the screen and takes keys first. A popup that shows one thing holds it
/// (the call, the question, the prompt's text); the help, the link popup and the policy,
/// which outlive their opening, are kept in [`Popups`] and named here.
#[derive(Debug, Clone, PartialEq)]
pub enum Popup {
    /// [`Popups::help`].
    Help,
    /// `s`: the secret and the line to type on a computer to link it ([`Popups::link`]).
    Link,
    /// Quit while requests are pending?
    ConfirmQuit(ConfirmQuit),
    /// Full arguments and result of a tool call.
    Detail(Detail),
    /// The policy in force (F7), with `r` to reload it from the config file
    /// ([`Popups::policy`]).
    Policy,
    /// Every status-line message, whole ([`Popups::messages`]).
    Messages,
    /// A run on several computers, waiting for `y`.
    ConfirmRun(ConfirmRun),
    Prompt(Prompt),
    /// Esc while attached: terminate, reboot or shut down the computer.
    Menu(Menu),
}

impl From<Open> for Popup {
    /// The popup's component, made by the app: the panes that ask for one name it with plain
    /// data, so they need not know the popups' types (nor the popups theirs).
    fn from(o: Open) -> Popup {
        match o {
            Open::Help => Popup::Help,
            Open::Link => Popup::Link,
            Open::Policy => Popup::Policy,
            Open::Messages => Popup::Messages,
            Open::ConfirmQuit(pending) => Popup::ConfirmQuit(ConfirmQuit { pending }),
            Open::ConfirmRun(intent, who) => Popup::ConfirmRun(ConfirmRun { intent, who }),
            Open::Detail(call) => Popup::Detail(Detail::new(*call)),
            Open::Prompt(kind, text) => Popup::Prompt(Prompt::new(kind, &text)),
            Open::Menu => Popup::Menu(Menu),
        }
    }
}

/// The popups that live on while closed: the help keeps its place between openings, and the
/// policy's lines are pulled whenever the policy changes.
#[derive(Debug, Default)]
pub struct Popups {
    pub help: Help,
    pub link: Link,
    pub policy: Policy,
    pub messages: Messages,
}

impl Popups {
    /// The component of the open popup `popup`, which takes its keys.
    pub fn of<'a>(&'a mut self, popup: &'a mut Popup) -> &'a mut dyn Component {
        match popup {
            Popup::Help => &mut self.help,
            Popup::Link => &mut self.link,
            Popup::Policy => &mut self.policy,
            Popup::Messages => &mut self.messages,
            Popup::ConfirmQuit(c) => c,
            Popup::Detail(d) => d,
            Popup::ConfirmRun(c) => c,
            Popup::Prompt(p) => p,
            Popup::Menu(m) => m,
        }
    }

    /// The component of the open popup `popup`, to draw.
    pub fn view<'a>(&'a self, popup: &'a Popup) -> &'a dyn Component {
        match popup {
            Popup::Help => &self.help,
            Popup::Link => &self.link,
            Popup::Policy => &self.policy,
            Popup::Messages => &self.messages,
            Popup::ConfirmQuit(c) => c,
            Popup::Detail(d) => d,
            Popup::ConfirmRun(c) => c,
            Popup::Prompt(p) => p,
            Popup::Menu(m) => m,
        }
    }
}
