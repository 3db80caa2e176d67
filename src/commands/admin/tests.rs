//! Unit tests of the trust subcommands in `src/commands/admin.rs`.

use super::*;
use serde_json::json;

#[test]
fn filters_by_computer_origin_tool_and_outcome() {
    let line = json!({"event": "finished", "who": "claude-code", "traposId": "7:miner",
        "what": "exec-lua", "status": "ok", "origin": {"kind": "agent", "name": "claude-code"}});
    let f = |c: Option<&str>, o: Option<&str>, t: Option<&str>, s: Option<&str>| TranscriptArgs {
        computer: c.map(Into::into),
        origin: o.map(Into::into),
        tool: t.map(Into::into),
        outcome: s.map(Into::into),
        ..TranscriptArgs::default()
    };
    assert!(keep(&line, &f(None, None, None, None)));
    assert!(keep(&line, &f(Some("miner"), None, None, None)));
    assert!(keep(&line, &f(Some("7"), None, None, None)));
    assert!(keep(&line, &f(Some("min*"), None, None, None)));
    assert!(!keep(&line, &f(Some("farm"), None, None, None)));
    assert!(keep(&line, &f(None, Some("agent"), None, None)));
    assert!(keep(&line, &f(None, Some("claude-code"), None, None)));
    assert!(!keep(&line, &f(None, Some("person"), None, None)));
    assert!(keep(&line, &f(None, None, Some("exec-lua"), Some("ok"))));
    assert!(!keep(&line, &f(None, None, Some("write-file"), None)));
    assert!(!keep(&line, &f(None, None, None, Some("error"))));
    let refused =
        json!({"event": "refused", "who": "x", "traposId": "5:reactor", "what": "exec-lua"});
    assert!(keep(&refused, &f(None, None, None, Some("refused"))));
}

#[test]
fn readable_shows_the_code_in_full() {
    let line = json!({"timeMs": 0, "event": "request", "who": "person", "traposId": "7:miner",
        "what": "exec-lua", "requestId": "h-1", "detail": "print(1)",
        "args": {"code": "print(1)\nprint(2)"}});
    let text = readable(&line);
    assert!(text.contains("│ print(1)\n    │ print(2)"), "{text}");
    assert!(
        text.contains("person") && text.contains("7:miner"),
        "{text}"
    );
}
