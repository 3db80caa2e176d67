//! How `trapdesk doctor` speaks: text for a person, section by section, or one JSON object
//! with `--json`.

use serde_json::Value;

/// Text for a person, or one JSON object with `--json`.
pub(super) struct Report {
    json: bool,
    data: serde_json::Map<String, Value>,
}

impl Report {
    pub(super) fn new(json: bool) -> Report {
        Report {
            json,
            data: serde_json::Map::new(),
        }
    }
    pub(super) fn head(&self, title: &str) {
        if !self.json {
            println!("\n== {title}");
        }
    }
    pub(super) fn line(&self, text: &str) {
        if !self.json {
            // Refused links and linked computers carry labels players chose: no control
            // character reaches the terminal raw.
            println!("{}", trapdesk_proto::text::printable_lines(text));
        }
    }
    pub(super) fn data(&mut self, key: &str, v: Value) {
        self.data.insert(key.into(), v);
    }
    pub(super) fn finish(self) {
        if self.json {
            println!(
                "{}",
                trapdesk_proto::protocol::wire::escape_non_ascii(
                    &Value::Object(self.data).to_string()
                )
            );
        }
    }
}
