-- shell: running programs from the emulated disk. There is no multishell and no tabs; `shell`
-- itself is an idle prompt that runs typed commands and never returns.
local shell = {}
local dir = ""
local running = {}

local function words(line)
    local out = {}
    local quoted = false
    for part in (line .. '"'):gmatch('(.-)"') do
        if quoted then
            out[#out + 1] = part
        else
            for w in part:gmatch("%S+") do out[#out + 1] = w end
        end
        quoted = not quoted
    end
    return out
end

-- A `require` for one program: paths relative to the program's directory, as CC's is.
local function make_require(env, base)
    local package = { loaded = {}, path = "?;?.lua;?/init.lua;/rom/modules/main/?;/rom/modules/main/?.lua" }
    for _, lib in ipairs({ "string", "table", "math", "coroutine", "bit32", "utf8", "os", "io" }) do
        package.loaded[lib] = _G[lib]
    end
    package.loaded._G = _G
    local function require(name)
        if type(name) ~= "string" then error("bad argument #1 (string expected)", 2) end
        if package.loaded[name] ~= nil then return package.loaded[name] end
        local fname = name:gsub("%.", "/")
        local tried = {}
        for pattern in package.path:gmatch("[^;]+") do
            local p = pattern:gsub("%?", fname)
            if p:sub(1, 1) ~= "/" then p = fs.combine(base, p) end
            if fs.exists(p) and not fs.isDir(p) then
                local f, err = loadfile(p, nil, env)
                if not f then error(err, 2) end
                local r = f(name, p)
                if r == nil then r = true end
                package.loaded[name] = r
                return r
            end
            tried[#tried + 1] = "  no file '" .. p .. "'"
        end
        error("module '" .. name .. "' not found:\n" .. table.concat(tried, "\n"), 2)
    end
    return require, package
end
require, package = make_require(_G, "")

function shell.dir() return dir end
function shell.setDir(d)
    d = fs.combine(d)
    if not fs.isDir(d) then error("Not a directory", 2) end
    dir = d
end
function shell.path() return "." end
function shell.setPath() end
function shell.aliases() return {} end
function shell.setAlias() end
function shell.exit() end
function shell.getRunningProgram() return running[#running] end

function shell.resolve(path)
    if path:sub(1, 1) == "/" or path:sub(1, 1) == "\\" then return fs.combine(path) end
    return fs.combine(dir, path)
end

function shell.resolveProgram(name)
    local p = shell.resolve(name)
    if fs.exists(p) and not fs.isDir(p) then return p end
    if fs.exists(p .. ".lua") and not fs.isDir(p .. ".lua") then return p .. ".lua" end
    return nil
end

-- The prompt: reads lines and runs them. It never returns.
local function prompt()
    while true do
        write("> ")
        local ok, line = pcall(read)
        if not ok then
            printError(line)
        elseif line:match("%S") then
            shell.run(line)
        end
    end
end

--- Runs a program with arguments (words already split); true when it finished without error.
function shell.execute(name, ...)
    if name == "shell" then return prompt() end
    local path = shell.resolveProgram(name)
    if not path then
        printError("No such program")
        return false
    end
    local env = setmetatable({ shell = shell }, { __index = _G })
    env.require, env.package = make_require(env, fs.getDir(path))
    local fn, err = loadfile(path, nil, env)
    if not fn then
        printError(err)
        return false
    end
    running[#running + 1] = path
    local ok, msg = pcall(fn, ...)
    running[#running] = nil
    if not ok then
        if msg ~= nil and msg ~= "" then printError(msg) end
        return false
    end
    return true
end

--- Runs a command line (the arguments are joined with spaces and split into words).
function shell.run(...)
    local w = words(table.concat({ ... }, " "))
    if #w == 0 then return false end
    return shell.execute(table.unpack(w))
end

return shell
