//! The Lua client's own spec files (`tests/lua/*_spec.lua`: JSON codec, base64, descriptors,
//! capture, the libsandbox scheduler, the daemon) pass inside the emulated computer, with the
//! client files exactly as the binary embeds them.
#![allow(clippy::unwrap_used, clippy::panic)]

use trapdesk::emu::{Computer, ComputerSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spec_passes_in_the_emulator() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (path, bytes) in trapdesk::lua_files::FILES {
        let dest = root.join("trapdesk").join(path);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, bytes).unwrap();
    }
    let specs_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lua");
    let mut specs: Vec<String> = std::fs::read_dir(&specs_dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with("_spec.lua"))
        .collect();
    specs.sort();
    assert!(specs.len() >= 4, "spec files missing: {specs:?}");
    std::fs::create_dir_all(root.join("specs")).unwrap();
    for s in &specs {
        std::fs::copy(specs_dir.join(s), root.join("specs").join(s)).unwrap();
    }
    let computer = Computer::spawn(
        ComputerSpec::new(1, Some("specs".into()), root.to_owned()),
        tokio::runtime::Handle::current(),
    )
    .unwrap();
    let mut failed = Vec::new();
    for s in &specs {
        let code = format!(
            r#"_G.ROOT = "/trapdesk/"
               local f = assert(loadfile("/specs/{s}"))
               f()"#
        );
        match computer.run_lua(&code).await {
            Ok(_) => {}
            Err(e) => failed.push(format!("{s}: {e}")),
        }
    }
    computer.shutdown();
    assert!(failed.is_empty(), "failed specs:\n{}", failed.join("\n"));
}
