-- capture_spec: print/write/printError capture and executeLua Results.
local lib = dofile(ROOT .. "apis/libmcpcomputer.lua")
local json = dofile(ROOT .. "apis/json.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

-- print joins with tabs and ends with "\n", like CC's bios print.
local pieces = {}
local cap = lib.newCapture(function(stream, text) pieces[#pieces + 1] = stream .. ":" .. text end)
cap.print("a", 1, nil, true)
cap.print()
cap.write("no newline")
cap.write(5)
cap.printError("bad", "x")
eq((cap.text()), "a\t1\tnil\ttrue\n\nno newline5bad\tx\n")
eq(table.concat(pieces, "|"), "out:a\t1\tnil\ttrue\n|out:\n|out:no newline|out:5|err:bad\tx\n")
assert(not pcall(cap.write, {}), "write refuses tables")
eq(cap.print("x\ny"), 2, "print returns lines moved")
local tostr = setmetatable({}, { __tostring = function() return "custom" end })
cap.print(tostr)
assert((cap.text()):find("custom\n$"), "print honours __tostring")

-- Capture limit: the kept text is cut, the live callback sees everything.
local live = 0
local small = lib.newCapture(function(_, t) live = live + #t end, 10)
small.write("0123456789abc")
local text, truncated = small.text()
eq(text, "0123456789") eq(truncated, true) eq(live, 13)

-- executeLua: returns, output, no screen writes.
local r = lib.executeLua("print('hello', 2) write('x') return 1, nil, 'z'")
eq(r.ok, true) eq(r.output, "hello\t2\nx") eq(r.n, 3) eq(r.output_truncated, false)
eq(json.encode(r.returns), '[{"type":"number","value":1},{"type":"nil"},{"type":"string","value":"z"}]')
assert(type(r.duration_ms) == "number")
r = lib.executeLua("return")
eq(r.n, 0) eq(json.encode(r.returns), "[]")

-- Globals set by a chunk stay in its own environment.
r = lib.executeLua("leaked = 1 return leaked")
eq(r.returns[1].value, 1) eq(rawget(_G, "leaked"), nil, "no global leak")

-- Runtime errors keep the output so far and are ok=false with a traceback.
r = lib.executeLua("print('before') local x = nil; x()")
eq(r.ok, false) eq(r.output, "before\n") eq(r.n, 0) eq(json.encode(r.returns), "[]")
assert(r.error:find('exec:1:', 1, true) == 1, "error names the chunk: " .. r.error)
assert(type(r.traceback) == "string", "traceback present")
r = lib.executeLua("error({code = 1})")
eq(r.ok, false) assert(type(r.error) == "string", "non-string errors become strings")

-- Syntax errors.
r = lib.executeLua("return +")
eq(r.ok, false) eq(r.output, "")
assert(r.error:find('exec:', 1, true) == 1, "syntax error names the chunk: " .. r.error)

-- Output cap 64 KiB in a Result.
r = lib.executeLua("for i = 1, 100 do write(string.rep('x', 1000)) end")
eq(#r.output, 65536) eq(r.output_truncated, true)

-- printError goes to stream "err".
local streams = {}
r = lib.executeLua("printError('oops')", nil, { onOutput = function(s, t) streams[#streams + 1] = s .. t end })
eq(streams[1], "erroops\n") eq(r.output, "oops\n")

-- Chunks may yield (sleep, pullEvent) through the capture: run one in a coroutine.
local co = coroutine.create(function()
    return lib.executeLua("print('a') local e = coroutine.yield('timer') print(e) return e")
end)
local ok, filter = coroutine.resume(co)
eq(ok, true) eq(filter, "timer")
local ok2, res = coroutine.resume(co, "tick")
eq(ok2, true) eq(res.output, "a\ntick\n") eq(res.returns[1].value, "tick")

print("capture_spec: ok")
