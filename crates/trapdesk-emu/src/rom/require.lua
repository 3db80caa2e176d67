-- CC: Tweaked's rom/modules/main/cc/require.lua as the emulator serves it (the bios's
-- `loadfile`; the rest of /rom is empty): `make(env, dir)` gives a program its `require` and
-- `package`, with package.preload, then package.path searched from `dir`, and CC's messages.
-- The bios passes its `expect`.
local expect = ...

-- The package path CC's `make` starts with.
local DEFAULT_PATH = "?;?.lua;?/init.lua;/rom/modules/main/?;/rom/modules/main/?.lua;/rom/modules/main/?/init.lua"

local function make(env, dir)
    expect(1, env, "table")
    expect(2, dir, "string")
    local package = { loaded = { _G = _G }, preload = {}, config = "/\n;\n?\n!\n-" }
    package.loaded.package = package
    package.path = settings.get("shell.package_path") or DEFAULT_PATH
    if turtle then
        package.path = package.path .. ";/rom/modules/turtle/?;/rom/modules/turtle/?.lua;/rom/modules/turtle/?/init.lua"
    elseif commands then
        package.path = package.path .. ";/rom/modules/command/?;/rom/modules/command/?.lua;/rom/modules/command/?/init.lua"
    end
    function package.searchpath(name, path, sep, rep)
        expect(1, name, "string")
        expect(2, path, "string")
        sep = expect(3, sep, "string", "nil") or "."
        rep = expect(4, rep, "string", "nil") or "/"
        -- (CC's own writes the replacement "%%%.", which Cobalt allows and Lua 5.2 refuses.)
        local fname = name:gsub((sep:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")), (rep:gsub("%%", "%%%%")))
        local tried = {}
        for pattern in path:gmatch("[^;]+") do
            local p = pattern:gsub("%?", fname)
            if p:sub(1, 1) ~= "/" then p = fs.combine(dir, p) end
            if fs.exists(p) and not fs.isDir(p) then return p end
            tried[#tried + 1] = "no file '" .. p .. "'"
        end
        return nil, table.concat(tried, "\n  ")
    end
    package.loaders = {
        function(name)
            if package.preload[name] then return package.preload[name] end
            return nil, "no field package.preload['" .. name .. "']"
        end,
        function(name)
            local p, err = package.searchpath(name, package.path)
            if not p then return nil, err end
            local fn, lerr = loadfile(p, nil, env)
            if fn then return fn, p end
            return nil, lerr
        end,
    }
    local sentinel = {}
    local function require(name)
        expect(1, name, "string")
        if package.loaded[name] == sentinel then
            error("loop or previous error loading module '" .. name .. "'", 0)
        end
        if package.loaded[name] then return package.loaded[name] end
        local err = "module '" .. name .. "' not found:"
        for _, searcher in ipairs(package.loaders) do
            local loader = table.pack(searcher(name))
            if loader[1] then
                package.loaded[name] = sentinel
                local result = loader[1](name, table.unpack(loader, 2, loader.n))
                if result == nil then result = true end
                package.loaded[name] = result
                return result
            end
            err = err .. "\n  " .. loader[2]
        end
        error(err, 2)
    end
    return require, package
end

return { make = make }
