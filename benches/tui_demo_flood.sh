#!/usr/bin/env bash
# Key-to-screen latency of the real console while a demo computer floods its output:
# `trapdesk --demo` under tmux at 120x36 runs a 1,000,000-line print loop; one key at a time is
# typed into the editor and the screen polled (every 5 ms) until it shows. Prints milliseconds
# per key. Usage: benches/tui_demo_flood.sh [path/to/trapdesk]   (default ./target/debug/trapdesk)
set -euo pipefail
bin=${1:-./target/debug/trapdesk}
sock=trapdesk-flood-$$
data=$(mktemp -d)
T="tmux -L $sock"
trap '$T kill-server 2>/dev/null; rm -rf "$data"' EXIT
$T -f /dev/null new-session -d -s m -x 120 -y 36 \
  "$bin --demo --data-dir $data --gateway-bind 127.0.0.1:0 --mcp-bind 127.0.0.1:0"
sleep 2
$T send-keys -t m -l 'for i=1,1000000 do print(i) if i % 100 == 0 then sleep(0) end end --'
$T send-keys -t m F5
sleep 1
for k in a b c d e f g h; do
  s=$(date +%s%N)
  $T send-keys -t m -l "$k"
  n=0
  until $T capture-pane -p -t m | grep -q -- "--[a-h]*$k "; do
    sleep 0.005; n=$((n + 1)); [ $n -gt 400 ] && break
  done
  e=$(date +%s%N)
  echo -n "$(((e - s) / 1000000)) "
done
echo "ms"
$T capture-pane -p -t m | sed -n 2,3p
