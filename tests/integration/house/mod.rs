//! The source tree's shape, checked: the limits the layout keeps (docs/architecture.md,
//! "Layout"), so that a file growing a second idea or a hub spreading over the tree fails a
//! test instead of waiting for a reviewer.

mod known;
mod scan;
mod shape;
