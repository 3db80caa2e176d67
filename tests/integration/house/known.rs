//! Today's known exceptions to the limits in `shape.rs`: the violations the tree had when the
//! guard came in, each with why it is still here. The guard fails for any violation not listed
//! and for any entry listed that no longer violates, so the list can only shrink: when a file,
//! function or type is split, its entry goes.

/// Files under a `src/` over the line limit, by their path from the workspace root.
pub const LONG_FILES: &[(&str, &str)] = &[
    ("src/mcp/schemas.rs", "being split"),
    ("crates/trapdesk-core/src/session/state.rs", "being split"),
    ("crates/trapdesk-core/src/session/mod.rs", "being split"),
    ("crates/trapdesk-core/src/session/link.rs", "being split"),
];

/// Functions over the line limit, by file and name (not line: lines move as the file changes).
pub const LONG_FNS: &[(&str, &str, &str)] = &[
    ("src/mcp/tools.rs", "computer_output", "being split"),
    ("src/mcp/wait.rs", "wait_for", "being split"),
    ("src/mcp/screen.rs", "send_input", "being split"),
    ("src/mcp/files.rs", "piece", "being split"),
    (
        "src/mcp/resources/mod.rs",
        "read_file_resource",
        "being split",
    ),
    ("src/mcp/fleet/mod.rs", "exec_lua_many", "being split"),
    ("src/mcp/fleet/many.rs", "many_outcome", "being split"),
    (
        "src/mcp/fleet/probe.rs",
        "a_probe_row_holds_every_field_of_its_entry",
        "being split",
    ),
    ("src/mcp/render.rs", "render", "being split"),
    (
        "crates/trapdesk-core/src/session/history/store/write.rs",
        "commit",
        "being split",
    ),
    (
        "crates/trapdesk-core/src/session/detached.rs",
        "adopt_unknown",
        "being split",
    ),
    (
        "crates/trapdesk-core/src/session/screen/frame.rs",
        "apply",
        "being split",
    ),
    (
        "crates/trapdesk-core/src/session/mod.rs",
        "start",
        "being split",
    ),
    (
        "crates/trapdesk-core/src/session/link.rs",
        "link",
        "being split",
    ),
];

/// Types whose inherent `impl` is spread over more than the allowed files, as `crate::Type`.
pub const SPREAD_TYPES: &[(&str, &str)] = &[
    ("trapdesk::App", "being split"),
    ("trapdesk::Computers", "being split"),
    (
        "trapdesk::TrapdeskMcp",
        "rmcp's #[tool_router] is per tool family",
    ),
    ("trapdesk-core::Session", "being split"),
    ("trapdesk-core::State", "being split"),
];
