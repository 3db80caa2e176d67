//! Unit tests of putting the client onto a computer's disk in `install.rs`.

use super::lua_quote;

#[test]
fn daemon_log_lines_become_link_status() {
    use super::link_status;
    assert_eq!(
        link_status("[17] linked as 9:scout").as_deref(),
        Some("linked as 9:scout")
    );
    assert_eq!(
        link_status("[17] host error auth_failed: wrong secret").as_deref(),
        Some("refused: wrong secret; pass the host's secret with --secret")
    );
    assert_eq!(
        link_status("[17] host error auth_failed: computer 7 is enrolled with its own secret; the shared secret no longer links it; on the host: trapdesk secret forget 7").as_deref(),
        Some("refused: computer 7 is enrolled with its own secret; the shared secret no longer links it; on the host: trapdesk secret forget 7")
    );
    assert_eq!(link_status("[17] link down (4001): auth_failed"), None);
    assert_eq!(
        link_status("[17] retrying in 58.1 s").as_deref(),
        Some("retrying in 58.1 s")
    );
    assert_eq!(link_status("[17] binary frame ignored"), None);
}

#[test]
fn a_reinstall_keeps_the_own_secret() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    super::install_client(dir.path(), "ws://h/gateway", "shared-secret-1234")?;
    assert_eq!(super::own_secret(dir.path()), None);
    // What the emulator's settings.save writes after an enrolment.
    std::fs::write(
        dir.path().join(".settings"),
        "{\n  [ \"sandbox.password\" ] = \"old\",\n  [ \"trapdesk.secret\" ] = \"own\\\"s\",\n}",
    )?;
    super::install_client(dir.path(), "ws://h/gateway", "shared-secret-1234")?;
    assert_eq!(super::own_secret(dir.path()).as_deref(), Some("own\"s"));
    let text = std::fs::read_to_string(dir.path().join(".settings"))?;
    assert!(
        text.contains("shared-secret-1234") && !text.contains("old"),
        "{text}"
    );
    Ok(())
}

#[test]
fn a_settings_file_is_parsed_not_run() {
    use super::serialized_string_field as field;
    let settings = b"{\n  [ \"a\" ] = { 1, true, { x = -2.5e3 } },\n  [ \"trapdesk.secret\" ] = \"s\\\"\\065\\\n\",\n  plain = 'x',\n}";
    assert_eq!(
        field(settings, "trapdesk.secret").as_deref(),
        Some("s\"A\n")
    );
    assert_eq!(field(settings, "plain").as_deref(), Some("x"));
    assert_eq!(field(b"{ [\"k\"] = os.execute(\"id\") }", "k"), None);
    assert_eq!(field(b"return { k = \"v\" }", "k"), None);
    let deep = format!(
        "{{ k = \"v\", d = {}{} }}",
        "{".repeat(100),
        "}".repeat(100)
    );
    assert_eq!(field(deep.as_bytes(), "k"), None);
}

#[test]
fn quotes_bytes_for_lua() {
    assert_eq!(lua_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\010\"");
}
