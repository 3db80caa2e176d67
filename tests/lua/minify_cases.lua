--- Cases for the client's minifier (crates/trapdesk-client/build/minify.rs): that crate's build.rs minifies this file into its
-- output (it is never served), and `lua_files::tests` runs both forms and compares what they
-- return. Each case is something a wrong rename or a missing space would change.

local out = {}
local function put(v) out[#out + 1] = tostring(v) end

-- Shadowing: an inner local of the same name, and the outer one again after its block.
local x = 1
do
    local x = x + 1 -- the right side sees the outer x
    put(x)
end
put(x)

-- A local function sees itself; a local assigned a function does not.
local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
put(fact(5))
local fib = 7
local fib = function(n) return fib end -- the outer fib (7)
put(fib(3))

-- repeat ... until sees the body's locals.
local i = 0
repeat
    local done = i >= 3
    i = i + 1
until done
put(i)

-- Loops: numeric and generic variables, nested with the same names.
local sum = 0
for k = 1, 3 do
    for k = k, 3 do sum = sum + k end
end
put(sum)
local keys = {}
for k, v in pairs({ a = 1 }) do keys[#keys + 1] = k .. v end
put(keys[1])

-- Methods: `self`, fields and method names are never renamed.
local obj = { value = 5 }
function obj:get(add) return self.value + add end
function obj.plain(self2) return self2.value end
put(obj:get(1))
put(obj.plain(obj))

-- Globals keep their names, and no local may take a global's name.
answer_global = 42
local function readGlobal() return answer_global end
put(readGlobal())
put(type(string.format))

-- Varargs and select.
local function count(...) return select("#", ...) end
put(count(1, nil, 3))

-- Tokens that must keep a space between them.
local a, b = 3, 2
put(a - -b)
put(1 .. 2)
put(a .. b)
local t = { [ [[k]] ] = "long key" }
put(t.k)
put(2^-1)
put(a<=b)
put(0x10 .. "")
put(1e2 .. "")
put(- -a)
put(not not a)

-- Strings are left as they are, long ones over several lines too (the map counts them).
local long = [[
line one
line two]]
put(#long)
local long2 = [==[a]]b]=]c]==]
put(long2)
put("-- not a comment")
put('it\'s')
put("tab\tand \"quotes\"")
put("\65\066")

-- An upvalue captured in a loop, each iteration its own.
local fns = {}
for j = 1, 3 do fns[j] = function() return j end end
put(fns[1]() + fns[3]())

-- Many locals in one scope (names past one letter).
local l1, l2, l3, l4, l5, l6, l7, l8, l9, l10 = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
local l11, l12, l13, l14, l15, l16, l17, l18, l19, l20 = 11, 12, 13, 14, 15, 16, 17, 18, 19, 20
local l21, l22, l23, l24, l25, l26, l27, l28, l29, l30 = 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
local l31, l32, l33, l34, l35, l36, l37, l38, l39, l40 = 31, 32, 33, 34, 35, 36, 37, 38, 39, 40
local l41, l42, l43, l44, l45, l46, l47, l48, l49, l50 = 41, 42, 43, 44, 45, 46, 47, 48, 49, 50
local l51, l52, l53, l54, l55, l56, l57, l58, l59, l60 = 51, 52, 53, 54, 55, 56, 57, 58, 59, 60
put(l1 + l30 + l52 + l53 + l60)

-- goto and labels (Lua 5.2).
local n = 0
::again::
n = n + 1
if n < 3 then goto again end
put(n)

-- A position: the line of this error in the source.
local ok, err = pcall(function() local z = nil; return z.field end)
put(ok)
put((tostring(err):match(":(%d+):")))

return table.concat(out, ",")
