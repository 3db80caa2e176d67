//! `list-peripherals` and `turtle-info` results, typed: their output schemas are derived from
//! these (`schemas::derived`). The entries are the session's own [`PeripheralInfo`] and
//! [`TurtleInfo`], serialized as they are; the shapes here describe them field by field.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde_json::Value;

use super::super::schemas::Common;
use trapdesk_core::session::TurtleInfo;

/// `list-peripherals`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Peripherals {
    #[serde(flatten)]
    pub common: Common,
    /// one per peripheral name the computer sees (peripheral.getNames()), sorted by name
    #[schemars(with = "Vec<PeripheralShape>")]
    pub peripherals: Vec<Value>,
    /// how many peripherals the computer has
    pub count: usize,
    /// true when methods lists were left out to fit the result (the names, types and states are all there)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub methods_cut: Option<bool>,
}

/// A peripheral as `PeripheralInfo` serializes it (less its methods when they were cut).
#[derive(JsonSchema)]
#[allow(dead_code)]
struct PeripheralShape {
    /// the name to call it by: a side (top) or a wired network name (monitor_0)
    name: String,
    /// its types, the main one first (peripheral.getType)
    types: Vec<String>,
    /// its methods' names, sorted (peripheral.getMethods)
    #[serde(skip_serializing_if = "Option::is_none")]
    methods: Option<Vec<String>>,
    /// with methodsCut: how many methods it has
    #[serde(rename = "methodCount", skip_serializing_if = "Option::is_none")]
    method_count: Option<u64>,
    /// reached over a wired modem: that modem's side
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<String>,
    /// common types only, each field left out when it could not be read: modem {wireless, localName, remote: names}; inventory {size, used}; drive {disk, label, id, mountPath, audio}; monitor {width, height, scale, colour}; printer {paper, ink}
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<serde_json::Map<String, Value>>,
}

/// `turtle-info`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Turtle<'a> {
    #[serde(flatten)]
    pub common: Common,
    #[serde(flatten)]
    #[schemars(with = "TurtleShape")]
    pub info: &'a TurtleInfo,
}

/// A turtle as `TurtleInfo` serializes it.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct TurtleShape {
    /// a number, or "unlimited" where the server turned fuel off
    #[schemars(schema_with = "fuel")]
    fuel: (),
    /// the most fuel it holds: a number, or "unlimited"
    #[schemars(schema_with = "fuel")]
    fuel_limit: (),
    /// the selected slot, 1 to 16
    selected: u64,
    /// the 16 slots in order
    slots: Vec<SlotShape>,
}

/// One of a turtle's slots as `TurtleSlot` serializes it.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct SlotShape {
    /// 1 to 16
    slot: u64,
    /// items in it, 0 when empty
    count: u64,
    /// the item's id (minecraft:coal); absent when empty
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// the item's damage value, when it has one
    #[serde(skip_serializing_if = "Option::is_none")]
    damage: Option<u64>,
}

/// A fuel level: a number, or the string "unlimited".
fn fuel(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["integer", "string"]})
}
