//! Unit tests of `trapdesk sync` in `src/commands/sync/mod.rs`.

use super::*;
use notify::event::{AccessKind, AccessMode, CreateKind, DataChange, EventKind, ModifyKind};

#[test]
fn reading_a_file_is_no_change_but_writing_it_is() {
    assert!(!changes_content(&EventKind::Access(AccessKind::Open(
        AccessMode::Any
    ))));
    assert!(!changes_content(&EventKind::Access(AccessKind::Close(
        AccessMode::Read
    ))));
    assert!(!changes_content(&EventKind::Access(AccessKind::Read)));
    assert!(changes_content(&EventKind::Access(AccessKind::Close(
        AccessMode::Write
    ))));
    assert!(changes_content(&EventKind::Modify(ModifyKind::Data(
        DataChange::Any
    ))));
    assert!(changes_content(&EventKind::Create(CreateKind::File)));
}
