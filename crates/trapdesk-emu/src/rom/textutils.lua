-- textutils: Lua-literal and JSON serialisation with CC: Tweaked's quirks (docs/cc-tweaked.md,
-- "CC: Tweaked's textutils JSON"): JSON strings get one \u00XX per byte >= 0x7F, numeric keys
-- are dropped beside string keys, NaN and infinities are written as `nan`/`inf` (invalid JSON),
-- and \u00XX decodes to UTF-8 bytes.
local textutils = {}

textutils.empty_json_array = setmetatable({}, { __newindex = function() error("attempt to mutate textutils.empty_json_array", 2) end })
textutils.json_null = setmetatable({}, { __newindex = function() error("attempt to mutate textutils.json_null", 2) end })

local keywords = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return then true until while"):gmatch("%a+") do
    keywords[w] = true
end

local function number_literal(n)
    if n ~= n then return "0/0" end
    if n == math.huge then return "1/0" end
    if n == -math.huge then return "-1/0" end
    return tostring(n)
end

-- `seen[t]` is true while `t` is being written and false once written: a table met again is
-- "recursive" in the first case and "repeated" in the second, unless `allow_repetitions`.
local function serialize(v, seen, indent, compact, repeats)
    local t = type(v)
    -- `%q` as the bios writes it (Cobalt's): a newline stays a backslash and a newline.
    if t == "string" then return ("%q"):format(v) end
    if t == "number" then return number_literal(v) end
    if t == "boolean" or t == "nil" then return tostring(v) end
    if t ~= "table" then error("Cannot serialize type " .. t, 0) end
    if seen[v] ~= nil then
        error(seen[v] and "Cannot serialize table with recursive entries" or "Cannot serialize table with repeated entries", 0)
    end
    if next(v) == nil then
        if not repeats then seen[v] = false end
        return "{}"
    end
    seen[v] = true
    local nl, inner, eq = "\n", indent .. "  ", " = "
    if compact then nl, inner, eq = "", "", "=" end
    local out = { "{" .. nl }
    local done = {}
    for i, x in ipairs(v) do
        done[i] = true
        out[#out + 1] = inner .. serialize(x, seen, inner, compact, repeats) .. "," .. nl
    end
    local rest = {}
    for k in pairs(v) do if not done[k] then rest[#rest + 1] = k end end
    table.sort(rest, function(a, b)
        if type(a) == type(b) and (type(a) == "string" or type(a) == "number") then return a < b end
        return type(a) < type(b)
    end)
    for _, k in ipairs(rest) do
        local key
        if type(k) == "string" and k:match("^[%a_][%w_]*$") and not keywords[k] then
            key = k
        elseif compact then
            key = "[" .. serialize(k, seen, inner, compact, repeats) .. "]"
        else
            key = "[ " .. serialize(k, seen, inner, compact, repeats) .. " ]"
        end
        out[#out + 1] = inner .. key .. eq .. serialize(v[k], seen, inner, compact, repeats) .. "," .. nl
    end
    if repeats then seen[v] = nil else seen[v] = false end
    out[#out + 1] = (compact and "" or indent) .. "}"
    return table.concat(out)
end

function textutils.serialize(v, opts)
    local o = type(opts) == "table" and opts or {}
    return (serialize(v, {}, "", o.compact, o.allow_repetitions))
end
textutils.serialise = textutils.serialize

function textutils.unserialize(s)
    local f = load("return " .. s, "unserialize", "t", {})
    if not f then return nil end
    local ok, v = pcall(f)
    if ok then return v end
    return nil
end
textutils.unserialise = textutils.unserialize

local escapes = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function json_string(s, unicode)
    if unicode and utf8.len(s) then
        local out = {}
        for _, c in utf8.codes(s) do
            local ch = c < 0x80 and string.char(c)
            if ch and escapes[ch] then out[#out + 1] = escapes[ch]
            elseif c >= 0x20 and c < 0x7F then out[#out + 1] = ch
            elseif c < 0x10000 then out[#out + 1] = ("\\u%04X"):format(c)
            else
                c = c - 0x10000
                out[#out + 1] = ("\\u%04X\\u%04X"):format(0xD800 + math.floor(c / 0x400), 0xDC00 + c % 0x400)
            end
        end
        return '"' .. table.concat(out) .. '"'
    end
    return '"' .. s:gsub('[%c"\\\127-\255]', function(ch)
        return escapes[ch] or ("\\u%04X"):format(ch:byte())
    end) .. '"'
end

local function json(v, seen, opts)
    local t = type(v)
    if v == textutils.json_null then return "null" end
    if v == textutils.empty_json_array then return "[]" end
    if t == "string" then return json_string(v, opts.unicode_strings) end
    if t == "number" or t == "boolean" then return tostring(v) end
    if t == "nil" then return "null" end
    if t ~= "table" then error("Cannot serialize type " .. t, 0) end
    if seen[v] then
        error(opts.allow_repetitions and "Cannot serialize table with recursive entries"
            or "Cannot serialize table with repeated entries", 0)
    end
    seen[v] = true
    local obj, n, largest = {}, 0, 0
    for k, x in pairs(v) do
        if type(k) == "string" then
            local key = opts.nbt_style and k or json_string(k, opts.unicode_strings)
            obj[#obj + 1] = key .. ":" .. json(x, seen, opts)
            n = n + 1
        elseif type(k) == "number" and k > largest then
            largest = k
        end
    end
    local out
    if n > 0 then
        out = "{" .. table.concat(obj, ",") .. "}"
    elseif largest > 0 then
        local arr = {}
        for i = 1, largest do arr[i] = json(v[i], seen, opts) end
        out = "[" .. table.concat(arr, ",") .. "]"
    else
        out = "{}"
    end
    if opts.allow_repetitions then seen[v] = nil end
    return out
end

function textutils.serializeJSON(v, opts)
    if type(opts) ~= "table" then opts = { nbt_style = opts and true or false } end
    return (json(v, {}, opts))
end
textutils.serialiseJSON = textutils.serializeJSON

-- A JSON reader. A malformed text answers `nil, "Malformed JSON at position N: ..."` with the
-- position and wording CC: Tweaked's reader gives (recorded in tests/integration/craftos/runtime_parity.rs):
-- "Unexpected character "t".", "Unexpected end of input.", "Unexpected "1", expected ':'.".
local json_fail = {}
local function parser(s, opts)
    local sub, find = string.sub, string.find
    local function fail(pos, msg, ...)
        if select("#", ...) > 0 then msg = msg:format(...) end
        error(setmetatable({ pos = pos, msg = msg }, json_fail), 0)
    end
    local function unexpected(pos, c, wanted)
        fail(pos, "Unexpected %s, expected %s.", c == "" and "end of input" or ("%q"):format(c), wanted)
    end
    local function skip(pos)
        local _, last = find(s, "^[ \n\r\t]+", pos)
        return last and last + 1 or pos
    end
    local simple = { b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" }
    local function str(pos, close)
        local out = {}
        while true do
            local c = sub(s, pos, pos)
            if c == "" then fail(pos, "Unexpected end of input, expected '\"'.") end
            if c == close then return table.concat(out), pos + 1 end
            if c == "\\" then
                local e = sub(s, pos + 1, pos + 1)
                if e == "" then fail(pos, "Unexpected end of input, expected escape sequence.") end
                if e == "u" then
                    -- Each escape on its own, as CC: Tweaked's reader does: a surrogate pair
                    -- becomes two 3-byte sequences, not one 4-byte character.
                    local hex = s:match("^%x%x%x%x", pos + 2)
                    if not hex then fail(pos, "Malformed unicode escape %q.", sub(s, pos + 2, pos + 5)) end
                    out[#out + 1] = utf8.char(tonumber(hex, 16))
                    pos = pos + 6
                else
                    if not simple[e] then fail(pos + 1, "Unknown escape character %q.", e) end
                    out[#out + 1] = simple[e]
                    pos = pos + 2
                end
            elseif c >= " " then
                out[#out + 1] = c
                pos = pos + 1
            else
                fail(pos + 1, "Unescaped whitespace %q.", c)
            end
        end
    end
    local suffixes = { b = true, B = true, s = true, S = true, l = true, L = true, f = true, F = true, d = true, D = true }
    local function value(pos)
        local c = sub(s, pos, pos)
        if c == '"' then return str(pos + 1, '"') end
        if c == "'" and opts.nbt_style then return str(pos + 1, "'") end
        if c == "-" or (c >= "0" and c <= "9") then
            local _, last, text = find(s, "^(-?%d+%.?%d*[eE]?[+-]?%d*)", pos)
            local n = text and tonumber(text)
            if not n then fail(pos, "Malformed number %q.", text or c) end
            if opts.nbt_style and suffixes[sub(s, last + 1, last + 1)] then return n, last + 2 end
            return n, last + 1
        end
        if sub(s, pos, pos + 3) == "true" then return true, pos + 4 end
        if sub(s, pos, pos + 4) == "false" then return false, pos + 5 end
        if sub(s, pos, pos + 3) == "null" then
            if opts.parse_null then return textutils.json_null, pos + 4 end
            return nil, pos + 4
        end
        if c == "{" then
            local t = {}
            pos = skip(pos + 1)
            c = sub(s, pos, pos)
            if c == "" then fail(pos, "Unexpected end of input, expected '}'.") end
            if c == "}" then return t, pos + 1 end
            while true do
                local k
                if c == '"' then
                    k, pos = str(pos + 1, '"')
                elseif opts.nbt_style then
                    local _, last, ident = find(s, "^([%a][%w_]*)", pos)
                    if not ident then unexpected(pos, c, "object key") end
                    k, pos = ident, last + 1
                else
                    unexpected(pos, c, "object key")
                end
                pos = skip(pos)
                c = sub(s, pos, pos)
                if c ~= ":" then unexpected(pos, c, "':'") end
                t[k], pos = value(skip(pos + 1))
                pos = skip(pos)
                c = sub(s, pos, pos)
                if c == "}" then return t, pos + 1 end
                if c ~= "," then unexpected(pos, c, "',' or '}'") end
                pos = skip(pos + 1)
                c = sub(s, pos, pos)
            end
        end
        if c == "[" then
            local t, n = {}, 0
            pos = skip(pos + 1)
            c = sub(s, pos, pos)
            -- NBT's typed arrays: [I; 1, 2], [B; ...], [L; ...].
            if opts.nbt_style and (c == "I" or c == "L" or c == "B") and sub(s, pos + 1, pos + 1) == ";" then
                pos = skip(pos + 2)
                c = sub(s, pos, pos)
            end
            if c == "" then unexpected(pos, c, "']'") end
            if c == "]" then
                if opts.parse_empty_array ~= false then return textutils.empty_json_array, pos + 1 end
                return t, pos + 1
            end
            while true do
                n = n + 1
                t[n], pos = value(pos)
                pos = skip(pos)
                c = sub(s, pos, pos)
                if c == "]" then return t, pos + 1 end
                if c ~= "," then unexpected(pos, c, "',' or ']'") end
                pos = skip(pos + 1)
            end
        end
        if c == "" then fail(pos, "Unexpected end of input.") end
        fail(pos, "Unexpected character %q.", c)
    end
    return function()
        local v, pos = value(skip(1))
        pos = skip(pos)
        if pos <= #s then fail(pos, "Unexpected trailing character %q.", sub(s, pos, pos)) end
        return v
    end
end

function textutils.unserializeJSON(s, opts)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    if opts ~= nil and type(opts) ~= "table" then error("bad argument #2 (table expected, got " .. type(opts) .. ")", 2) end
    local ok, v = pcall(parser(s, opts or {}))
    if ok then return v end
    if getmetatable(v) == json_fail then return nil, ("Malformed JSON at position %d: %s"):format(v.pos, v.msg) end
    error(v, 0)
end
textutils.unserialiseJSON = textutils.unserializeJSON

function textutils.formatTime(t, twenty_four)
    local hour = math.floor(t)
    local minute = math.floor((t - hour) * 60)
    if twenty_four then return ("%d:%02d"):format(hour, minute) end
    local suffix = hour >= 12 and "PM" or "AM"
    hour = hour % 12
    if hour == 0 then hour = 12 end
    return ("%d:%02d %s"):format(hour, minute, suffix)
end

-- As CC: Tweaked's: each byte >= 0x80 is taken as a Latin-1 character and written as its
-- two-byte UTF-8 form, so UTF-8 text is encoded twice ("é" becomes %C3%83%C2%A9); "~" is
-- escaped too.
function textutils.urlEncode(s)
    if type(s) ~= "string" then error("bad argument #1 (string expected, got " .. type(s) .. ")", 2) end
    s = s:gsub("\n", "\r\n"):gsub("[^A-Za-z0-9 %-_%.]", function(c)
        local n = c:byte()
        if n < 128 then return ("%%%02X"):format(n) end
        return ("%%%02X%%%02X"):format(192 + math.floor(n / 64), 128 + n % 64)
    end)
    return (s:gsub(" ", "+"))
end

function textutils.slowWrite(text) write(text) end
function textutils.slowPrint(text) print(text) end

function textutils.tabulate(...)
    for _, row in ipairs({ ... }) do
        if type(row) == "table" then print(table.concat(row, "  ")) end
    end
end

return textutils
