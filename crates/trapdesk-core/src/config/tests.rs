//! Settings from flags, environment and file.

use std::path::Path;

use super::*;

fn args(dir: &Path) -> HostArgs {
    HostArgs {
        data_dir: Some(dir.to_owned()),
        ..HostArgs::default()
    }
}

#[test]
fn generated_secret_is_stored_private_and_reused() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let none = |_: &'static str| None;
    let a = resolve_with_env(&args(dir.path()), &none)?;
    assert!(matches!(a.secret_source, SecretSource::Generated(_)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("secret"))?
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let b = resolve_with_env(&args(dir.path()), &none)?;
    assert_eq!(a.secret, b.secret);
    assert!(matches!(b.secret_source, SecretSource::Stored(_)));
    Ok(())
}

#[test]
fn policy_is_read_and_reloaded_from_the_same_file() -> Result<(), Box<dyn std::error::Error>> {
    use crate::policy::{Action, Decision, Party, Target};
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "[policy.default]\nagent = { write = \"deny\" }\n")?;
    let none = |_: &'static str| None;
    let s = resolve_with_env(&args(dir.path()), &none)?;
    assert_eq!(s.config_file.as_deref(), Some(file.as_path()));
    let t = Target {
        trapos_id: "1:",
        id: 1,
        label: None,
    };
    assert_eq!(
        s.policy
            .decide(Party::Agent("a"), t, Action::Write)
            .decision,
        Decision::Deny
    );
    std::fs::write(&file, "[policy.default]\nagent = { write = \"ask\" }\n")?;
    let p = reload_policy(&s)?;
    assert_eq!(
        p.decide(Party::Agent("a"), t, Action::Write).decision,
        Decision::Ask
    );
    std::fs::write(&file, "[policy.default]\nagent = { write = \"perhaps\" }\n")?;
    let e = reload_policy(&s)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("line 2") && e.contains("perhaps"), "{e}");
    Ok(())
}

#[test]
fn flags_beat_env_beat_file() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("config.toml"),
        "secret = \"from-the-file-0123\"\nmcp_bind = \"127.0.0.1:5000\"\nmax_message = 9000\n",
    )?;
    let env = |n: &'static str| match n {
        "SANDBOX_PASSWORD" => Some("from-the-env-01234".to_owned()),
        "MCP_PORT" => Some("6000".to_owned()),
        _ => None,
    };
    let s = resolve_with_env(&args(dir.path()), &env)?;
    assert_eq!(s.secret, "from-the-env-01234");
    assert_eq!(s.mcp_bind.port(), 6000);
    assert_eq!(s.max_message, 9000);
    let mut a = args(dir.path());
    a.secret = Some("from-the-flag-0123".into());
    a.mcp_bind = Some("127.0.0.1:7000".parse()?);
    let s = resolve_with_env(&a, &env)?;
    assert_eq!(s.secret, "from-the-flag-0123");
    assert_eq!(s.mcp_bind.port(), 7000);
    let no_env = |_: &'static str| None;
    assert_eq!(
        resolve_with_env(&args(dir.path()), &no_env)?.secret,
        "from-the-file-0123"
    );
    Ok(())
}

#[test]
fn bad_inputs_are_clear_errors() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("config.toml"), "nonsense = 1\n")?;
    let none = |_: &'static str| None;
    let e = resolve_with_env(&args(dir.path()), &none)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("nonsense"), "{e}");

    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("config.toml"),
        "max_queued = 3\n\n[policy.default]\nagent = { exec = \"allow\" }\n\n[[policy.rule]]\ncomputer = \"reactor*\"\nagent = { exec = \"nope\" }\n",
    )?;
    let e = resolve_with_env(&args(dir.path()), &none)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("line 8"), "{e}");
    assert!(
        e.contains("nope") && e.contains("`allow`, `ask`, `deny`"),
        "{e}"
    );

    let dir = tempfile::tempdir()?;
    let mut a = args(dir.path());
    a.mcp_bind = Some("0.0.0.0:4445".parse()?);
    assert!(matches!(
        resolve_with_env(&a, &none),
        Err(ConfigError::McpWithoutToken(_))
    ));
    Ok(())
}

fn error_for(toml: &str) -> Result<String, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("config.toml"), toml)?;
    let none = |_: &'static str| None;
    Ok(resolve_with_env(&args(dir.path()), &none)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default())
}

#[test]
fn toml_syntax_errors_name_the_line() -> Result<(), Box<dyn std::error::Error>> {
    let e = error_for("secret = \"a\"\nmax_message = = 3\n")?;
    assert!(e.contains("line 2, column"), "{e}");
    Ok(())
}

#[test]
fn nonsense_values_are_refused_with_the_range() -> Result<(), Box<dyn std::error::Error>> {
    let e = error_for("heartbeat_ms = 1\n")?;
    assert!(e.contains("heartbeat_ms = 1"), "{e}");
    assert!(e.contains("allowed 1000..=300000"), "{e}");
    let e = error_for("max_in_flight = 0\n")?;
    assert!(e.contains("allowed 1..=1024"), "{e}");
    let e = error_for("max_detached = 257\n")?;
    assert!(e.contains("allowed 0..=256"), "{e}");
    assert_eq!(
        error_for("heartbeat_ms = 5000\nsecret = \"x-long-enough-123\"\n")?,
        ""
    );
    Ok(())
}

#[test]
fn bind_addresses_take_host_names() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(parse_bind("localhost:4444")?, "127.0.0.1:4444".parse()?);
    assert_eq!(parse_bind("[::1]:9")?, "[::1]:9".parse()?);
    assert!(parse_bind("localhost").is_err_and(|e| e.contains("no port")));
    let e = error_for("gateway_bind = \"localhost\"\n")?;
    assert!(e.contains("gateway_bind"), "{e}");
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("config.toml"),
        "gateway_bind = \"localhost:4999\"\nsecret = \"x-long-enough-123\"\n",
    )?;
    let s = resolve_with_env(&args(dir.path()), &|_| None)?;
    assert_eq!(s.gateway_bind, "127.0.0.1:4999".parse()?);
    Ok(())
}

#[test]
fn weak_secrets_given_by_hand_are_refused_with_the_rule() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    let none = |_: &'static str| None;
    let refused = |a: &HostArgs, env: &dyn Fn(&'static str) -> Option<String>| {
        resolve_with_env(a, env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let mut a = args(dir.path());
    a.secret = Some("s3cret".into());
    let e = refused(&a, &none);
    assert!(e.contains("--secret is too weak"), "{e}");
    assert!(
        e.contains("6 characters") && e.contains("at least 16"),
        "{e}"
    );
    // Long but repetitive.
    a.secret = Some("abababababababababab".into());
    let e = refused(&a, &none);
    assert!(
        e.contains("2 of them different") && e.contains("at least 8"),
        "{e}"
    );
    a.secret = Some("correct-horse-battery".into());
    assert_eq!(refused(&a, &none), "");
    let env = |n: &'static str| (n == "SANDBOX_PASSWORD").then(|| "short".to_owned());
    assert!(refused(&args(dir.path()), &env).contains("SANDBOX_PASSWORD is too weak"));
    assert!(error_for("secret = \"aaaaaaaaaaaaaaaaaaaa\"\n")?.contains("config file's secret"));
    // Generated ones always pass.
    for _ in 0..1000 {
        assert!(strong_enough(&generate_secret()).is_ok());
    }
    Ok(())
}
