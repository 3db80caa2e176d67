-- shell: running programs from the emulated disk, and a few built-in ROM programs (ls, edit,
-- clear). There is no multishell and no tabs; `shell` itself is an idle prompt that runs typed
-- commands and never returns.
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

-- A few of CC's ROM programs, in our own words (the emulator has no /rom on its disk).
local builtin = {}

function builtin.ls(path)
    local d = shell.resolve(path or "")
    if not fs.isDir(d) then printError("Not a directory") return false end
    local dirs, files = {}, {}
    for _, name in ipairs(fs.list(d)) do
        if name:sub(1, 1) ~= "." then
            if fs.isDir(fs.combine(d, name)) then dirs[#dirs + 1] = name else files[#files + 1] = name end
        end
    end
    table.sort(dirs)
    table.sort(files)
    -- As textutils.pagedTabulate does: directories green, files white, in columns.
    local all = {}
    for _, n in ipairs(dirs) do all[#all + 1] = { n, colors.green } end
    for _, n in ipairs(files) do all[#all + 1] = { n, colors.white } end
    local w = term.getSize()
    local width = 0
    for _, e in ipairs(all) do width = math.max(width, #e[1] + 1) end
    local cols = math.max(1, math.floor(w / math.max(width, 1)))
    for i, e in ipairs(all) do
        term.setTextColour(e[2])
        write(e[1] .. string.rep(" ", width - #e[1]))
        if i % cols == 0 or i == #all then print() end
    end
    term.setTextColour(colors.white)
    return true
end
builtin.dir, builtin.list = builtin.ls, builtin.ls

function builtin.clear()
    term.clear()
    term.setCursorPos(1, 1)
    return true
end

-- edit: the essentials of CC's editor: type, move, Ctrl for the menu (Save, Exit), Enter picks.
function builtin.edit(path)
    if not path then print("Usage: edit <path>") return false end
    path = shell.resolve(path)
    local lines = {}
    if fs.exists(path) then
        local h = fs.open(path, "r")
        for l in (h.readAll() .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
        h.close()
        if #lines > 1 and lines[#lines] == "" then lines[#lines] = nil end
    end
    if #lines == 0 then lines[1] = "" end
    local w, h = term.getSize()
    local x, y, scroll = 1, 1, 0
    local menu, item, status = false, 1, "Press Ctrl to access menu"
    local items = { "Save", "Exit" }
    local function draw()
        term.setBackgroundColour(colors.black)
        term.clear()
        for row = 1, h - 1 do
            local l = lines[row + scroll]
            if l then term.setCursorPos(1, row) term.setTextColour(colors.white) term.write(l) end
        end
        term.setCursorPos(1, h)
        if menu then
            for i, name in ipairs(items) do
                term.setTextColour(i == item and colors.yellow or colors.white)
                term.write(i == item and "[" .. name .. "]" or " " .. name .. " ")
            end
        else
            term.setTextColour(colors.yellow)
            term.write(status)
        end
        term.setTextColour(colors.white)
        term.setCursorPos(x, y - scroll)
        term.setCursorBlink(not menu)
    end
    local function save()
        local f = fs.open(path, "w")
        if not f then status = "Error saving to " .. path return end
        f.write(table.concat(lines, "\n") .. "\n")
        f.close()
        status = "Saved to " .. path
    end
    while true do
        if y - scroll > h - 1 then scroll = y - h + 1 elseif y - scroll < 1 then scroll = y - 1 end
        draw()
        local ev, p = os.pullEvent()
        local line = lines[y]
        if ev == "key" and (p == keys.leftCtrl or p == keys.rightCtrl) then
            menu = not menu
        elseif ev == "key" and menu then
            if p == keys.left then item = item > 1 and item - 1 or #items
            elseif p == keys.right then item = item < #items and item + 1 or 1
            elseif p == keys.enter then
                menu = false
                if items[item] == "Save" then save() else break end
            end
        elseif ev == "char" and not menu or ev == "paste" and not menu then
            lines[y] = line:sub(1, x - 1) .. p .. line:sub(x)
            x = x + #p
        elseif ev == "key" then
            if p == keys.enter then
                lines[y] = line:sub(1, x - 1)
                table.insert(lines, y + 1, line:sub(x))
                y, x = y + 1, 1
            elseif p == keys.backspace then
                if x > 1 then lines[y] = line:sub(1, x - 2) .. line:sub(x) x = x - 1
                elseif y > 1 then x = #lines[y - 1] + 1 lines[y - 1] = lines[y - 1] .. line table.remove(lines, y) y = y - 1 end
            elseif p == keys.delete then
                if x <= #line then lines[y] = line:sub(1, x - 1) .. line:sub(x + 1)
                elseif lines[y + 1] then lines[y] = line .. lines[y + 1] table.remove(lines, y + 1) end
            elseif p == keys.left then if x > 1 then x = x - 1 end
            elseif p == keys.right then if x <= #line then x = x + 1 end
            elseif p == keys.up then if y > 1 then y = y - 1 x = math.min(x, #lines[y] + 1) end
            elseif p == keys.down then if y < #lines then y = y + 1 x = math.min(x, #lines[y] + 1) end
            elseif p == keys.home then x = 1
            elseif p == keys["end"] then x = #line + 1
            elseif p == keys.tab then lines[y] = line:sub(1, x - 1) .. "  " .. line:sub(x) x = x + 2
            end
        end
    end
    term.setBackgroundColour(colors.black)
    term.setTextColour(colors.white)
    term.clear()
    term.setCursorPos(1, 1)
    term.setCursorBlink(false)
    return true
end

--- Runs a program with arguments (words already split); true when it finished without error.
function shell.execute(name, ...)
    if name == "shell" then return prompt() end
    if builtin[name] and not shell.resolveProgram(name) then
        running[#running + 1] = "rom/programs/" .. name .. ".lua"
        local ok, r = pcall(builtin[name], ...)
        running[#running] = nil
        if not ok then printError(r) return false end
        return r
    end
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
