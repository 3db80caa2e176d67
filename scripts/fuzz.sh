#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60), then the seed corpus as tests.
#   scripts/fuzz.sh [SECONDS]
# cargo-fuzz needs a nightly toolchain (`rustup toolchain install nightly` and
# `cargo install cargo-fuzz`). Without one, only the corpus runs (as it does in `cargo test`),
# and the script says so: it never pretends to have fuzzed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
targets=(frame fragments descriptor hello label)
if cargo +nightly --version >/dev/null 2>&1 && cargo +nightly fuzz --version >/dev/null 2>&1; then
  for t in "${targets[@]}"; do
    echo "== fuzzing $t for ${secs}s"
    # New inputs go to work/ (first dir); the committed seeds in corpus/ are only read.
    mkdir -p "fuzz/work/$t"
    (cd fuzz && cargo +nightly fuzz run "$t" "work/$t" "corpus/$t" -- -max_total_time="$secs")
  done
else
  echo "fuzz.sh: no nightly toolchain with cargo-fuzz here; running the seed corpus only" >&2
fi
echo "== seed corpus as tests"
cargo test --test integration host::fuzz_corpus::
