//! What the computer has under the sync's folder: each file's size from `list-files`, and its
//! CRC-32 from `file-info` (computed on the computer: reading every file back would cost what
//! pushing it costs) where the local file has the same size; and `--pull`.

use std::collections::BTreeMap;

use serde_json::json;

use super::State;
use crate::commands::remote::{Failure, exit, transfer};
use trapdesk_proto::protocol::kind::{FileInfoAnswer, crc32};

/// Size and CRC-32 of a file. The computer's side has no CRC where the local file's size
/// differs: different sizes are different content whatever the sums, so it is not asked for.
pub type Sum = (u64, Option<u32>);

/// Size and CRC-32 of local bytes, as `file-info` computes them on the computer.
pub fn sum_of(bytes: &[u8]) -> Sum {
    (bytes.len() as u64, Some(crc32(bytes)))
}

/// Why the computer could not be compared with: said, and everything is pushed.
enum Gave {
    Up(String),
    Interrupted(Failure),
}

impl From<Failure> for Gave {
    fn from(f: Failure) -> Gave {
        if f.interrupted() {
            Gave::Interrupted(f)
        } else {
            Gave::Up(f.message)
        }
    }
}

/// The computer's files under the sync folder. An empty map when the computer cannot say
/// (then everything is pushed, which is correct if slower).
///
/// # Errors
/// Exit code 130 when interrupted.
pub async fn sums(st: &State) -> Result<BTreeMap<String, Sum>, Failure> {
    match walk(st).await {
        Ok(out) => Ok(out),
        Err(Gave::Interrupted(f)) => Err(f),
        Err(Gave::Up(why)) => {
            super::say(&format!(
                "cannot compare with {} ({why}); pushing everything",
                st.computer
            ));
            Ok(BTreeMap::new())
        }
    }
}

async fn info(st: &State, path: &str) -> Result<FileInfoAnswer, Gave> {
    let reply = st
        .conn
        .call_streaming(
            "file-info",
            json!({"traposId": st.computer, "path": path}),
            st.timeout,
            |_| {},
        )
        .await?;
    if reply.is_error {
        return Err(Gave::Up(reply.failure("").message));
    }
    serde_json::from_value(reply.data)
        .map_err(|e| Gave::Up(format!("its file-info answer is not one: {e}")))
}

async fn walk(st: &State) -> Result<BTreeMap<String, Sum>, Gave> {
    let root = if st.remote_dir.is_empty() {
        "/"
    } else {
        &st.remote_dir
    };
    let mut out = BTreeMap::new();
    let top = info(st, root).await?;
    if !top.exists || !top.is_dir {
        return Ok(out);
    }
    // Directories to list, by their name relative to the root ("" for the root).
    let mut dirs = vec![String::new()];
    while let Some(rel_dir) = dirs.pop() {
        let dir = transfer::join(root, &rel_dir);
        let (_, entries) = transfer::list(&st.conn, &st.computer, &dir, st.timeout).await?;
        for e in entries {
            let rel = transfer::join(&rel_dir, &e.name);
            if e.dir {
                dirs.push(rel);
                continue;
            }
            // The pieces of a put still going (or killed): not a file of the folder.
            if rel.ends_with(transfer::PART_SUFFIX) {
                continue;
            }
            let same_size = st
                .tree
                .local(&rel)
                .and_then(|p| std::fs::metadata(p).ok())
                .is_some_and(|m| m.is_file() && m.len() == e.size);
            let crc = if same_size {
                info(st, &transfer::join(root, &rel)).await?.crc32
            } else {
                None
            };
            out.insert(rel, (e.size, crc));
        }
    }
    Ok(out)
}

/// `--pull`: copies down the computer's files that differ from the local ones. Names that
/// would leave the folder or that the sync ignores are skipped.
///
/// # Errors
/// Exit code 3 when the computer cannot be reached.
pub async fn pull(st: &mut State) -> Result<(), Failure> {
    let remote = sums(st).await?;
    let mut n = 0;
    for (rel, sum) in remote {
        let Some(local) = st.tree.local(&rel) else {
            super::say(&format!("{rel}: not a plain name; not pulled"));
            continue;
        };
        if st.tree.ignored(&rel, false) {
            continue;
        }
        if std::fs::read(&local).is_ok_and(|b| sum_of(&b) == sum) {
            continue;
        }
        let bytes = transfer::get(&st.conn, &st.computer, &st.remote(&rel), st.timeout).await?;
        crate::commands::remote::write_atomically(&local, &bytes).map_err(|e| {
            Failure::new(
                exit::FAILED,
                format!("cannot write {}: {e}", local.display()),
            )
        })?;
        st.sent.insert(rel.clone(), super::scan::hash(&bytes));
        n += 1;
    }
    super::say(&format!("pulled {n} files from {}", st.computer));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_size_and_zlibs_crc32() {
        assert_eq!(sum_of(b"123456789"), (9, Some(0xCBF4_3926)));
        assert_eq!(sum_of(b""), (0, Some(0)));
        // A computer's file whose CRC was not asked for never equals a local one.
        assert_ne!(sum_of(b"abc"), (3, None));
    }
}
