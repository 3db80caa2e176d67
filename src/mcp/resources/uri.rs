//! Resource URIs: percent-encoding of traposIds and paths, and reading a URI back into the
//! computer and path it names (both forms of a traposId accepted).

use super::PREFIX;

/// What a resource URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Files {
        computer: String,
        path: String,
    },
    Screen {
        computer: String,
    },
    /// A monitor attached to the computer, by its peripheral name.
    Monitor {
        computer: String,
        monitor: String,
    },
}

/// Bytes kept as they are in a URI part; everything else is percent-encoded.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn encode(s: &str, keep: impl Fn(u8) -> bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A traposId as one URI segment: `:` stays (a path segment may hold it), a label's `/`,
/// spaces and the like are percent-encoded.
pub fn encode_id(trapos_id: &str) -> String {
    encode(trapos_id, |b| unreserved(b) || matches!(b, b':' | b'@'))
}

/// A path as `{+path}` expands it: `/` and the sub-delimiters stay; `%`, `?`, `#`, spaces
/// and non-ASCII are percent-encoded, so that the URI stays one path.
pub fn encode_path(path: &str) -> String {
    encode(path, |b| {
        unreserved(b)
            || matches!(
                b,
                b'/' | b':'
                    | b'@'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            )
    })
}

/// Undoes percent-encoding; `None` for a broken escape or bytes that are not UTF-8.
pub fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The URI of a computer's screen.
pub fn screen_uri(trapos_id: &str) -> String {
    format!("{PREFIX}{}/screen", encode_id(trapos_id))
}

/// The URI of a monitor's screen: its name one segment (a name's `/`, unusual, encoded).
pub fn monitor_uri(trapos_id: &str, monitor: &str) -> String {
    format!(
        "{PREFIX}{}/monitor/{}/screen",
        encode_id(trapos_id),
        encode(monitor, unreserved)
    )
}

/// The URI of a file on a computer.
pub fn file_uri(trapos_id: &str, path: &str) -> String {
    format!(
        "{PREFIX}{}/files/{}",
        encode_id(trapos_id),
        encode_path(path.trim_start_matches('/'))
    )
}

/// Reads a resource URI. The traposId may come encoded (`7%3Aminer`) or not (`7:miner`); a
/// label's `/` left unencoded is found too, by trying each place the id could end and
/// preferring one that `known` recognises.
///
/// # Errors
/// A sentence saying what a trapdesk URI looks like.
pub fn parse(uri: &str, known: impl Fn(&str) -> bool) -> Result<Target, String> {
    let shape = format!(
        "expected {PREFIX}{{traposId}}/files/{{path}}, {PREFIX}{{traposId}}/screen or {PREFIX}{{traposId}}/monitor/{{monitor}}/screen, got {uri:?}"
    );
    let rest = uri.strip_prefix(PREFIX).ok_or_else(|| shape.clone())?;
    let mut first: Option<Target> = None;
    for (i, _) in rest.match_indices('/').filter(|(i, _)| *i > 0) {
        let (raw_id, tail) = rest.split_at(i);
        let Some(computer) = decode(raw_id) else {
            continue;
        };
        let target = if tail == "/screen" {
            Target::Screen { computer }
        } else if let Some(path) = tail.strip_prefix("/files/") {
            let path = decode(path).ok_or_else(|| format!("{uri:?}: a broken %-escape"))?;
            Target::Files { computer, path }
        } else if let Some(name) = tail
            .strip_prefix("/monitor/")
            .and_then(|t| t.strip_suffix("/screen"))
            .filter(|n| !n.is_empty() && !n.contains('/'))
        {
            let monitor = decode(name).ok_or_else(|| format!("{uri:?}: a broken %-escape"))?;
            Target::Monitor { computer, monitor }
        } else {
            continue;
        };
        let id = match &target {
            Target::Files { computer, .. }
            | Target::Screen { computer }
            | Target::Monitor { computer, .. } => computer,
        };
        if known(id) {
            return Ok(target);
        }
        first.get_or_insert(target);
    }
    first.ok_or(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_paths_encode_what_would_break_the_uri() {
        assert_eq!(screen_uri("7:miner"), "trapdesk://computer/7:miner/screen");
        assert_eq!(
            screen_uri("8:a/b c"),
            "trapdesk://computer/8:a%2Fb%20c/screen"
        );
        assert_eq!(
            file_uri("7:miner", "/progs/a b#1.lua"),
            "trapdesk://computer/7:miner/files/progs/a%20b%231.lua"
        );
    }

    #[test]
    fn both_forms_of_an_id_read_the_same() {
        let none = |_: &str| false;
        let want = Target::Files {
            computer: "7:miner".into(),
            path: "progs/a b.lua".into(),
        };
        for uri in [
            "trapdesk://computer/7:miner/files/progs/a%20b.lua",
            "trapdesk://computer/7%3Aminer/files/progs/a%20b.lua",
            "trapdesk://computer/7%3aminer/files/progs/a b.lua",
        ] {
            assert_eq!(parse(uri, none), Ok(want.clone()), "{uri}");
        }
        assert_eq!(
            parse("trapdesk://computer/8:a%2Fb/screen", none),
            Ok(Target::Screen {
                computer: "8:a/b".into()
            })
        );
    }

    #[test]
    fn a_labels_slash_left_raw_is_found_by_the_computers_known() {
        let known = |id: &str| id == "8:a/b";
        assert_eq!(
            parse("trapdesk://computer/8:a/b/files/x/y", known),
            Ok(Target::Files {
                computer: "8:a/b".into(),
                path: "x/y".into()
            })
        );
        assert_eq!(
            parse("trapdesk://computer/8:a/b/screen", known),
            Ok(Target::Screen {
                computer: "8:a/b".into()
            })
        );
    }

    #[test]
    fn a_monitors_screen_reads_back() {
        let uri = monitor_uri("7:miner", "monitor_0");
        assert_eq!(uri, "trapdesk://computer/7:miner/monitor/monitor_0/screen");
        assert_eq!(
            parse(&uri, |_| false),
            Ok(Target::Monitor {
                computer: "7:miner".into(),
                monitor: "monitor_0".into()
            })
        );
        assert_eq!(
            monitor_uri("8:a/b", "top"),
            "trapdesk://computer/8:a%2Fb/monitor/top/screen"
        );
        // An empty name is no monitor (a label's raw `/` may still make it a terminal's URI).
        assert!(!matches!(
            parse("trapdesk://computer/7:miner/monitor//screen", |_| true),
            Ok(Target::Monitor { .. })
        ));
    }

    #[test]
    fn other_uris_are_refused_with_the_shape_expected() {
        for uri in [
            "file:///etc/passwd",
            "trapdesk://computer/7:miner",
            "trapdesk://computer//screen",
            "trapdesk://computer/7:miner/disk",
        ] {
            let got = parse(uri, |_| true);
            assert!(
                matches!(&got, Err(e) if e.contains("expected trapdesk://computer/")),
                "{uri}: {got:?}"
            );
        }
        assert!(decode("%zz").is_none() && decode("%e2%98").is_none());
    }
}
