//! `list-peripherals` and `turtle-info` (docs/mcp.md, "Peripherals and turtles"): what is
//! attached to a computer, with its methods, and what a turtle carries. Both are read-only
//! (policy action `read`) and answer a table an agent reads, the structured data beside it.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::{Map, Value, json};

use super::TrapdeskMcp;
use super::params::OneComputer;
use super::results::{Outcome, result_size};
use super::schemas::{self, Common, fields};
use shapes::{Peripherals, Turtle};

mod shapes;
use trapdesk_core::session::{DeviceError, PeripheralInfo, Status, TurtleInfo};

type ToolResult = Result<CallToolResult, ErrorData>;

fn failure(e: &DeviceError, target: &str) -> (Status, Outcome) {
    let mut extra = Map::new();
    extra.insert("traposId".into(), json!(target));
    if let DeviceError::Request(r) = e {
        let status = trapdesk_core::session::summary::outcome(&Err(r.clone())).0;
        return (status, super::convert::request_failure(r, extra));
    }
    (
        Status::Failed,
        Outcome::failure(e.code(), &e.to_string(), extra),
    )
}

/// A state's fields in one cell: `size=27 used=3`, `wireless=false remote=[monitor_0,drive_0]`.
fn state_cell(p: &PeripheralInfo) -> String {
    let Some(state) = &p.state else {
        return "-".to_owned();
    };
    if state.is_empty() {
        return "-".to_owned();
    }
    let mut parts = Vec::with_capacity(state.len());
    for (k, v) in state {
        let v = match v {
            Value::String(s) => s.clone(),
            Value::Array(a) => {
                let items: Vec<String> = a
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                    .collect();
                format!("[{}]", items.join(","))
            }
            other => other.to_string(),
        };
        parts.push(format!("{k}={v}"));
    }
    one_cell(&parts.join(" "))
}

/// Control characters escaped: names and labels are any text a mod or a player chose.
fn one_cell(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The text block of `list-peripherals`: a table (name, types, via, state, methods count),
/// then each peripheral's methods on a line of their own, unless they were left out to fit.
pub(crate) fn peripherals_text(list: &[PeripheralInfo], with_methods: bool) -> String {
    let mut out = String::from("name\ttypes\tvia\tstate\tmethods\n");
    for p in list {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            one_cell(&p.name),
            one_cell(&p.types.join(",")),
            p.via.as_deref().map_or_else(|| "-".to_owned(), one_cell),
            state_cell(p),
            p.methods.len()
        ));
    }
    if with_methods && list.iter().any(|p| !p.methods.is_empty()) {
        out.push_str("\n[methods]\n");
        for p in list.iter().filter(|p| !p.methods.is_empty()) {
            out.push_str(&format!(
                "{}: {}\n",
                one_cell(&p.name),
                one_cell(&p.methods.join(" "))
            ));
        }
    }
    out
}

/// `list-peripherals`' outcome, within `budget` bytes: whole when it fits; else without the
/// methods' names (each entry keeps its count in the table); else the first entries that fit,
/// the first line saying how many were left out.
pub(crate) fn peripherals_outcome(
    trapos_id: &str,
    list: &[PeripheralInfo],
    budget: usize,
) -> Outcome {
    let n = list.len();
    let first = |shown: usize, cut: bool| {
        let mut line = match n {
            0 => format!("{trapos_id} has no peripherals attached"),
            1 => format!("{trapos_id} has 1 peripheral"),
            _ => format!("{trapos_id} has {n} peripherals"),
        };
        if cut {
            line.push_str("; methods left out to fit (the table keeps their count)");
        }
        if shown < n {
            line.push_str(&format!(
                "; {} not shown: too many to fit one result",
                n - shown
            ));
        }
        line
    };
    let build = |shown: &[PeripheralInfo], methods: bool| {
        let entries: Vec<Value> = shown
            .iter()
            .map(|p| {
                let mut v = serde_json::to_value(p).unwrap_or_else(|_| json!({"name": p.name}));
                if !methods && let Some(o) = v.as_object_mut() {
                    o.remove("methods");
                    o.insert("methodCount".into(), json!(p.methods.len()));
                }
                v
            })
            .collect();
        let result = Peripherals {
            common: Common::ok_on(trapos_id),
            peripherals: entries,
            count: n,
            methods_cut: (!methods).then_some(true),
        };
        let data = Value::Object(fields(&result));
        Outcome::ok(first(shown.len(), !methods), data).with_text(peripherals_text(shown, methods))
    };
    let fits = |o: &Outcome| result_size(&o.clone().into_unsized()) <= budget;
    let whole = build(list, true);
    if fits(&whole) {
        return whole;
    }
    let bare = build(list, false);
    if fits(&bare) {
        return bare;
    }
    // Fewer entries: halve until one fits, then grow back one by one (a list is a few dozen
    // at most on a real base; this runs only when it is not).
    let mut k = list.len();
    while k > 1 && !fits(&build(&list[..k], false)) {
        k /= 2;
    }
    while k < list.len() && fits(&build(&list[..k + 1], false)) {
        k += 1;
    }
    build(&list[..k], false)
}

/// The text block of `turtle-info`: fuel and the selected slot, then the sixteen slots.
pub(crate) fn turtle_text(t: &TurtleInfo) -> String {
    let mut out = format!(
        "fuel {} of {}; slot {} selected\nslot\tcount\titem\n",
        t.fuel, t.fuel_limit, t.selected
    );
    for s in &t.slots {
        let mark = if s.slot == t.selected { "*" } else { "" };
        let item = match (&s.name, s.damage) {
            (Some(n), Some(d)) if d > 0 => format!("{} (damage {d})", one_cell(n)),
            (Some(n), _) => one_cell(n),
            (None, _) => "-".to_owned(),
        };
        out.push_str(&format!("{}{mark}\t{}\t{item}\n", s.slot, s.count));
    }
    out
}

/// `turtle-info`'s outcome (sixteen slots always fit a result).
pub(crate) fn turtle_outcome(trapos_id: &str, t: &TurtleInfo) -> Outcome {
    let used = t.slots.iter().filter(|s| s.count > 0).count();
    let items: u64 = t.slots.iter().map(|s| u64::from(s.count)).sum();
    let line = format!(
        "{trapos_id}: fuel {} of {}, slot {} selected, {used} of {} slots used ({items} items)",
        t.fuel,
        t.fuel_limit,
        t.selected,
        t.slots.len()
    );
    let result = Turtle {
        common: Common::ok_on(trapos_id),
        info: t,
    };
    let data = Value::Object(fields(&result));
    Outcome::ok(line, data).with_text(turtle_text(t))
}

#[tool_router(router = devices_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "list-peripherals",
        title = "List a computer's peripherals",
        description = "List every peripheral a computer sees (peripheral.getNames(): sides and wired modems), by name: types (main first), methods, via (the wired modem's side) and, for common types, a state: modem {wireless, localName, remote}; inventory {size, used}; drive {disk, label, id, mountPath, audio}; monitor {width, height, scale, colour}; printer {paper, ink}; unreadable fields left out.",
        annotations(title = "List a computer's peripherals", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<Peripherals>()
    )]
    async fn list_peripherals(
        &self,
        Parameters(p): Parameters<OneComputer>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id});
        let rec = self.begin(&ctx, "list-peripherals", Some(&p.trapos_id), args);
        let session = self.session().clone();
        let shown = session
            .resolve(&p.trapos_id)
            .unwrap_or_else(|_| p.trapos_id.clone());
        let (status, outcome) = match session
            .list_peripherals(&p.trapos_id, rec.origin.clone())
            .await
        {
            Ok(list) => (
                Status::Ok,
                peripherals_outcome(&shown, &list, self.max_result_bytes),
            ),
            Err(e) => failure(&e, &shown),
        };
        Ok(self.end(rec, status, outcome))
    }

    #[tool(
        name = "turtle-info",
        title = "Read a turtle's fuel and inventory",
        description = "A turtle's fuel (a number, or \"unlimited\"), fuelLimit, selected slot and 16 slots: slot, count, name and damage when not empty. Elsewhere: not_a_turtle, nothing sent.",
        annotations(title = "Read a turtle's fuel and inventory", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<Turtle<'static>>()
    )]
    async fn turtle_info(
        &self,
        Parameters(p): Parameters<OneComputer>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id});
        let rec = self.begin(&ctx, "turtle-info", Some(&p.trapos_id), args);
        let session = self.session().clone();
        let shown = session
            .resolve(&p.trapos_id)
            .unwrap_or_else(|_| p.trapos_id.clone());
        let (status, outcome) = match session.turtle_info(&p.trapos_id, rec.origin.clone()).await {
            Ok(t) => (Status::Ok, turtle_outcome(&shown, &t)),
            Err(e) => failure(&e, &shown),
        };
        Ok(self.end(rec, status, outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trapdesk_core::session::{Fuel, TurtleSlot};

    fn peripherals() -> Vec<PeripheralInfo> {
        let state = |v: Value| v.as_object().cloned();
        vec![
            PeripheralInfo {
                name: "back".into(),
                types: vec!["modem".into()],
                methods: vec!["getNamesRemote".into(), "isWireless".into()],
                via: None,
                state: state(json!({"wireless": false, "remote": ["drive_0", "monitor_0"]})),
            },
            PeripheralInfo {
                name: "drive_0".into(),
                types: vec!["drive".into()],
                methods: vec!["getDiskLabel".into(), "isDiskPresent".into()],
                via: Some("back".into()),
                state: state(json!({"disk": true, "label": "backup"})),
            },
            PeripheralInfo {
                name: "left".into(),
                types: vec!["minecraft:chest".into(), "inventory".into()],
                methods: vec!["list".into(), "size".into()],
                via: None,
                state: state(json!({"size": 27, "used": 3})),
            },
        ]
    }

    #[test]
    fn peripherals_read_as_a_table_and_their_methods() {
        let o = peripherals_outcome("1:base", &peripherals(), 64 * 1024);
        assert_eq!(o.line, "1:base has 3 peripherals");
        let text = o.text.clone().expect("text");
        assert!(
            text.starts_with("name\ttypes\tvia\tstate\tmethods\n"),
            "{text}"
        );
        assert!(
            text.contains("back\tmodem\t-\tremote=[drive_0,monitor_0] wireless=false\t2\n"),
            "{text}"
        );
        assert!(
            text.contains("drive_0\tdrive\tback\tdisk=true label=backup\t2\n"),
            "{text}"
        );
        assert!(
            text.contains("left\tminecraft:chest,inventory\t-\tsize=27 used=3\t2\n"),
            "{text}"
        );
        assert!(
            text.contains("[methods]\nback: getNamesRemote isWireless\n"),
            "{text}"
        );
        assert_eq!(o.data["peripherals"][2]["state"]["used"], 3);
        assert_eq!(o.data["count"], 3);
        let none = peripherals_outcome("1:base", &[], 64 * 1024);
        assert_eq!(none.line, "1:base has no peripherals attached");
    }

    #[test]
    fn many_methods_are_left_out_before_any_peripheral() {
        let mut list = peripherals();
        for p in &mut list {
            p.methods = (0..800).map(|i| format!("method{i:04}")).collect();
        }
        let budget = 16 * 1024;
        let o = peripherals_outcome("1:base", &list, budget);
        assert!(result_size(&o.clone().into_unsized()) <= budget);
        assert_eq!(o.data["methodsCut"], true);
        assert_eq!(o.data["peripherals"][0]["methodCount"], 800);
        assert!(o.data["peripherals"][0].get("methods").is_none());
        assert!(o.line.contains("methods left out"), "{}", o.line);
        assert_eq!(o.data["peripherals"].as_array().map(Vec::len), Some(3));
        // Far too many peripherals: the first that fit, and the line says how many not.
        let crowd: Vec<PeripheralInfo> = (0..2000)
            .map(|i| PeripheralInfo {
                name: format!("chest_{i}"),
                types: vec!["minecraft:chest".into(), "inventory".into()],
                ..Default::default()
            })
            .collect();
        let o = peripherals_outcome("1:base", &crowd, budget);
        assert!(result_size(&o.clone().into_unsized()) <= budget);
        let shown = o.data["peripherals"].as_array().map_or(0, Vec::len);
        assert!(shown > 10 && shown < 2000, "{shown}");
        assert!(
            o.line.contains(&format!("{} not shown", 2000 - shown)),
            "{}",
            o.line
        );
    }

    #[test]
    fn a_turtle_reads_as_its_fuel_and_slots() {
        let slots = (1..=16)
            .map(|slot| TurtleSlot {
                slot,
                count: if slot == 2 { 12 } else { 0 },
                name: (slot == 2).then(|| "minecraft:coal".to_owned()),
                damage: None,
            })
            .collect();
        let t = TurtleInfo {
            fuel: Fuel::Level(80),
            fuel_limit: Fuel::Unlimited,
            selected: 2,
            slots,
        };
        let o = turtle_outcome("4:digger", &t);
        assert_eq!(
            o.line,
            "4:digger: fuel 80 of unlimited, slot 2 selected, 1 of 16 slots used (12 items)"
        );
        let text = o.text.clone().expect("text");
        assert!(text.starts_with("fuel 80 of unlimited; slot 2 selected\nslot\tcount\titem\n1\t0\t-\n2*\t12\tminecraft:coal\n"), "{text}");
        assert_eq!(text.lines().count(), 18);
        assert_eq!(o.data["fuelLimit"], "unlimited");
        assert_eq!(o.data["fuel"], 80);
        assert_eq!(o.data["slots"][1]["name"], "minecraft:coal");
        assert!(o.data["slots"][0].get("name").is_none());
    }
}
