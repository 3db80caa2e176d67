//! Unit tests of the MCP endpoint's credentials in `trust/agents.rs`.

use super::*;

#[test]
fn add_verify_remove() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    assert_eq!(verify(dir.path(), None), Verdict::Refused);
    let token = add(dir.path(), "claude-code")?;
    assert!(token.starts_with("td_") && token.len() == 43);
    let stored = std::fs::read_to_string(dir.path().join(FILE))?;
    assert!(!stored.contains(&token), "the token itself is never stored");
    assert!(stored.contains(&hash(&token)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(FILE))?
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(
        verify(dir.path(), Some(&token)),
        Verdict::Agent("claude-code".into())
    );
    assert_eq!(verify(dir.path(), None), Verdict::Refused);
    assert_eq!(verify(dir.path(), Some("td_wrong")), Verdict::Refused);
    assert!(matches!(
        add(dir.path(), "claude-code"),
        Err(AgentError::Exists(_))
    ));
    assert!(matches!(
        add(dir.path(), "bad name"),
        Err(AgentError::BadName(_))
    ));
    let other = add(dir.path(), "codex")?;
    assert_ne!(other, token);
    assert_eq!(list(dir.path())?.len(), 2);
    remove(dir.path(), "claude-code")?;
    assert_eq!(verify(dir.path(), Some(&token)), Verdict::Refused);
    assert_eq!(
        verify(dir.path(), Some(&other)),
        Verdict::Agent("codex".into())
    );
    let e = remove(dir.path(), "nobody").err().map(|e| e.to_string());
    assert!(e.unwrap_or_default().contains("codex"));
    Ok(())
}

/// The cached verifier sees every change the commands make, at the next request.
#[test]
fn verifier_follows_the_file() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let v = Verifier::new(dir.path());
    assert_eq!(v.verify(None), Verdict::Refused);
    let token = add(dir.path(), "claude-code")?;
    assert_eq!(v.verify(Some(&token)), Verdict::Agent("claude-code".into()));
    assert_eq!(v.verify(None), Verdict::Refused);
    // Same size, same second: a new token for the same name is told apart all the same.
    remove(dir.path(), "claude-code")?;
    let again = add(dir.path(), "claude-code")?;
    assert_eq!(v.verify(Some(&token)), Verdict::Refused);
    assert_eq!(v.verify(Some(&again)), Verdict::Agent("claude-code".into()));
    remove(dir.path(), "claude-code")?;
    assert_eq!(
        v.verify(Some(&again)),
        Verdict::Refused,
        "no agents left: nothing is open"
    );
    std::fs::remove_file(dir.path().join(FILE))?;
    assert_eq!(v.verify(None), Verdict::Refused);
    std::fs::write(dir.path().join(FILE), "not json")?;
    assert_eq!(v.verify(None), Verdict::Refused);
    Ok(())
}

/// The local token is made once, kept 0600, and read back the same by every client.
#[test]
fn local_token_is_made_once_and_private() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    assert_eq!(read_local(dir.path())?, None);
    let first = local_token(dir.path())?;
    assert!(first.starts_with("td_") && first.len() == 43);
    assert_eq!(local_token(dir.path())?, first, "kept, not made again");
    assert_eq!(read_local(dir.path())?, Some(first.clone()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(LOCAL_FILE))?
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // It is no named agent's token: it names nobody.
    assert_eq!(verify(dir.path(), Some(&first)), Verdict::Refused);
    Ok(())
}

/// The person token is made apart from the local token, as private, and the CLI's
/// credential finds it where `mcp-stdio`'s finds the local one.
#[test]
fn the_person_token_is_its_own_and_private() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    assert_eq!(read_person(dir.path())?, None);
    let local = local_token(dir.path())?;
    let person = person_token(dir.path())?;
    assert_ne!(local, person);
    assert_eq!(person_token(dir.path())?, person, "kept, not made again");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(PERSON_FILE))?
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let unset = "TRAPDESK_TEST_UNSET_TOKEN_VAR";
    let cli = Credential::person(&[unset], Some(dir.path()));
    let stdio = Credential::find(&[unset], Some(dir.path()));
    assert_eq!(cli.token(), Some(person.as_str()));
    assert_eq!(stdio.token(), Some(local.as_str()));
    Ok(())
}
