//! The load harness itself runs: `examples/loadgen --quick` links a few scripted computers,
//! drives exec-lua through the session API and both MCP eras, links an idle crowd from a child
//! process and walks it with probe-computers, all with zero errors. It asserts correctness,
//! never speed (the speed is in BENCHMARKS.md).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

/// `cargo test` builds the examples next to the test binaries: target/<profile>/examples.
fn loadgen() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile
        .join("examples")
        .join(format!("loadgen{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn quick_load_run_has_zero_errors() {
    let bin = loadgen();
    assert!(bin.exists(), "{} not built", bin.display());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let bench = dir.path().join("BENCHMARKS.md");
    std::fs::write(&bench, "# Benchmarks\n\nkept\n").unwrap();
    let out = std::process::Command::new(&bin)
        .args(["--quick", "--json"])
        .arg(&json)
        .arg("--benchmarks")
        .arg(&bench)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["errors"], 0, "{v}");
    assert_eq!(v["linkStorm"]["computers"], 50);
    // The walk runs in both eras, and each saw every computer exactly once.
    let probes = v["probe"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "{v}");
    for p in probes {
        assert_eq!(p["missing"], 0, "{p}");
        assert_eq!(p["duplicates"], 0, "{p}");
        assert_eq!(p["walksMs"].as_array().unwrap().len(), 5, "{p}");
    }
    for era in v["mcp"].as_array().unwrap() {
        assert_eq!(era["concurrent"]["calls"], 200, "{era}");
        assert_eq!(era["concurrent"]["errors"], 0, "{era}");
    }
    let md = std::fs::read_to_string(&bench).unwrap();
    assert!(
        md.starts_with("# Benchmarks\n\nkept\n") && md.contains("<!-- loadgen:end -->"),
        "{md}"
    );
    // Regenerating replaces the section instead of adding a second one.
    let again = std::process::Command::new(&bin)
        .args(["--quick", "--benchmarks"])
        .arg(&bench)
        .output()
        .unwrap();
    assert!(again.status.success());
    let md = std::fs::read_to_string(&bench).unwrap();
    assert_eq!(md.matches("<!-- loadgen:begin -->").count(), 1, "{md}");
}
