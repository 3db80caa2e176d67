--- What wakes a player's program: run it on a computer that has the trapdesk client
-- (`player_events.lua [SECONDS]`, default 10) and it counts every event it is resumed with
-- for that long, by name, then prints the counts. Its own timer is not counted.
--
-- Run it idle, then again while an agent reads a large file (`read-file` of 500 KB), to see
-- what the client's traffic costs the player's programs. The same count, automated on the
-- emulator and on CraftOS-PC, is `tests/integration/craftos/player_computer.rs`
-- (`a_never_ending_startup_with_the_installer_line_keeps_one_client`), whose figures are in
-- BENCHMARKS.md ("What a player's program is woken by").

local seconds = tonumber(... or "10") or 10
local counts, total = {}, 0
local done = os.startTimer(seconds)
while true do
    local ev, a = os.pullEventRaw()
    if ev == "timer" and a == done then break end
    if ev == "terminate" then break end
    counts[ev] = (counts[ev] or 0) + 1
    total = total + 1
end
print(("%d events in %d s (%.2f a second)"):format(total, seconds, total / seconds))
local names = {}
for name in pairs(counts) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do print(("  %-24s %d"):format(name, counts[name])) end
