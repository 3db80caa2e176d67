//! What is attached to a computer and what a turtle carries: the `peripherals` and `turtle`
//! requests, and the short status a `ping` with `status: true` answers (docs/protocol.md,
//! "Payloads"), kept on the computer's [`ComputerInfo`](super::ComputerInfo) for the console
//! and `probe-computers`.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::Session;
use super::model::{Event, Origin, RequestError, RequestSpec};
use trapdesk_proto::protocol::{Kind, kind};

/// How long a `peripherals`, `turtle` or status `ping` may take: a computer with many
/// peripherals answers one `getMethods` each, all within one event.
const DEVICE_TIMEOUT: Duration = Duration::from_secs(10);

/// A turtle's fuel: a level, or `unlimited` where the server turned fuel off
/// (`turtle_needs_fuel = false`: CC's `turtle.getFuelLevel` then answers the string
/// "unlimited"). On the wire and in JSON: a number or the string `"unlimited"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fuel {
    Level(u64),
    Unlimited,
}

impl Fuel {
    /// From the wire's number or `"unlimited"`; anything else is `None`.
    pub fn from_value(v: &Value) -> Option<Fuel> {
        match v {
            Value::String(s) if s == "unlimited" => Some(Fuel::Unlimited),
            // CC's numbers are doubles: a whole one may come as 20000.0.
            Value::Number(n) => n.as_u64().map(Fuel::Level).or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e15)
                    .map(|f| Fuel::Level(f as u64))
            }),
            _ => None,
        }
    }

    pub fn to_value(self) -> Value {
        match self {
            Fuel::Level(n) => Value::from(n),
            Fuel::Unlimited => Value::from("unlimited"),
        }
    }
}

impl std::fmt::Display for Fuel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fuel::Level(n) => write!(f, "{n}"),
            Fuel::Unlimited => f.write_str("unlimited"),
        }
    }
}

impl Serialize for Fuel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Fuel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fuel, D::Error> {
        let v = Value::deserialize(d)?;
        Fuel::from_value(&v).ok_or_else(|| {
            serde::de::Error::custom(format!("fuel must be a number or \"unlimited\", not {v}"))
        })
    }
}

/// What a computer has attached and, on a turtle, its fuel and selected slot: the answer to
/// `ping` with `status: true`, as of when it was asked ([`Session::refresh_status`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceStatus {
    /// How many peripherals (`peripheral.getNames()`, wired-network ones included).
    pub peripherals: usize,
    /// The monitors' names, sorted.
    #[serde(default)]
    pub monitors: Vec<String>,
    /// Each peripheral's main type by name (`peripheral.getType`), sorted by name; empty from a
    /// client from before it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub types: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<Fuel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel_limit: Option<Fuel>,
    /// The selected slot, 1 to 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<u8>,
}

impl DeviceStatus {
    /// The `status` of a ping's answer; `None` when the answer has none (a client from before
    /// it) or it is not an object with a `peripherals` count.
    pub fn from_ping(answer: &Value) -> Option<DeviceStatus> {
        let s = answer.get("status")?;
        let peripherals = s.get("peripherals")?.as_u64()? as usize;
        let mut monitors: Vec<String> = s
            .get("monitors")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        monitors.sort();
        monitors.dedup();
        let types = s
            .get("types")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Some(DeviceStatus {
            peripherals,
            monitors,
            types,
            fuel: s.get("fuel").and_then(Fuel::from_value),
            fuel_limit: s.get("fuelLimit").and_then(Fuel::from_value),
            selected: s
                .get("selected")
                .and_then(Value::as_u64)
                .filter(|n| (1..=16).contains(n))
                .map(|n| n as u8),
        })
    }
}

/// One peripheral attached to a computer (an entry of the `peripherals` answer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeripheralInfo {
    /// The name the computer knows it by: a side (`top`) or a wired network name
    /// (`monitor_0`).
    pub name: String,
    /// Its types, the main one first (`peripheral.getType`: `["modem"]`, `["minecraft:chest",
    /// "inventory"]`).
    pub types: Vec<String>,
    /// Its methods' names, sorted.
    #[serde(default)]
    pub methods: Vec<String>,
    /// For one reached over a wired modem: that modem's side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// A short state for common types (modem, inventory, drive, monitor, printer): the fields
    /// docs/protocol.md lists, each left out when the computer could not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Map<String, Value>>,
}

/// One of a turtle's sixteen slots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurtleSlot {
    /// 1 to 16.
    pub slot: u8,
    /// Items in it; 0 for an empty slot.
    pub count: u32,
    /// The item's id (`minecraft:coal`); absent for an empty slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage: Option<u64>,
}

/// A turtle's fuel and inventory (the `turtle` answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurtleInfo {
    pub fuel: Fuel,
    pub fuel_limit: Fuel,
    /// The selected slot, 1 to 16.
    pub selected: u8,
    /// The sixteen slots, in order (empty when asked without them).
    #[serde(default)]
    pub slots: Vec<TurtleSlot>,
}

/// Why peripherals or a turtle's inventory could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeviceError {
    /// The computer's client does not serve the request (a client from before it).
    #[error(
        "{trapos_id} does not serve {what} (its client is older than {what}: re-run the installer to update it)"
    )]
    NotServed { trapos_id: String, what: String },
    /// `turtle-info` on what is no turtle: nothing was sent.
    #[error("{trapos_id} is a {device}, not a turtle")]
    NotATurtle { trapos_id: String, device: String },
    #[error("{0}")]
    Request(#[from] RequestError),
    /// The computer answered something that is not what was asked.
    #[error("{0}")]
    Bad(String),
}

impl DeviceError {
    /// A short code, as the other errors have.
    pub fn code(&self) -> &str {
        match self {
            DeviceError::NotServed { .. } => "unknown_type",
            DeviceError::NotATurtle { .. } => "not_a_turtle",
            DeviceError::Request(e) => e.code(),
            DeviceError::Bad(_) => "bad_answer",
        }
    }
}

/// The `peripherals` answer's list, sorted by name.
///
/// # Errors
/// When it has no `peripherals` array or an entry has no name or types.
pub fn parse_peripherals(v: &Value) -> Result<Vec<PeripheralInfo>, DeviceError> {
    let list = v
        .get("peripherals")
        .and_then(Value::as_array)
        .ok_or_else(|| DeviceError::Bad("the peripherals answer has no peripherals list".into()))?;
    let mut out = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        // An empty `methods` list is an empty JSON object to CC's serializer: take either.
        let mut p = p.clone();
        if let Some(obj) = p.as_object_mut() {
            for k in ["methods", "types"] {
                if obj
                    .get(k)
                    .is_some_and(|m| m.as_object().is_some_and(|o| o.is_empty()))
                {
                    obj.insert(k.into(), Value::Array(Vec::new()));
                }
            }
        }
        let mut info: PeripheralInfo = serde_json::from_value(p)
            .map_err(|e| DeviceError::Bad(format!("peripherals[{i}]: {e}")))?;
        info.methods.sort();
        out.push(info);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The `turtle` answer.
///
/// # Errors
/// When a field is missing or ill-typed.
pub fn parse_turtle(v: &Value) -> Result<TurtleInfo, DeviceError> {
    let bad = |what: &str| DeviceError::Bad(format!("the turtle answer's {what}"));
    let fuel = v
        .get("fuel")
        .and_then(Fuel::from_value)
        .ok_or_else(|| bad("fuel is not a number or \"unlimited\""))?;
    let fuel_limit = v
        .get("fuelLimit")
        .and_then(Fuel::from_value)
        .ok_or_else(|| bad("fuelLimit is not a number or \"unlimited\""))?;
    let selected = v
        .get("selected")
        .and_then(Value::as_u64)
        .filter(|n| (1..=16).contains(n))
        .ok_or_else(|| bad("selected is not a slot 1..16"))? as u8;
    let slots = match v.get("slots") {
        None | Some(Value::Null) => Vec::new(),
        // CC's serializer writes an empty table as an object.
        Some(Value::Object(o)) if o.is_empty() => Vec::new(),
        Some(s) => {
            let mut slots: Vec<TurtleSlot> = serde_json::from_value(s.clone())
                .map_err(|e| DeviceError::Bad(format!("the turtle answer's slots: {e}")))?;
            slots.sort_by_key(|s| s.slot);
            slots
        }
    };
    Ok(TurtleInfo {
        fuel,
        fuel_limit,
        selected,
        slots,
    })
}

impl Session {
    /// Whether the computer's client serves `kind`: `Ok` when it does, the error to give
    /// when it does not (an unknown or offline computer, an older client).
    fn serves_kind(&self, trapos_id: &str, kind: Kind) -> Result<(), DeviceError> {
        let c = self.computer(trapos_id).ok_or_else(|| {
            DeviceError::Request(RequestError::UnknownComputer {
                query: trapos_id.to_owned(),
                linked: self.computers().into_iter().map(|c| c.trapos_id).collect(),
            })
        })?;
        if !c.online {
            return Err(DeviceError::Request(RequestError::Disconnected));
        }
        if c.serves.iter().any(|s| s == kind.as_str()) {
            Ok(())
        } else {
            Err(DeviceError::NotServed {
                trapos_id: trapos_id.to_owned(),
                what: kind.to_string(),
            })
        }
    }

    /// The peripherals attached to a computer now, sorted by name, with their methods and a
    /// short state for common types.
    ///
    /// # Errors
    /// An unknown or offline computer, a client that does not serve `peripherals`, the
    /// request's own failures, an answer that is not a list.
    pub async fn list_peripherals(
        &self,
        target: &str,
        origin: Origin,
    ) -> Result<Vec<PeripheralInfo>, DeviceError> {
        let trapos_id = self.resolve(target)?;
        self.serves_kind(&trapos_id, Kind::Peripherals)?;
        let spec = RequestSpec::of(kind::Peripherals {})
            .timeout(Some(DEVICE_TIMEOUT))
            .quiet();
        let v = self.request(&trapos_id, spec, origin).await?;
        parse_peripherals(&v)
    }

    /// A turtle's fuel, limit, selected slot and sixteen slots. Nothing is sent to a computer
    /// that says it is no turtle.
    ///
    /// # Errors
    /// [`DeviceError::NotATurtle`] for a computer or pocket computer; an unknown or offline
    /// computer, a client that does not serve `turtle`, the request's own failures.
    pub async fn turtle_info(
        &self,
        target: &str,
        origin: Origin,
    ) -> Result<TurtleInfo, DeviceError> {
        let trapos_id = self.resolve(target)?;
        if let Some(c) = self.computer(&trapos_id)
            && let Some(device) = c.machine.device.as_deref()
            && device != "turtle"
        {
            // The hello's word, as a person says it.
            let device = match device {
                "pocket" => "pocket computer",
                other => other,
            };
            return Err(DeviceError::NotATurtle {
                trapos_id,
                device: device.to_owned(),
            });
        }
        self.serves_kind(&trapos_id, Kind::Turtle)?;
        let spec = RequestSpec::of(kind::Turtle { slots: None })
            .timeout(Some(DEVICE_TIMEOUT))
            .quiet();
        let v = self.request(&trapos_id, spec, origin).await?;
        parse_turtle(&v)
    }

    /// Asks the computer for its status (`ping` with `status: true`) without waiting; the
    /// answer is stored on its [`ComputerInfo`](super::ComputerInfo) and announced with
    /// `ComputerChanged`. Quiet (nothing in the scrollback); a computer whose client does not
    /// serve `peripherals` (a client from before status pings) is not asked.
    pub fn refresh_status(&self, target: &str) {
        let Ok(trapos_id) = self.resolve(target) else {
            return;
        };
        if self.serves_kind(&trapos_id, Kind::Peripherals).is_err() {
            return;
        }
        let spec = RequestSpec::of(kind::Ping { status: Some(true) })
            .timeout(Some(DEVICE_TIMEOUT))
            .quiet();
        let Ok(ticket) = self.start(&trapos_id, spec, Origin::Person) else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let session = self.clone();
        rt.spawn(async move {
            if let Ok(v) = ticket.wait().await {
                session.store_status(&trapos_id, &v);
            }
        });
    }

    /// Keeps the status a `ping` with `status: true` answered (nothing when it has none); the
    /// fleet tools' probe answers through it too.
    pub fn store_status(&self, trapos_id: &str, answer: &Value) {
        let Some(status) = DeviceStatus::from_ping(answer) else {
            return;
        };
        let mut st = self.lock();
        let Some(c) = st.computers.get_mut(trapos_id) else {
            return;
        };
        if c.info.status.as_ref() == Some(&status) {
            return;
        }
        c.info.status = Some(status);
        st.emit(Event::ComputerChanged {
            trapos_id: trapos_id.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests;
