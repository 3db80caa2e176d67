-- settings: named values, saved to the computer's disk with textutils.serialize (as CC does,
-- so a `.settings` file written by either reads in the other).
local settings = {}
local values, defs = {}, {}

local function copy(v)
    if type(v) ~= "table" then return v end
    local t = {}
    for k, x in pairs(v) do t[k] = copy(x) end
    return t
end

local function check(name, value)
    local t = type(value)
    if t == "function" or t == "thread" or t == "userdata" then
        error("bad argument #2 (cannot serialize " .. t .. ")", 3)
    end
    local d = defs[name]
    if value ~= nil and d and d.type and d.type ~= t then
        error(("bad argument #2 (%s expected, got %s)"):format(d.type, t), 3)
    end
end

function settings.define(name, opts)
    opts = opts or {}
    defs[name] = { default = opts.default, description = opts.description, type = opts.type }
end
function settings.undefine(name) defs[name] = nil end

function settings.set(name, value)
    if type(name) ~= "string" then error("bad argument #1 (string expected)", 2) end
    check(name, value)
    values[name] = copy(value)
end

function settings.get(name, default)
    local v = values[name]
    if v ~= nil then return copy(v) end
    if default ~= nil then return default end
    local d = defs[name]
    return d and copy(d.default)
end

function settings.getDetails(name)
    local d = defs[name] or {}
    return { default = d.default, description = d.description, type = d.type, value = values[name] }
end

function settings.unset(name) values[name] = nil end
function settings.clear() values = {} end

function settings.getNames()
    local seen, names = {}, {}
    for k in pairs(values) do seen[k] = true end
    for k in pairs(defs) do seen[k] = true end
    for k in pairs(seen) do names[#names + 1] = k end
    table.sort(names)
    return names
end

function settings.load(path)
    local h = fs.open(path or ".settings", "r")
    if not h then return false end
    local t = textutils.unserialize(h.readAll())
    h.close()
    if type(t) ~= "table" then return false end
    for k, v in pairs(t) do
        local d = defs[k]
        if type(k) == "string" and (not d or not d.type or d.type == type(v)) then values[k] = v end
    end
    return true
end

function settings.save(path)
    local h = fs.open(path or ".settings", "w")
    if not h then return false end
    h.write(textutils.serialize(values))
    h.close()
    return true
end

return settings
