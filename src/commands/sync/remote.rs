//! What the computer has under the sync's folder: each file's size and an Adler-32 checksum
//! computed on the computer in one `exec-lua` (CC has no hash function, and reading every
//! file back would cost what pushing it costs), and `--pull`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::State;
use crate::commands::remote::{Failure, exit, transfer};

/// Size and checksum of a file.
pub type Sum = (u64, u32);

/// Adler-32 with the file's size, as [`SUMS_LUA`] computes it on the computer.
pub fn sum_of(bytes: &[u8]) -> Sum {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (bytes.len() as u64, (b << 16) | a)
}

/// Lists `ROOT` recursively as `name\tsize\tadler32` lines. It yields now and then so that
/// a large folder does not trip CC's "too long without yielding".
const SUMS_LUA: &str = r#"
local root = ...
local out, work = {}, 0
local function walk(dir, rel)
  if not fs.exists(dir) or not fs.isDir(dir) then return end
  for _, name in ipairs(fs.list(dir)) do
    local p = fs.combine(dir, name)
    local r = rel == "" and name or (rel .. "/" .. name)
    if fs.isDir(p) then
      walk(p, r)
    else
      local h = fs.open(p, "rb")
      local data = h and h.readAll() or ""
      if h then h.close() end
      local a, b = 1, 0
      for i = 1, #data do
        a = (a + string.byte(data, i)) % 65521
        b = (b + a) % 65521
      end
      out[#out + 1] = r .. "\t" .. #data .. "\t" .. string.format("%d", b * 65536 + a)
      work = work + #data
      if work > 200000 then work = 0 os.queueEvent("trapdesk_sync") os.pullEvent("trapdesk_sync") end
    end
  end
end
walk(root, "")
return table.concat(out, "\n")
"#;

/// The computer's files under the sync folder. An empty map when the computer cannot say
/// (then everything is pushed, which is correct if slower).
///
/// # Errors
/// Exit code 3 when the trapdesk is gone.
pub async fn sums(st: &State) -> Result<BTreeMap<String, Sum>, Failure> {
    let root = if st.remote_dir.is_empty() {
        "/"
    } else {
        &st.remote_dir
    };
    let code = format!(
        "return (function(...) {SUMS_LUA} end)({})",
        lua_string(root)
    );
    let reply = match st
        .conn
        .call_streaming(
            "exec-lua",
            json!({"traposId": st.computer, "code": code}),
            st.timeout,
            |_| {},
        )
        .await
    {
        Ok(r) => r,
        Err(f) if f.code == exit::INTERRUPTED => return Err(f),
        Err(f) => {
            super::say(&format!(
                "cannot compare with the computer ({}); pushing everything",
                f.message
            ));
            return Ok(BTreeMap::new());
        }
    };
    let listing = reply
        .data
        .get("returns")
        .and_then(|r| r.get(0))
        .and_then(|d| d.get("value"))
        .and_then(Value::as_str);
    let Some(listing) = listing.filter(|_| !reply.is_error) else {
        if reply.is_error {
            super::say(&format!(
                "cannot compare with {} ({}); pushing everything",
                st.computer,
                reply.failure("").message
            ));
        }
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for line in listing.lines() {
        let mut parts = line.split('\t');
        if let (Some(name), Some(size), Some(sum)) = (parts.next(), parts.next(), parts.next())
            && let (Ok(size), Ok(sum)) = (size.parse(), sum.parse())
            // The pieces of a put still going (or killed): not a file of the folder.
            && !name.ends_with(transfer::PART_SUFFIX)
        {
            out.insert(name.to_owned(), (size, sum));
        }
    }
    Ok(out)
}

pub use transfer::lua_string;

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
    fn adler_matches_the_reference() {
        // Adler-32 of "Wikipedia" is 0x11E60398.
        assert_eq!(sum_of(b"Wikipedia"), (9, 0x11E6_0398));
        assert_eq!(sum_of(b""), (0, 1));
    }

    #[test]
    fn lua_strings_escape_bytes() {
        assert_eq!(lua_string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(lua_string("é"), r#""\195\169""#);
    }
}
