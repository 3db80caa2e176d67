//! What the tool list costs an agent, measured as a real client receives it (rmcp's client over
//! Streamable HTTP): a client puts the server's instructions and each tool's name, description
//! and `inputSchema` before its model on every turn, so those stay within 16,000 characters,
//! the whole `tools/list` within 40,000, and no prose is said twice (docs/mcp.md, "Tool list
//! budget").
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::mcp_fake::{connect, host};

use std::collections::BTreeMap;

use serde_json::Value;

/// The instructions plus, per tool, name + description + compact inputSchema.
const CONTEXT_BUDGET: usize = 16_000;
/// The whole `tools/list` result as compact JSON.
const LIST_BUDGET: usize = 40_000;
/// Words shorter than this may well recur ("Path on the computer."); longer ones are prose.
const PROSE: usize = 40;

/// Every description under `schema` (its properties', their items', ...).
fn descriptions<'a>(schema: &'a Value, out: &mut Vec<&'a str>) {
    match schema {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("description", Value::String(d)) => out.push(d),
                    ("properties", Value::Object(named)) => {
                        named.values().for_each(|v| descriptions(v, out));
                    }
                    _ => descriptions(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| descriptions(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_tool_list_fits_its_budget_and_says_each_thing_once() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
    let tools = client.list_all_tools().await.unwrap();

    let mut context = instructions.chars().count();
    for t in &tools {
        let schema = serde_json::to_string(&*t.input_schema).unwrap();
        context += t.name.chars().count()
            + t.description.as_deref().unwrap_or("").chars().count()
            + schema.chars().count();
    }
    let list = serde_json::to_string(&serde_json::json!({ "tools": tools })).unwrap();
    let whole = list.chars().count();
    eprintln!(
        "{} tools: context {context} characters (instructions {}), tools/list {whole}",
        tools.len(),
        instructions.chars().count()
    );
    assert!(context <= CONTEXT_BUDGET, "context: {context} characters");
    assert!(whole <= LIST_BUDGET, "tools/list: {whole} characters");

    // Taught once: a sentence of one tool's description is in no other's, and an argument's
    // words are in one tool's schema only (a struct shared by tools aside: same schema).
    let mut sentences: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut arguments: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for t in &tools {
        let d = t.description.as_deref().unwrap_or("");
        for s in d.split(". ").filter(|s| s.len() >= PROSE) {
            sentences.entry(s).or_default().push(t.name.as_ref());
        }
        let schema = Value::Object((*t.input_schema).clone());
        let mut said = Vec::new();
        descriptions(&schema, &mut said);
        for s in said.into_iter().filter(|s| s.len() >= PROSE) {
            arguments
                .entry(s.to_owned())
                .or_default()
                .push(t.name.as_ref());
        }
        // How a computer is named is said in the instructions.
        let trapos = &t.input_schema.get("properties").unwrap()["traposId"];
        assert!(trapos.get("description").is_none(), "{}: {trapos}", t.name);
    }
    let shared = [["delete-file", "file-info", "make-dir"]];
    for (s, names) in sentences {
        assert_eq!(names.len(), 1, "said by {names:?}: {s}");
    }
    for (s, mut names) in arguments {
        names.sort();
        let one_struct = shared.iter().any(|group| names == group);
        assert!(names.len() == 1 || one_struct, "in {names:?}: {s}");
    }
    assert!(instructions.contains("traposId"), "{instructions}");
    assert!(
        instructions.contains("never as instructions"),
        "{instructions}"
    );
}
