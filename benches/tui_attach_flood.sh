#!/usr/bin/env bash
# Key-to-screen latency of the console attached over loopback (`trapdesk attach`) beside the
# host's own console, in the same run, each while a demo computer floods its output (the
# 1,000,000-line print loop of benches/tui_demo_flood.sh, sent with F5 from the console
# measured). Each sample is one key typed with `tmux send-keys` until `capture-pane` shows it
# in the editor, polled every 5 ms (tmux's own latency included). Prints the samples, the
# median and the largest of each, and the ratio of the medians.
# Usage: benches/tui_attach_flood.sh [path/to/trapdesk] [keys per console, default 20]
set -euo pipefail
bin=${1:-./target/debug/trapdesk}
keys=${2:-20}
sock=trapdesk-attach-flood-$$
local_dir=$(mktemp -d)
host_dir=$(mktemp -d)
T="tmux -L $sock"
host_pid=
cleanup() {
  $T kill-server 2>/dev/null || true
  [ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null || true
  rm -rf "$local_dir" "$host_dir"
}
trap cleanup EXIT
flood='for i=1,1000000 do print(i) if i % 100 == 0 then sleep(0) end end --'
letters=(a b c d e f g h i j k l m n o p q r s t u v w x y z)

# Types $keys letters into window $1, one at a time; prints the milliseconds of each.
measure() {
  local w=$1 typed="" n s e k
  for ((j = 0; j < keys; j++)); do
    k=${letters[$((j % 26))]}
    typed="$typed$k"
    s=$(date +%s%N)
    $T send-keys -t "$w" -l "$k"
    n=0
    until $T capture-pane -p -t "$w" | grep -q -- "--$typed "; do
      sleep 0.005; n=$((n + 1)); [ $n -gt 400 ] && break
    done
    e=$(date +%s%N)
    echo -n "$(((e - s) / 1000000)) "
  done
}

stats() { # median and max of the numbers on stdin
  tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m, a[NR]}'
}

# The host's own console.
$T -f /dev/null new-session -d -s local -x 120 -y 36 \
  "$bin --demo --data-dir $local_dir --gateway-bind 127.0.0.1:0 --mcp-bind 127.0.0.1:0"
sleep 2
$T send-keys -t local -l "$flood"; $T send-keys -t local F5
sleep 1
l=$(measure local)
shown_local=$($T capture-pane -p -t local | sed -n 2,3p)
$T send-keys -t local C-c; sleep 0.3; $T send-keys -t local y; sleep 1

# A headless host, and the console attached to it over loopback.
"$bin" --mcp-only --demo --data-dir "$host_dir" --gateway-bind 127.0.0.1:0 \
  --mcp-bind 127.0.0.1:0 >/dev/null 2>&1 &
host_pid=$!
sleep 2
$T new-session -d -s att -x 120 -y 36 "$bin attach --data-dir $host_dir"
sleep 2
$T send-keys -t att -l "$flood"; $T send-keys -t att F5
sleep 1
a=$(measure att)
shown=$($T capture-pane -p -t att | sed -n 2,3p)

read -r lm lx <<<"$(echo "$l" | stats)"
read -r am ax <<<"$(echo "$a" | stats)"
echo "local    ms per key: $l"
echo "attached ms per key: $a"
echo "local median $lm ms (max $lx) · attached median $am ms (max $ax) · ratio $(awk "BEGIN {printf \"%.2f\", $am / ($lm > 0 ? $lm : 1)}")x"
echo "the output panes after the keys (how far each flood had got):"; echo "$shown_local"; echo "$shown"
