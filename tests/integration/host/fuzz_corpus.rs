//! The cargo-fuzz seed corpus (`fuzz/corpus/<target>/`) as plain tests, so every input the fuzz
//! targets were seeded with (and every crash they found, once added there) is checked on stable
//! in every `cargo test`. The checks are the fuzz targets' own (`fuzz/fuzz_targets/checks.rs`).
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "../../../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::Path;

fn corpus(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| check(&data));
        assert!(r.is_ok(), "{target}: {} fails", path.display());
        // Prefixes too: a frame cut anywhere must be as harmless as a whole one. Every 7th
        // byte, but at most about 512 cuts a seed: each cut is parsed whole, so the 114 KB
        // detached-run flood cut every 7 bytes parsed 0.9 GB and took minutes of a CI run.
        for cut in (0..data.len()).step_by(7.max(data.len() / 512)) {
            check(&data[..cut]);
        }
        n += 1;
    }
    assert!(n >= 4, "{target}: only {n} seeds in {}", dir.display());
}

#[test]
fn frame_corpus() {
    corpus("frame", checks::frame);
}

#[test]
fn fragments_corpus() {
    corpus("fragments", checks::fragments);
}

#[test]
fn descriptor_corpus() {
    corpus("descriptor", checks::descriptor);
}

#[test]
fn hello_corpus() {
    corpus("hello", checks::hello);
}

#[test]
fn label_corpus() {
    corpus("label", checks::label);
}

#[test]
fn binary_frame_corpus() {
    corpus("binary_frame", checks::binary_frame);
}
