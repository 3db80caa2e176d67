#!/bin/sh
# Runs every tests/lua/*_spec.lua under lua5.2 with ROOT set to the client root.
# Usage: tests/lua/run.sh   (from anywhere; LUA=lua5.2 by default)
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
lua=${LUA:-lua5.2}
failed=0
for spec in "$here"/*_spec.lua; do
    name=$(basename "$spec")
    if (cd "$repo" && "$lua" -e 'ROOT="lua/"' "$spec"); then
        echo "ok   $name"
    else
        echo "FAIL $name"
        failed=$((failed + 1))
    fi
done
if [ "$failed" -ne 0 ]; then
    echo "$failed spec file(s) failed"
    exit 1
fi
echo "all specs passed"
