#!/usr/bin/env bash
# A long paste into the real console's editor, against its floor: tmux (100x30) pastes a text of
# numbered Lua lines (~400 KB) with `paste-buffer` (as keys) and `paste-buffer -p` (bracketed)
# into `trapdesk --demo`'s editor, timed until `capture-pane` shows its last line numbered in the
# gutter; the floor is the same paste into a raw-mode `head -c` in the same tmux, timed until it
# has read every byte. Prints milliseconds per run.
# Usage: benches/tui_paste.sh [path/to/trapdesk] [lines] [runs]
#        (default ./target/release/trapdesk, 9000 lines (~400 KB), 3 runs)
set -euo pipefail
bin=${1:-./target/release/trapdesk}
lines=${2:-9000}
runs=${3:-3}
sock=trapdesk-paste-$$
data=$(mktemp -d)
T="tmux -L $sock"
trap '$T kill-server 2>/dev/null; sleep 1; rm -rf "$data"' EXIT
text=$data/paste.lua
for ((i = 1; i <= lines; i++)); do echo "local v$i = $i -- line $i of the paste"; done >"$text"
echo "-- end of the paste" >>"$text"
bytes=$(wc -c <"$text")
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

# The floor: a raw-mode reader takes the same bytes (tmux sends CR for LF: same count).
floor() {
  $T -f /dev/null new-session -d -s f -x 100 -y 30 \
    "stty raw -echo; head -c $bytes >/dev/null; touch $data/done; sleep 60"
  sleep 0.5
  $T load-buffer "$text"
  local s
  s=$(date +%s%N)
  $T paste-buffer $1 -t f
  until [ -e "$data/done" ]; do sleep 0.005; done
  echo -n "$(ms "$s") "
  rm -f "$data/done"
  $T kill-session -t f
}

n=0
console() {
  # A fresh data directory each run (the one before may still be written as its process ends).
  n=$((n + 1))
  $T -f /dev/null new-session -d -s m -x 100 -y 30 \
    "$bin --demo 1 --data-dir $data/d$n --gateway-bind 127.0.0.1:0 --mcp-bind 127.0.0.1:0"
  until $T capture-pane -p -t m | grep -q "idle"; do sleep 0.05; done
  $T load-buffer "$text"
  local s
  s=$(date +%s%N)
  $T paste-buffer $1 -t m
  until $T capture-pane -p -t m | grep -q "$((lines + 1)) -- end of the paste"; do
    sleep 0.005
  done
  echo -n "$(ms "$s") "
  $T kill-session -t m
}

echo "$bytes bytes, $runs runs"
for mode in "" "-p"; do
  echo -n "paste-buffer $mode floor (raw reader): "
  for ((r = 0; r < runs; r++)); do floor "$mode"; done
  echo "ms"
  echo -n "paste-buffer $mode console editor: "
  for ((r = 0; r < runs; r++)); do console "$mode"; done
  echo "ms"
done
