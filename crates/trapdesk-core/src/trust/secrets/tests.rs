//! Unit tests of the computers' secrets in `trust/secrets/mod.rs`.

use super::*;
use crate::config::{SecretSource, Settings};
use crate::trust::stamp::Stamp;
use std::time::Duration;

fn settings(dir: &Path) -> Settings {
    Settings {
        data_dir: dir.to_owned(),
        secret: "stale".into(),
        secret_source: SecretSource::Stored(dir.join("secret")),
        ..Settings::default()
    }
}

#[test]
fn own_secrets_replace_the_shared_one_for_their_computer() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    let shared = rotate(dir.path())?;
    let settings = settings(dir.path());
    assert!(accepts(&settings, 7, Some("miner"), &shared));
    let miner = add(dir.path(), "miner")?;
    let farm = add(dir.path(), "12")?;
    assert!(accepts(&settings, 7, Some("miner"), &miner));
    assert!(!accepts(&settings, 7, Some("miner"), &shared));
    assert!(
        !accepts(&settings, 7, Some("miner"), &farm),
        "another's secret"
    );
    assert!(accepts(&settings, 12, None, &farm));
    assert!(!accepts(&settings, 3, None, &farm), "another's secret");
    assert!(accepts(&settings, 3, None, &shared));
    let stored = std::fs::read_to_string(dir.path().join(FILE))?;
    assert!(!stored.contains(&miner) && !stored.contains(&farm));
    let new = rotate(dir.path())?;
    assert!(!accepts(&settings, 3, None, &shared), "rotated out");
    assert!(accepts(&settings, 3, None, &new));
    Ok(())
}

#[test]
fn enrolment_binds_an_id_pending_then_firm() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let shared = rotate(dir.path())?;
    let s = Secrets::new(&settings(dir.path()));
    assert_eq!(s.check(7, Some("miner"), &shared, true), Verdict::Enrol);
    // A client that cannot enrol links unbound, and binds nothing.
    assert_eq!(s.check(8, None, &shared, false), Verdict::Shared);
    let e = enrol(dir.path(), 7, Some("miner"))?.map_err(|r| r.message())?;
    assert_eq!(e.secret.len(), 20);
    let text = std::fs::read_to_string(dir.path().join(FILE))?;
    assert!(!text.contains(&e.secret), "only the hash is kept");
    // Pending: the own secret links (and makes it firm), the shared one re-enrols.
    assert_eq!(
        s.check(7, Some("miner"), &e.secret, true),
        Verdict::Own { pending: true }
    );
    assert_eq!(s.check(7, Some("miner"), &shared, true), Verdict::Enrol);
    assert_eq!(s.check(7, Some("miner"), &shared, false), Verdict::Shared);
    assert!(confirm(dir.path(), 7, &e.secret_sha256)?);
    assert!(!confirm(dir.path(), 7, &e.secret_sha256)?, "already firm");
    assert_eq!(
        s.check(7, Some("miner"), &e.secret, true),
        Verdict::Own { pending: false }
    );
    // Firm: the shared secret no longer links id 7, whatever the hello or label says.
    let bound = Verdict::Refused(Refusal::Bound {
        computer: "7".into(),
    });
    assert_eq!(s.check(7, Some("miner"), &shared, true), bound);
    assert_eq!(s.check(7, Some("other"), &shared, false), bound);
    assert_eq!(
        s.check(7, None, "guess", true),
        Verdict::Refused(Refusal::Wrong)
    );
    assert!(
        Refusal::Bound {
            computer: "7".into()
        }
        .message()
        .contains("trapdesk secret forget 7")
    );
    // Its own secret is no other computer's.
    assert_eq!(
        s.check(9, None, &e.secret, true),
        Verdict::Refused(Refusal::Wrong)
    );
    // A second enrolment of a firm id is refused under the lock.
    assert!(matches!(
        enrol(dir.path(), 7, None)?,
        Err(Refusal::Bound { .. })
    ));
    // Forget (by the label it enrolled with) lets it enrol again.
    let gone = forget(dir.path(), "miner")?;
    assert_eq!(gone.len(), 1);
    assert_eq!(s.check(7, Some("miner"), &shared, true), Verdict::Enrol);
    assert!(matches!(
        forget(dir.path(), "7"),
        Err(SecretError::Unknown { .. })
    ));
    Ok(())
}

#[test]
fn a_re_enrolment_replaces_the_pending_secret() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let shared = rotate(dir.path())?;
    let s = Secrets::new(&settings(dir.path()));
    let first = enrol(dir.path(), 3, None)?.map_err(|r| r.message())?;
    // The welcome was lost: the computer comes back with the shared secret.
    let second = enrol(dir.path(), 3, None)?.map_err(|r| r.message())?;
    assert_ne!(first.secret, second.secret);
    assert_eq!(
        s.check(3, None, &first.secret, true),
        Verdict::Refused(Refusal::Wrong)
    );
    assert!(
        !confirm(dir.path(), 3, &first.secret_sha256)?,
        "a stale enrolled"
    );
    assert_eq!(
        s.check(3, None, &second.secret, true),
        Verdict::Own { pending: true }
    );
    assert_eq!(list(dir.path())?.len(), 1);
    let _ = shared;
    Ok(())
}

#[test]
fn closed_enrolment_links_no_new_id_but_bound_ones() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let shared = rotate(dir.path())?;
    let s = Secrets::new(&settings(dir.path()));
    let e = enrol(dir.path(), 1, None)?.map_err(|r| r.message())?;
    confirm(dir.path(), 1, &e.secret_sha256)?;
    let pending = enrol(dir.path(), 2, None)?.map_err(|r| r.message())?;
    assert!(set_enrolment(dir.path(), false)?);
    assert!(!set_enrolment(dir.path(), false)?, "no change");
    assert!(!enrolment_open(dir.path())?);
    let closed = Verdict::Refused(Refusal::EnrolmentClosed);
    assert_eq!(s.check(5, None, &shared, true), closed);
    assert_eq!(s.check(5, None, &shared, false), closed);
    assert_eq!(s.check(2, None, &shared, true), closed, "pending, closed");
    assert_eq!(
        s.check(2, None, &pending.secret, true),
        Verdict::Own { pending: true }
    );
    assert_eq!(
        s.check(1, None, &e.secret, true),
        Verdict::Own { pending: false }
    );
    assert!(matches!(
        enrol(dir.path(), 5, None)?,
        Err(Refusal::EnrolmentClosed)
    ));
    assert!(Refusal::EnrolmentClosed.message().contains("enrol on"));
    assert!(set_enrolment(dir.path(), true)?);
    assert_eq!(s.check(5, None, &shared, true), Verdict::Enrol);
    Ok(())
}

#[test]
fn the_file_is_read_again_only_when_it_changed() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let shared = rotate(dir.path())?;
    let s = Secrets::new(&settings(dir.path()));
    assert_eq!(s.check(1, None, &shared, true), Verdict::Enrol);
    let before = s.store.get(|_| Err::<Store, ()>(()));
    assert!(before.is_ok(), "cached: no read");
    add(dir.path(), "1")?;
    assert!(
        s.store.get(|_| Err::<Store, ()>(())).is_err(),
        "changed: read"
    );
    // Hellos that change nothing write nothing.
    let stamp = Stamp::of(&dir.path().join(FILE));
    for _ in 0..3 {
        let _ = s.check(1, None, &shared, true);
        let _ = s.check(2, None, &shared, false);
    }
    assert_eq!(Stamp::of(&dir.path().join(FILE)), stamp);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(FILE))?
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    Ok(())
}

#[test]
fn a_relabel_is_judged_only_when_it_brings_another_binding()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let shared = rotate(dir.path())?;
    let s = Secrets::new(&settings(dir.path()));
    let held = vec![crate::trust::hash(&shared)];
    let miner = add(dir.path(), "miner")?;
    // Onto a bound label with the shared secret: refused, as a hello would be.
    assert!(matches!(
        s.relabel(9, None, Some("miner"), &held),
        Err(Refusal::Bound { .. })
    ));
    // The label's own secret may take it; an unbound label is anyone's.
    let own = vec![crate::trust::hash(&miner)];
    assert_eq!(s.relabel(9, None, Some("miner"), &own), Ok(()));
    assert_eq!(s.relabel(9, None, Some("farm"), &held), Ok(()));
    // A rotation since it linked does not unlink an unbound computer on a relabel.
    rotate(dir.path())?;
    assert_eq!(s.relabel(9, Some("a"), Some("b"), &held), Ok(()));
    // A label CC could not have binds nothing, so `add` refuses it.
    assert!(matches!(
        add(dir.path(), &"x".repeat(33)),
        Err(SecretError::BadComputer(_))
    ));
    assert!(matches!(
        add(dir.path(), "a\u{1b}b"),
        Err(SecretError::BadComputer(_))
    ));
    Ok(())
}

#[test]
fn enrolment_stops_at_the_most_bindings_kept() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store {
        enrolment_closed: false,
        computers: (0..MAX_ENROLLED as u64)
            .map(|id| ComputerSecret {
                computer: id.to_string(),
                secret_sha256: "h".into(),
                pending: true,
                how: Some("enrolled".into()),
                label: None,
                since_ms: 0,
                ids: Vec::new(),
            })
            .collect(),
    };
    file::save(dir.path(), &store)?;
    let before = std::fs::read(dir.path().join(FILE))?;
    assert!(matches!(
        enrol(dir.path(), 1_000_000, None),
        Err(SecretError::Full {
            count: MAX_ENROLLED
        })
    ));
    assert_eq!(
        std::fs::read(dir.path().join(FILE))?,
        before,
        "not rewritten"
    );
    // An id already enrolled may still enrol again (its pending binding is replaced).
    assert!(enrol(dir.path(), 5, None)?.is_ok());
    assert_eq!(list(dir.path())?.len(), MAX_ENROLLED);
    Ok(())
}

#[test]
fn a_fresh_lock_waits_and_a_stale_one_is_taken() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let lock = dir.path().join(format!("{FILE}.lock"));
    std::fs::write(&lock, "")?;
    let t = std::thread::spawn({
        let lock = lock.clone();
        move || {
            std::thread::sleep(Duration::from_millis(100));
            let _ = std::fs::remove_file(lock);
        }
    });
    add(dir.path(), "4")?;
    let _ = t.join();
    assert!(!lock.exists());
    assert_eq!(list(dir.path())?.len(), 1);
    Ok(())
}
