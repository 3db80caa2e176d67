//! What kind of computer this is ([`Device`]: a computer, a turtle or a pocket computer), and the
//! state its kind keeps across power cycles ([`DeviceState`]: a turtle's fuel and slots). Plain
//! data beneath the kernel that holds it; what a turtle or pocket computer does is `device.rs`.

use std::sync::{Arc, Mutex};

use crate::turtle::{Turtle, TurtleSpec};

/// What kind of computer this is (CC: Tweaked's computer, turtle and pocket computer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Device {
    /// A computer: no `turtle`, no `pocket`.
    #[default]
    Computer,
    /// A turtle: the `turtle` API, fuel and sixteen slots, in an empty world.
    Turtle(TurtleSpec),
    /// A pocket computer held by a player: the `pocket` API, with no upgrade to equip.
    Pocket,
}

impl Device {
    /// `"computer"`, `"turtle"` or `"pocket"`: the hello's `device`.
    pub fn name(&self) -> &'static str {
        match self {
            Device::Computer => "computer",
            Device::Turtle(_) => "turtle",
            Device::Pocket => "pocket",
        }
    }
}

/// A device's state that outlives a power cycle (a turtle's fuel and slots), shared by the
/// machine's power cycles.
#[derive(Debug, Clone)]
pub(crate) enum DeviceState {
    Computer,
    Turtle(Arc<Mutex<Turtle>>),
    Pocket,
}

impl DeviceState {
    pub(crate) fn new(device: &Device, advanced: bool) -> Self {
        match device {
            Device::Computer => DeviceState::Computer,
            Device::Turtle(spec) => {
                DeviceState::Turtle(Arc::new(Mutex::new(Turtle::new(spec, advanced))))
            }
            Device::Pocket => DeviceState::Pocket,
        }
    }
}
