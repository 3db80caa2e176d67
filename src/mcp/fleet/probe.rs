//! `probe-computers`' page: its entries, their rows in the text block's table, and what an
//! entry costs in the result budget.

use serde::Serialize;
use serde_json::{Value, json};

use super::escaped_len;
use crate::mcp::cut::json_len;
use trapdesk_core::session::{ComputerInfo, DeviceStatus, Fuel, PendingInfo};
use trapdesk_proto::protocol::Kind;

/// One computer in a `probe-computers` page. A struct rather than ad-hoc JSON so that what an
/// entry holds is in one place, and a new field (a per-computer policy, say) is one line here
/// and one where it is filled in.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProbeEntry {
    pub trapos_id: String,
    pub id: u64,
    pub label: Option<String>,
    /// Epoch milliseconds.
    pub connected_at: u64,
    /// The request kinds it serves; absent when they are the page's `serves` (one list for
    /// all, where each row repeated ~120 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serves: Option<Vec<String>>,
    /// Requests running or queued on it (pings of this probe excepted).
    pub pending: usize,
    /// Those requests, only when there are any (compact entries: an idle computer has none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_requests: Vec<Value>,
    /// Absent until a round trip was measured (compact entries: an idle computer just linked
    /// has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_rtt_ms: Option<u64>,
    /// This probe's ping: `{ok, rttMs}` or `{ok:false, error}`; absent with `ping:false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping: Option<Value>,
    /// What the policy lets the caller do there: `{exec, write, read}` = allow, ask or deny.
    pub policy: Value,
    /// The computer's `_HOST` (say "ComputerCraft 1.110.2 (CraftOS-PC v2.8.2)").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The client's name and version ("trapdesk-lua/0.2.0").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The installed client files' version (the hash the host compares for upgrades).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// `computer`, `turtle` or `pocket`; absent from a client that does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advanced: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<bool>,
    /// The terminal's size at link time: `{width, height}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen: Option<Value>,
    /// Peripherals attached, from this probe's ping (`status: true`); absent without a ping or
    /// from a client that does not answer it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peripherals: Option<usize>,
    /// The monitors' names (read-screen's `monitor`), absent like `peripherals`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitors: Option<Vec<String>>,
    /// A turtle's fuel, fuel limit and selected slot; absent on other computers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<Fuel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel_limit: Option<Fuel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<u8>,
}

impl ProbeEntry {
    /// `status` is what this probe's ping answered of it (none without a ping, or from a
    /// client that does not answer it).
    pub(super) fn new(
        c: &ComputerInfo,
        pending: &[PendingInfo],
        ping: Option<Value>,
        status: Option<&DeviceStatus>,
        policy: Value,
        shared: &[String],
    ) -> Self {
        let pending_requests: Vec<Value> = pending
            .iter()
            .filter(|r| r.trapos_id == c.trapos_id && r.kind != Kind::Ping)
            .map(|r| {
                json!({"requestId": r.request_id, "kind": r.kind, "summary": r.summary,
                    "origin": r.origin.name(), "sent": r.sent,
                    "ageMs": r.started.elapsed().as_millis() as u64})
            })
            .collect();
        let rtt = ping
            .as_ref()
            .and_then(|p| p.get("rttMs").and_then(Value::as_u64))
            .or(c.last_rtt_ms);
        ProbeEntry {
            trapos_id: c.trapos_id.clone(),
            id: c.id,
            label: c.label.clone(),
            connected_at: trapdesk_proto::time::epoch_ms(c.connected_at),
            serves: (c.serves != shared).then(|| c.serves.clone()),
            pending: pending_requests.len(),
            pending_requests,
            last_rtt_ms: rtt,
            ping,
            policy,
            runtime: c.host.clone(),
            client: c.client.clone(),
            client_version: c.machine.client_version.clone(),
            device: c.machine.device.clone(),
            advanced: c.machine.advanced,
            command: c.machine.command,
            screen: match (c.machine.screen_width, c.machine.screen_height) {
                (Some(width), Some(height)) => Some(json!({"width": width, "height": height})),
                _ => None,
            },
            peripherals: status.map(|s| s.peripherals),
            monitors: status.map(|s| s.monitors.clone()),
            fuel: status.and_then(|s| s.fuel),
            fuel_limit: status.and_then(|s| s.fuel_limit),
            selected: status.and_then(|s| s.selected),
        }
    }

    /// The table's `attached` cell: "3 (monitors top,monitor_0)", "0", "-" when not known.
    fn attached_cell(&self) -> String {
        let Some(n) = self.peripherals else {
            return "-".to_owned();
        };
        match self.monitors.as_deref() {
            Some(m) if !m.is_empty() => format!("{n} (monitors {})", one_cell(&m.join(","))),
            _ => n.to_string(),
        }
    }

    /// The table's `device` cell: "turtle advanced command 39x13", "-" when not reported.
    fn device_cell(&self) -> String {
        let mut cell: Vec<String> = Vec::new();
        if let Some(d) = &self.device {
            cell.push(d.clone());
        }
        if self.advanced == Some(true) {
            cell.push("advanced".into());
        }
        if self.command == Some(true) {
            cell.push("command".into());
        }
        if let Some(s) = &self.screen {
            let n = |k: &str| s.get(k).and_then(Value::as_u64).unwrap_or(0);
            cell.push(format!("{}x{}", n("width"), n("height")));
        }
        match (self.fuel, self.fuel_limit) {
            (Some(f), Some(l)) => cell.push(format!("fuel {f}/{l}")),
            (Some(f), None) => cell.push(format!("fuel {f}")),
            _ => {}
        }
        if let Some(s) = self.selected {
            cell.push(format!("slot {s}"));
        }
        if cell.is_empty() {
            "-".to_owned()
        } else {
            cell.join(" ")
        }
    }
}

/// `text` with its control characters escaped (`\t`, `\n`), so that one row stays a line
/// and its cells stay apart: labels and `_HOST` are any text a player or a runtime chose.
fn one_cell(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(char::is_control) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.into()
}

impl ProbeEntry {
    /// This entry's row in the page's table (the text block): every field of the entry, in far
    /// fewer bytes than its JSON would take there. `id` and `label` are the two halves of the
    /// traposId (`"<id>:<label>"`). A label is any text a player typed, so its control
    /// characters are written escaped (`\t`, `\n`) to keep one row a line and six cells.
    pub(super) fn row(&self) -> String {
        use std::fmt::Write as _;
        // Written into one string (a page makes ~90 rows, each was a dozen small strings).
        let mut row = String::with_capacity(160);
        row.push_str(&one_cell(&self.trapos_id));
        row.push('\t');
        // `to_rfc3339_opts` rather than `format`: the latter parses its pattern every call.
        match chrono::DateTime::from_timestamp_millis(self.connected_at as i64) {
            Some(t) => row.push_str(&t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            None => row.push('?'),
        }
        row.push('\t');
        if self.pending_requests.is_empty() {
            row.push('0');
        } else {
            let _ = write!(row, "{} (", self.pending);
            let mut first = true;
            for r in &self.pending_requests {
                let Some(id) = r.get("requestId").and_then(Value::as_str) else {
                    continue;
                };
                if !first {
                    row.push(' ');
                }
                first = false;
                row.push_str(id);
                if let Some(ms) = r.get("ageMs").and_then(Value::as_u64) {
                    let _ = write!(row, " {}s", ms / 1000);
                }
            }
            row.push(')');
        }
        row.push('\t');
        match (&self.ping, self.last_rtt_ms) {
            (Some(p), _) if p.get("ok") == Some(&Value::Bool(false)) => {
                let code = p
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("failed");
                let _ = write!(row, "ping {code}");
            }
            (_, Some(ms)) => {
                let _ = write!(row, "{ms}");
            }
            (_, None) => row.push('-'),
        }
        let policy = |k: &str| self.policy.get(k).and_then(Value::as_str).unwrap_or("?");
        let _ = write!(
            row,
            "\t{}/{}/{}\t",
            policy("exec"),
            policy("write"),
            policy("read")
        );
        match &self.serves {
            // The page's serves, said once above the table.
            None => row.push('*'),
            Some(serves) => row.push_str(&serves.join(",")),
        }
        row.push('\t');
        row.push_str(&self.device_cell());
        row.push('\t');
        row.push_str(&self.attached_cell());
        row.push('\t');
        row.push_str(&one_cell(self.runtime.as_deref().unwrap_or("-")));
        row.push('\t');
        match (&self.client, &self.client_version) {
            (Some(c), Some(v)) => row.push_str(&one_cell(&format!("{c} {v}"))),
            (Some(c), None) => row.push_str(&one_cell(c)),
            (None, Some(v)) => row.push_str(&one_cell(v)),
            (None, None) => row.push('-'),
        }
        row
    }
}

/// The header of a probe page's table.
pub(super) const TABLE_HEADER: &str = "traposId\tconnected (UTC)\tpending (id age)\trtt ms\texec/write/read\tserves\tdevice\tperipherals\truntime\tclient";

/// The most entries a probe page with `room` bytes can hold: `room` over what the smallest
/// possible entry costs (an empty label, no request, nothing served, the shortest policy
/// words).
pub(super) fn most_per_page(room: usize) -> usize {
    let smallest = ProbeEntry {
        trapos_id: "0:".into(),
        id: 0,
        label: Some(String::new()),
        connected_at: 0,
        serves: None,
        pending: 0,
        pending_requests: Vec::new(),
        last_rtt_ms: None,
        ping: None,
        policy: json!({"exec": "ask", "write": "ask", "read": "ask"}),
        runtime: None,
        client: None,
        client_version: None,
        device: None,
        advanced: None,
        command: None,
        screen: None,
        peripherals: None,
        monitors: None,
        fuel: None,
        fuel_limit: None,
        selected: None,
    };
    (room / probe_cost(&smallest, &smallest.row()).max(1)).max(1)
}

/// What a probe entry costs in a result: its JSON and a comma in `structuredContent`, and its
/// row of the table in the text block: escaped, less the two quotes, plus its newline (`\n`,
/// two bytes there), so `escaped_len` as it is.
pub(super) fn probe_cost(e: &ProbeEntry, row: &str) -> usize {
    json_len(e) + 1 + escaped_len(row)
}

/// The first line of a probe page: how many are linked and matched, what this page holds and
/// how to go on.
pub(super) fn probe_line(
    linked: usize,
    matched: usize,
    pattern: Option<&str>,
    shown: &[ProbeEntry],
    next_cursor: Option<&str>,
) -> String {
    let mut line = match (linked, pattern) {
        (0, _) => "no computers linked".to_owned(),
        (l, None) => format!("{l} linked"),
        (l, Some(g)) => format!("{matched} of {l} linked match {g:?}"),
    };
    if matched > 0 {
        match (shown.first(), shown.last()) {
            (Some(a), Some(b)) => line.push_str(&format!(
                "; this page: {} ({} … {})",
                shown.len(),
                a.trapos_id,
                b.trapos_id
            )),
            _ => line.push_str("; this page: none (the cursor is past the last one)"),
        }
        match next_cursor {
            Some(c) => line.push_str(&format!("; more with cursor {c:?}")),
            None => line.push_str("; last page"),
        }
    }
    line
}

/// The serves list most computers of a page share (the first such on a tie): said once for
/// the page, and left out of the rows that have it.
pub(super) fn shared_serves(computers: &[ComputerInfo]) -> Vec<String> {
    let mut best: (usize, Option<&Vec<String>>) = (0, None);
    for c in computers {
        let n = computers.iter().filter(|o| o.serves == c.serves).count();
        if n > best.0 {
            best = (n, Some(&c.serves));
        }
        if 2 * n > computers.len() {
            break;
        }
    }
    best.1.cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe_entry(ping: Option<Value>, last: Option<u64>, pending: Vec<Value>) -> ProbeEntry {
        ProbeEntry {
            trapos_id: "7:miner one".into(),
            id: 7,
            label: Some("miner one".into()),
            connected_at: 1_764_585_062_123,
            serves: Some(vec!["exec-lua".into(), "ping".into()]),
            pending: pending.len(),
            pending_requests: pending,
            last_rtt_ms: last,
            ping,
            policy: json!({"exec": "ask", "write": "deny", "read": "allow"}),
            runtime: None,
            client: None,
            client_version: None,
            device: None,
            advanced: None,
            command: None,
            screen: None,
            peripherals: None,
            monitors: None,
            fuel: None,
            fuel_limit: None,
            selected: None,
        }
    }

    #[test]
    fn no_entry_costs_less_than_the_page_bound_assumes() {
        // The session is asked for at most `most_per_page` computers, so that bound must
        // never be below what really fits: every entry costs at least the smallest one.
        let room = 24 * 1024;
        let most = most_per_page(room);
        assert!((100..200).contains(&most), "{most}");
        for e in [
            probe_entry(None, None, vec![]),
            probe_entry(Some(json!({"ok": true, "rttMs": 1})), Some(1), vec![]),
        ] {
            assert!(room / probe_cost(&e, &e.row()) <= most, "{most}");
        }
    }

    #[test]
    fn a_probe_row_holds_every_field_of_its_entry() {
        let idle = probe_entry(None, None, vec![]);
        assert_eq!(
            idle.row(),
            "7:miner one\t2025-12-01T10:31:02Z\t0\t-\task/deny/allow\texec-lua,ping\t-\t-\t-\t-"
        );
        assert_eq!(
            TABLE_HEADER.split('\t').count(),
            idle.row().split('\t').count()
        );
        let busy = probe_entry(
            Some(json!({"ok": true, "rttMs": 4})),
            Some(4),
            vec![json!({"requestId": "h-1"}), json!({"requestId": "h-2"})],
        );
        assert!(busy.row().contains("\t2 (h-1 h-2)\t4\t"), "{}", busy.row());
        let lost = probe_entry(
            Some(json!({"ok": false, "error": {"code": "timeout", "message": "no answer"}})),
            Some(9),
            vec![],
        );
        assert!(lost.row().contains("\tping timeout\t"), "{}", lost.row());
        let mut odd = probe_entry(None, None, vec![]);
        odd.trapos_id = "7:a\tb\nc".into();
        assert!(odd.row().starts_with("7:a\\tb\\nc\t"), "{}", odd.row());
        assert_eq!(odd.row().split('\t').count(), 10);
        let mut turtle = probe_entry(None, None, vec![json!({"requestId": "h-3", "ageMs": 4200})]);
        turtle.device = Some("turtle".into());
        turtle.advanced = Some(true);
        turtle.screen = Some(json!({"width": 39, "height": 13}));
        turtle.runtime = Some("ComputerCraft 1.110.2\t(x)".into());
        turtle.client = Some("trapdesk-lua/0.2.0".into());
        let row = turtle.row();
        assert!(row.contains("\t1 (h-3 4s)\t"), "{row}");
        assert!(
            row.ends_with(
                "\tturtle advanced 39x13\t-\tComputerCraft 1.110.2\\t(x)\ttrapdesk-lua/0.2.0"
            ),
            "{row}"
        );
        // The row costs far less than the JSON it stands for in the text block.
        let json_cost = super::super::cost(&idle);
        assert!(probe_cost(&idle, &idle.row()) * 10 < json_cost * 7);
    }

    /// With its status ping's answer: fuel and slot in the device cell, what is attached in
    /// its own; without one, the fields absent.
    #[test]
    fn a_probe_row_holds_its_status() {
        let status = DeviceStatus {
            peripherals: 3,
            monitors: vec!["monitor_0".into(), "top".into()],
            fuel: Some(Fuel::Level(80)),
            fuel_limit: Some(Fuel::Unlimited),
            selected: Some(2),
            types: Default::default(),
        };
        let c = trapdesk_core::session::fleet::test_computer(7, Some("miner one"), true);
        let e = ProbeEntry::new(&c, &[], None, Some(&status), json!({}), &[]);
        let row = e.row();
        assert!(row.contains("\t3 (monitors monitor_0,top)\t"), "{row}");
        let v = serde_json::to_value(&e).expect("json");
        assert_eq!(v["peripherals"], 3);
        assert_eq!(v["monitors"], json!(["monitor_0", "top"]));
        assert_eq!(
            (
                v["fuel"].clone(),
                v["fuelLimit"].clone(),
                v["selected"].clone()
            ),
            (json!(80), json!("unlimited"), json!(2))
        );
        let mut t = e;
        t.device = Some("turtle".into());
        assert!(
            t.row().contains("\tturtle fuel 80/unlimited slot 2\t"),
            "{}",
            t.row()
        );
        // Without a status (no ping, an older client): the fields are absent, the cell "-".
        let old = ProbeEntry::new(&c, &[], None, None, json!({}), &[]);
        let v = serde_json::to_value(&old).expect("json");
        assert!(
            v.get("peripherals").is_none()
                && v.get("monitors").is_none()
                && v.get("fuel").is_none()
        );
    }
}
