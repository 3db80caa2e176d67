//! The file tools (docs/mcp.md, "Tools"): `write-file`, `read-file`, `list-files`,
//! `move-file`, `delete-file`, `make-dir` and `file-info`, with a router of their own. Each
//! outcome names its path, and a refusal the computer gave a code says it first.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use serde_json::{Map, Value, json};

use super::super::convert::*;
use super::super::params::*;
use super::super::results::Outcome;
use super::super::{TrapdeskMcp, schemas};
use super::ToolResult;
use trapdesk_core::session::{RequestSpec, Status};
use trapdesk_proto::protocol::kind;

#[tool_router(router = files_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "write-file",
        title = "Write a file on a computer",
        description = "Write a file on a computer atomically, creating missing directories. A default disk holds 1,000,000 bytes (each file or folder at least 500): a write that does not fit is refused untouched (no_space, with needed and free); a replaced file is kept until the new one is whole, and if both cannot fit the write is refused (no_space_to_replace, neededInPlace) unless inPlace.",
        annotations(title = "Write a file on a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Written>()
    )]
    async fn write_file(
        &self,
        Parameters(p): Parameters<WriteFile>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let encoding = p.encoding.unwrap_or_default();
        let args = json!({"traposId": p.trapos_id, "path": p.path, "encoding": encoding_name(encoding),
            "append": p.append, "inPlace": p.in_place, "content": format!("<{} chars>", p.content.len())});
        let rec = self.begin(&ctx, "write-file", Some(&p.trapos_id), args);
        let bytes = match decode_content(&p.content, encoding) {
            Ok(b) => b,
            Err(e) => {
                let mut extra = Map::new();
                extra.insert("path".into(), json!(p.path));
                let outcome = Outcome::failure("bad_content", &e, extra);
                return Ok(self.end(rec, Status::Failed, outcome));
            }
        };
        let written = bytes.len() as u64;
        let payload = kind::WriteFile {
            path: p.path.clone(),
            content: bytes,
            append: p.append == Some(true),
            in_place: p.in_place == Some(true),
        };
        let ran = self
            .run(&ctx, &rec, &p.trapos_id, RequestSpec::of(payload))
            .await;
        let path = p.path.clone();
        let (status, mut outcome) = outcome_of(ran, &format!("write {}", p.path), |d| {
            let n = d.get("bytes").and_then(Value::as_u64).unwrap_or(written);
            format!("wrote {n} bytes to {path}")
        });
        if let Some(obj) = outcome.data.as_object_mut() {
            obj.entry("path").or_insert(json!(p.path));
            if let Some(v) = obj.remove("neededInPlace") {
                // An older client counted a shrinking file's cost in place below zero (the
                // bytes it frees): what a write needs is never less than nothing.
                let n = v.as_f64().map_or(0, |n| n.max(0.0) as u64);
                obj.insert("neededInPlace".into(), json!(n));
            }
        }
        Ok(self.end(rec, status, coded(outcome)))
    }

    #[tool(
        name = "read-file",
        title = "Read a file on a computer",
        description = "Read a file on a computer: content is UTF-8 text when the file is valid UTF-8, else base64 (encoding says which). A larger file comes in pieces: offset, bytes, total and nextOffset say where this one is.",
        annotations(title = "Read a file on a computer", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::ReadPiece>()
    )]
    async fn read_file(
        &self,
        Parameters(p): Parameters<ReadFile>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "path": p.path, "offset": p.offset, "length": p.length});
        let rec = self.begin(&ctx, "read-file", Some(&p.trapos_id), args);
        // Ask only for the page this result can carry: the computer seeks and reads that much
        // (a client before paged reads ignores both and sends the whole file).
        let budget = super::super::results::json_budget(self.max_result_bytes, &p.path);
        let page = super::super::files::page_len(budget);
        let spec = RequestSpec::of(kind::ReadFile {
            path: p.path.clone(),
            offset: Some(p.offset.unwrap_or(0)),
            length: Some(p.length.map_or(page, |l| l.min(page))),
        });
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let (status, mut outcome) = outcome_of(ran, &format!("read {}", p.path), |_| String::new());
        if !outcome.is_error {
            outcome = super::super::files::piece(outcome.data, &p.path, p.offset, p.length, budget);
        } else if let Some(obj) = outcome.data.as_object_mut() {
            // A failed read says its error alone (a client before 0.3 sent an empty content
            // and `bytes: 0` beside it, which read as an empty file).
            for k in ["content", "encoding", "bytes"] {
                obj.remove(k);
            }
        }
        Ok(self.end(rec, status, coded(outcome)))
    }

    #[tool(
        name = "list-files",
        title = "List a directory on a computer",
        description = "List a directory on a computer: name, dir and size of each entry.",
        annotations(title = "List a directory on a computer", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Listed>()
    )]
    async fn list_files(
        &self,
        Parameters(p): Parameters<ListFiles>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let path = p.path.unwrap_or_else(|| "/".to_owned());
        let args = json!({"traposId": p.trapos_id, "path": path});
        let rec = self.begin(&ctx, "list-files", Some(&p.trapos_id), args);
        let spec = RequestSpec::of(kind::ListFiles { path: path.clone() });
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let (status, mut outcome) = outcome_of(ran, &format!("list {path}"), |d| {
            let n = d
                .get("entries")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            format!("{} in {path}", plural(n, "entry", "entries"))
        });
        if let Some(obj) = outcome.data.as_object_mut() {
            obj.entry("path").or_insert(json!(path));
        }
        Ok(self.end(rec, status, coded(outcome)))
    }

    #[tool(
        name = "move-file",
        title = "Move a file on a computer",
        description = "Move or rename a file or directory on a computer (missing directories are created). Refusal codes: not_found, exists, is_dir, read_only, no_space, bad_path (a path leaving the computer's root).",
        annotations(title = "Move a file on a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Changed>()
    )]
    async fn move_file(
        &self,
        Parameters(p): Parameters<MoveFile>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args =
            json!({"traposId": p.trapos_id, "from": p.from, "to": p.to, "overwrite": p.overwrite});
        let rec = self.begin(&ctx, "move-file", Some(&p.trapos_id), args);
        let spec = RequestSpec::of(kind::MoveFile {
            from: p.from.clone(),
            to: p.to.clone(),
            overwrite: p.overwrite == Some(true),
        });
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let (from, to) = (p.from.clone(), p.to.clone());
        let (status, mut outcome) = outcome_of(ran, &format!("move {from}"), |_| {
            format!("moved {from} to {to}")
        });
        if let Some(obj) = outcome.data.as_object_mut() {
            obj.entry("from").or_insert(json!(p.from));
            obj.entry("to").or_insert(json!(p.to));
        }
        Ok(self.end(rec, status, coded(outcome)))
    }

    #[tool(
        name = "delete-file",
        title = "Delete a file on a computer",
        description = "Delete a file or an empty directory on a computer. Nothing there is not an error (deleted: false). Refusal codes: not_empty, read_only, bad_path.",
        annotations(title = "Delete a file on a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Changed>()
    )]
    async fn delete_file(
        &self,
        Parameters(p): Parameters<OnePath>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "path": p.path});
        let rec = self.begin(&ctx, "delete-file", Some(&p.trapos_id), args);
        let spec = RequestSpec::of(kind::DeleteFile {
            path: p.path.clone(),
        });
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let path = p.path.clone();
        let (status, outcome) = outcome_of(ran, &format!("delete {path}"), |d| {
            match d.get("deleted").and_then(Value::as_bool) {
                Some(false) => format!("{path}: nothing to delete"),
                _ => format!("deleted {path}"),
            }
        });
        Ok(self.end(rec, status, with_path(outcome, &p.path)))
    }

    #[tool(
        name = "make-dir",
        title = "Make a directory on a computer",
        description = "Make a directory, and any missing parents, on a computer. One that exists is not an error (created: false). Refusal codes: exists (a file in the way), read_only, no_space, bad_path.",
        annotations(title = "Make a directory on a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Changed>()
    )]
    async fn make_dir(
        &self,
        Parameters(p): Parameters<OnePath>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "path": p.path});
        let rec = self.begin(&ctx, "make-dir", Some(&p.trapos_id), args);
        let spec = RequestSpec::of(kind::MakeDir {
            path: p.path.clone(),
        });
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let path = p.path.clone();
        let (status, outcome) = outcome_of(ran, &format!("make {path}"), |d| {
            match d.get("created").and_then(Value::as_bool) {
                Some(false) => format!("{path} exists already"),
                _ => format!("made {path}"),
            }
        });
        Ok(self.end(rec, status, with_path(outcome, &p.path)))
    }

    #[tool(
        name = "file-info",
        title = "Look at a file on a computer",
        description = "Whether a path exists on a computer, isDir, size, modified (ms since the epoch), readOnly, and a file's CRC-32 (IEEE, as zlib's) computed there: checks a transfer without reading it back.",
        annotations(title = "Look at a file on a computer", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::FileInfo>()
    )]
    async fn file_info(
        &self,
        Parameters(p): Parameters<OnePath>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "path": p.path});
        let rec = self.begin(&ctx, "file-info", Some(&p.trapos_id), args);
        let spec = RequestSpec::of(kind::FileInfo {
            path: p.path.clone(),
        });
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let path = p.path.clone();
        let (status, outcome) = outcome_of(ran, &format!("look at {path}"), |d| {
            let answer: kind::FileInfoAnswer =
                serde_json::from_value(d.clone()).unwrap_or_default();
            match (answer.exists, answer.is_dir, answer.crc32) {
                (false, _, _) => format!("{path}: no such file"),
                (true, true, _) => format!("{path}: a directory"),
                (true, false, Some(crc)) => {
                    format!("{path}: {} bytes, crc32 {crc:08x}", answer.size)
                }
                (true, false, None) => format!("{path}: {} bytes", answer.size),
            }
        });
        Ok(self.end(rec, status, with_path(outcome, &p.path)))
    }
}

/// An outcome that names its path, as every file tool's does.
fn with_path(mut outcome: Outcome, path: &str) -> Outcome {
    if let Some(obj) = outcome.data.as_object_mut() {
        obj.entry("path").or_insert(json!(path));
    }
    coded(outcome)
}

/// A refusal the computer gave a `code` (`not_found`, `exists`, `read_only`, `no_space`,
/// `bad_path`, `is_dir`, `not_dir`, `not_empty`: lua/apis/files.lua) says it first, so that
/// the first line alone tells the cases apart. One it gave none (a read, a listing, or a
/// client before the codes) gets the code its message's words name, else `file_error`: every
/// file refusal reads `error: {code, message}`.
fn coded(mut outcome: Outcome) -> Outcome {
    if !outcome.is_error {
        return outcome;
    }
    if let Some(obj) = outcome.data.as_object_mut()
        && !obj.contains_key("code")
        && let Some(Value::String(message)) = obj.get("error")
    {
        let code = file_code(message);
        obj.insert("code".into(), json!(code));
    }
    if let Some(code) = outcome.data.get("code").and_then(Value::as_str)
        && !outcome.line.starts_with(code)
    {
        outcome.line = format!("{code}: {}", outcome.line);
    }
    outcome
}

/// The code CC's words name (the table lua/apis/files.lua reads refusals with), or
/// `file_error` for a message CC words otherwise.
fn file_code(message: &str) -> &'static str {
    const CODES: [(&str, &str); 9] = [
        ("Invalid Path", "bad_path"),
        ("No such file", "not_found"),
        ("No such directory", "not_found"),
        ("File exists", "exists"),
        ("Access denied", "read_only"),
        ("Out of space", "no_space"),
        ("Is a directory", "is_dir"),
        ("Not a directory", "not_dir"),
        ("Directory not empty", "not_empty"),
    ];
    CODES
        .iter()
        .find(|(words, _)| message.contains(words))
        .map_or("file_error", |(_, code)| code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal without a code gets the one its words name, or `file_error`.
    #[test]
    fn every_file_refusal_has_a_code() {
        let refusal = |error: &str| {
            let data = json!({"ok": false, "error": error, "path": "a"});
            coded(Outcome::error(format!("read a failed: {error}"), data))
        };
        let o = refusal("No such file: a");
        assert_eq!(o.data["code"], "not_found");
        assert!(o.line.starts_with("not_found: "), "{}", o.line);
        assert_eq!(refusal("Is a directory: a").data["code"], "is_dir");
        assert_eq!(refusal("the disk said no").data["code"], "file_error");
        // A code the computer gave is kept; a success gets none.
        let data = json!({"ok": false, "error": "No such file: /a", "code": "exists"});
        assert_eq!(coded(Outcome::error("x", data)).data["code"], "exists");
        let o = coded(Outcome::ok("read a", json!({"ok": true})));
        assert!(o.data.get("code").is_none());
    }
}
