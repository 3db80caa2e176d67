//! The docs as a person follows them: every shell block of README.md and docs/*.md runs as
//! written (`shell_blocks.rs`), or the line before its fence says why it cannot run here
//! (`blocks.rs` reads the blocks and the markers).

mod blocks;
mod shell_blocks;
