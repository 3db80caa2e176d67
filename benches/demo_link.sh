#!/usr/bin/env bash
# `--demo N` link time and memory: starts `trapdesk --mcp-only --demo N` on free ports in a fresh
# data directory, polls the gateway's /health every 20 ms until it reports N computers linked
# and the demo's turtle and pocket computer (N + 2),
# and prints the time from spawn to then, the host's resident memory at that moment, its peak
# (VmHWM) and its resident memory after 5 s more of idling.
# Usage: benches/demo_link.sh [path/to/trapdesk] [N]   (defaults: ./target/release/trapdesk 100)
set -euo pipefail
bin=${1:-./target/release/trapdesk}
n=${2:-100}
data=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$data"' EXIT
start=$(date +%s%N)
"$bin" --mcp-only --demo "$n" --data-dir "$data" --secret bench \
  --gateway-bind "127.0.0.1:$port" --mcp-bind "127.0.0.1:$((port + 1))" 2>"$data/log" &
pid=$!
rss() { awk "/^$1:/ {print \$2}" "/proc/$pid/status"; }
linked=0
until [ "$linked" -ge "$((n + 2))" ]; do
  sleep 0.02
  linked=$(curl -s "http://127.0.0.1:$port/health" | sed -n 's/.*"computers":\([0-9]*\).*/\1/p')
  linked=${linked:-0}
  if [ $(( ($(date +%s%N) - start) / 1000000 )) -gt 60000 ]; then
    echo "only $linked of $((n + 2)) linked after 60 s" >&2
    exit 1
  fi
done
end=$(date +%s%N)
at=$(rss VmRSS)
sleep 5
echo "demo $n: all linked in $(((end - start) / 1000000)) ms; RSS $((at / 1024)) MiB then," \
  "peak $(( $(rss VmHWM) / 1024 )) MiB, $(( $(rss VmRSS) / 1024 )) MiB after 5 s idle"
