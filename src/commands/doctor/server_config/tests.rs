//! Unit tests of `src/commands/doctor/server_config.rs`: which file counts, and what a file
//! says for the gateway.

use super::*;

#[test]
fn level_name_comes_from_server_properties() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("server.properties"),
        "#Minecraft server properties\nlevel-name=survival\nmotd=hi\n",
    )?;
    let w = dir.path().join("survival").join("serverconfig");
    std::fs::create_dir_all(&w)?;
    std::fs::write(w.join(FILE), "")?;
    // Another world folder beside it is not the one the server runs.
    let other = dir.path().join("world").join("serverconfig");
    std::fs::create_dir_all(&other)?;
    std::fs::write(other.join(FILE), "")?;
    let mut s = Search::default();
    locate(dir.path(), &mut s);
    assert_eq!(s.found, vec![(w.join(FILE), Role::World)]);
    Ok(())
}

#[test]
fn without_a_world_file_the_instance_then_the_template_counts() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let d = dir.path().join("defaultconfigs");
    std::fs::create_dir_all(&d)?;
    std::fs::write(d.join(FILE), "")?;
    let mut s = Search::default();
    locate(dir.path(), &mut s);
    assert_eq!(s.found, vec![(d.join(FILE), Role::Template)]);
    let c = dir.path().join("config");
    std::fs::create_dir_all(&c)?;
    std::fs::write(c.join(FILE), "")?;
    let mut s = Search::default();
    locate(dir.path(), &mut s);
    assert_eq!(s.found, vec![(c.join(FILE), Role::Instance)]);
    Ok(())
}

#[test]
fn a_world_without_its_own_file_uses_the_instances() -> std::io::Result<()> {
    // Single player on NeoForge 1.21: .minecraft/config/ holds the live file.
    let dir = tempfile::tempdir()?;
    let world = dir.path().join("saves").join("New World");
    std::fs::create_dir_all(&world)?;
    std::fs::write(world.join("level.dat"), "")?;
    let c = dir.path().join("config");
    std::fs::create_dir_all(&c)?;
    std::fs::write(c.join(FILE), "")?;
    let mut s = Search::default();
    locate(&world, &mut s);
    assert_eq!(s.found, vec![(c.join(FILE), Role::Instance)]);
    Ok(())
}

#[test]
fn a_missing_rule_list_means_ccs_defaults() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let f = dir.path().join(FILE);
    std::fs::write(&f, "[http]\nenabled = true\n")?;
    let cfg = read(&f).map_err(std::io::Error::other)?;
    assert!(cfg.default_rules);
    let gw = Target {
        domain: "127.0.0.1".into(),
        addr: SocketAddr::from(([127, 0, 0, 1], 4444)),
        from: "this machine",
    };
    let v = check(&cfg, &[gw], None);
    assert!(!v.gateway_ok);
    assert_eq!(
        v.advice,
        Some(Advice::InsertAbove("rule 1 (host = \"$private\")".into()))
    );
    Ok(())
}

#[test]
fn a_websocket_limit_below_the_clients_is_a_warning() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let f = dir.path().join(FILE);
    let gw = Target {
        domain: "127.0.0.1".into(),
        addr: SocketAddr::from(([127, 0, 0, 1], 4444)),
        from: "this machine",
    };
    for (limit, warned) in [(65536, true), (-1, true), (0, false), (131072, false)] {
        // The limit is on the catch-all rule, after the allow: it still applies, since
        // each option comes from the first matching rule that sets it.
        std::fs::write(
            &f,
            format!(
                "[[http.rules]]\nhost = \"127.0.0.1\"\nport = 4444\naction = \"allow\"\n\
                 [[http.rules]]\nhost = \"*\"\naction = \"allow\"\nmax_websocket_message = {limit}\n"
            ),
        )?;
        let cfg = read(&f).map_err(std::io::Error::other)?;
        let v = check(&cfg, std::slice::from_ref(&gw), None);
        assert!(v.gateway_ok);
        let w = v
            .warnings
            .iter()
            .any(|w| w.contains("max_websocket_message"));
        assert_eq!(w, warned, "{limit}: {:?}", v.warnings);
    }
    Ok(())
}
