#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, on node 22) against the
# built host: its server scenarios through a loopback proxy that adds the host's bearer token
# (the suite cannot send a header; the host has no mode without a credential), in the current
# release and the 2026-07-28 alpha, and its client scenarios against `trapdesk mcp-stdio`.
# Scenarios that do not apply are in scripts/conformance/expected-failures*.yml with the reason
# (docs/mcp.md, "The conformance suite"); any other failure, or one of those passing, fails.
#   scripts/conformance.sh [BIN]   (default target/debug/trapdesk; under a minute, plus ~45 s to install)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
bin="$(realpath "${1:-${TRAPDESK_BIN:-target/debug/trapdesk}}")"
here="$repo/scripts/conformance"
dir="$repo/target/conformance"
latest=0.1.16
alpha=0.2.0-alpha.12

mkdir -p "$dir"
if ! grep -qs "\"version\": \"$latest\"" "$dir/node_modules/conformance-latest/package.json" ||
  ! grep -qs "\"version\": \"$alpha\"" "$dir/node_modules/conformance-alpha/package.json" ||
  [ ! -x "$dir/node_modules/.bin/node" ]; then
  echo '{"name":"trapdesk-conformance","private":true}' >"$dir/package.json"
  timeout 300 npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    node@22.23.3 \
    "conformance-latest@npm:@modelcontextprotocol/conformance@$latest" \
    "conformance-alpha@npm:@modelcontextprotocol/conformance@$alpha"
fi
node="$dir/node_modules/.bin/node"
export TRAPDESK_BIN="$bin"
suite_latest="$dir/node_modules/conformance-latest/dist/index.js"
suite_alpha="$dir/node_modules/conformance-alpha/dist/index.js"

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The host, headless, on ephemeral ports; its start line names the MCP address.
"$bin" --mcp-only --gateway-bind 127.0.0.1:0 --mcp-bind 127.0.0.1:0 --data-dir "$work/data" \
  --secret conformance-secret-3q8z6w1k 2>"$work/host.log" </dev/null >/dev/null &
pids+=($!)
url=""
for _ in $(seq 300); do
  url="$(grep -o 'MCP http://[^ ]*/mcp' "$work/host.log" | head -1 | cut -d' ' -f2 || true)"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "conformance: the host printed no MCP address" >&2; cat "$work/host.log" >&2; exit 1; }

"$node" "$here/proxy.mjs" "$url" "$work/data/mcp-token" >"$work/proxy.log" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 100); do
  port="$(sed -n 's/^listening //p' "$work/proxy.log")"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "conformance: the proxy did not start" >&2; cat "$work/proxy.log" >&2; exit 1; }
proxied="http://127.0.0.1:$port/mcp"

# Each run's whole output goes to target/conformance/logs/; a failing run's tail is printed.
mkdir -p "$dir/logs"
status=0
n=0
run() {
  local what="$1" log
  shift
  n=$((n + 1))
  log="$dir/logs/$n.log"
  local t0=$SECONDS
  if timeout 120 "$@" >"$log" 2>&1; then
    echo "conformance: $what: as expected ($((SECONDS - t0)) s)"
  else
    tail -n 60 "$log" >&2
    echo "conformance: $what FAILED ($((SECONDS - t0)) s; whole output in $log)" >&2
    status=1
  fi
}
cd "$work"
run "server scenarios ($latest)" "$node" "$suite_latest" server --url "$proxied" \
  --expected-failures "$here/expected-failures.yml"
run "server scenarios ($alpha)" "$node" "$suite_alpha" server --url "$proxied" \
  --expected-failures "$here/expected-failures-alpha.yml"
run "server scenarios ($alpha, 2026-07-28 requirements)" "$node" "$suite_alpha" server \
  --url "$proxied" --requirements 2026-07-28 \
  --expected-failures "$here/expected-failures-2026-07-28.yml"
for scenario in initialize tools_call sse-retry; do
  run "client scenario $scenario (mcp-stdio)" "$node" "$suite_latest" client \
    --command "$node $here/client.mjs" --scenario "$scenario" --timeout 60000
done
exit "$status"
