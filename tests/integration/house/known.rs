//! Today's known exceptions to the limits in `shape.rs`: the violations the tree had when the
//! guard came in, each with why it is still here. The guard fails for any violation not listed
//! and for any entry listed that no longer violates, so the list can only shrink: when a file,
//! function or type is split, its entry goes.

/// Files under a `src/` over the line limit, by their path from the workspace root.
pub const LONG_FILES: &[(&str, &str)] = &[];

/// Functions over the line limit, by file and name (not line: lines move as the file changes).
pub const LONG_FNS: &[(&str, &str, &str)] = &[];

/// Types whose inherent `impl` is spread over more than the allowed files, as `crate::Type`.
pub const SPREAD_TYPES: &[(&str, &str)] = &[
    (
        "trapdesk::TrapdeskMcp",
        "rmcp's #[tool_router] makes one router per impl block, so each tool family is an impl \
         of its own in its own file (docs/architecture.md, MCP)",
    ),
    (
        "trapdesk-core::Session",
        "not yet split into per-concept handles (screens, gate, runs, ...); its operations sit \
         one file per concept under session/",
    ),
];
