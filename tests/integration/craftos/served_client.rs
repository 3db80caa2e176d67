//! The served client (minified and packed at build time, `build/`) on a default computer: what
//! it leaves free of the 1,000,000 bytes CC gives a computer, and an error raised inside the
//! client's own code shown with the `lua/` file and line it came from. On the emulator and on
//! CraftOS-PC: both run the client exactly as served.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::json;
use world::{Runtime, World};

/// A default computer's disk (CC: Tweaked's `computerSpaceLimit`).
const DEFAULT_DISK: u64 = 1_000_000;

/// What the installed client may cost the computer at most.
const CLIENT_BUDGET: u64 = 64_000;

async fn installed_client_fits(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("miner"),
                   "code": "return fs.getFreeSpace('/'), fs.getCapacity and fs.getCapacity('/')"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let free = data(&r)["returns"][0]["value"].as_u64().unwrap();
    let capacity = data(&r)["returns"][1]["value"].as_u64();
    // Everything on the disk is the client's: its files, the wrapper, its settings and log.
    eprintln!(
        "{}: free with the client installed: {free} bytes of {capacity:?}",
        rt.name()
    );
    // CraftOS-PC reports the space of the host's disk, not a quota: there the computer's
    // folder is counted as CC counts it.
    let cost = if capacity == Some(DEFAULT_DISK) {
        DEFAULT_DISK - free
    } else {
        // The root folder's own 500 bytes come on top of a disk's capacity.
        let cost = cc_cost(&w.files("miner")) - 500;
        eprintln!(
            "{}: the computer's files cost {cost} bytes as CC counts them",
            rt.name()
        );
        cost
    };
    assert!(
        cost <= CLIENT_BUDGET,
        "the installed client costs {cost} bytes of the computer's disk, more than {CLIENT_BUDGET}"
    );
}

/// What a folder and all it holds cost as CC: Tweaked counts a disk (`WritableFileMount`,
/// `MountConstants.MINIMUM_FILE_SIZE`): each folder and file at least 500 bytes.
fn cc_cost(path: &std::path::Path) -> u64 {
    let m = std::fs::symlink_metadata(path).unwrap();
    if m.is_dir() {
        500 + std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .map(|e| cc_cost(&e.path()))
            .sum::<u64>()
    } else {
        m.len().max(500)
    }
}

on_both_runtimes!(the_installed_client_fits_in_64_kb: installed_client_fits);

/// The line of `lua/<rel>` holding `needle`, 1-based.
fn source_line(rel: &str, needle: &str) -> usize {
    let (_, src) = trapdesk::lua_files::SOURCES
        .iter()
        .find(|(p, _)| *p == rel)
        .unwrap();
    String::from_utf8_lossy(src)
        .lines()
        .position(|l| l.contains(needle))
        .unwrap()
        + 1
}

async fn client_error_names_lua_line(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    // `pace.now` indexes its `os` argument: given a number, the error is raised inside the
    // client's own file, at a line of its served (minified) text.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("miner"),
                   "code": "return dofile('/trapdesk/apis/pace.lua').now(5)"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let want = format!(
        "lua/apis/pace.lua:{}:",
        source_line("apis/pace.lua", "if sys.epoch then")
    );
    let d = data(&r);
    let error = d["error"].as_str().unwrap_or_default();
    assert!(error.contains(&want), "{want} not in the error: {d}");
    assert!(!error.contains("/trapdesk/apis/pace.lua:"), "{d}");
    // The traceback names the same line, and the text an agent reads too.
    let traceback = d["traceback"].as_str().unwrap_or_default();
    assert!(
        traceback.is_empty() || !traceback.contains("/trapdesk/apis/pace.lua:"),
        "{d}"
    );
    assert!(text(&r).contains(&want), "{}", text(&r));

    // Printed by a program, the position reads the same in its output (the console's output
    // pane and `computer-output` read the same session output).
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("miner"),
                   "code": "print(select(2, pcall(dofile('/trapdesk/apis/pace.lua').now, 5)))"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let output = data(&r)["output"].as_str().unwrap_or_default().to_owned();
    assert!(output.contains(&want), "{want} not in the output: {output}");
    let r = w
        .call("computer-output", json!({"traposId": w.trapos("miner")}))
        .await;
    let page = data(&r)["output"].as_str().unwrap_or_default().to_owned();
    assert!(
        page.contains(&want),
        "{want} not in computer-output: {page}"
    );
}

on_both_runtimes!(a_client_error_names_its_lua_line: client_error_names_lua_line);

/// What packing adds to loading the client, printed for BENCHMARKS.md ("The served client"):
/// the unpacker's `gsub` over every stored file's packed text, and a `dofile` of every module
/// (unpack, compile, run) served and as `lua/` reads (copied beside it), each the median of
/// several rounds, in ms of the computer's own clock. Asserts only that every stored file
/// unpacks.
async fn loading_costs(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    // `lua/` as it reads, beside the served client, to load the same modules from both.
    for (path, bytes) in trapdesk::lua_files::SOURCES {
        let dest = w.files("miner").join("src").join(path);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, bytes).unwrap();
    }
    let code = r#"
        local unpack = dofile("/trapdesk/unpack.lua")
        local packed, total = {}, 0
        for _, dir in ipairs({ "/trapdesk/apis/", "/trapdesk/servers/", "/trapdesk/" }) do
            for _, name in ipairs(fs.list(dir)) do
                local path = dir .. name
                if name:match("%.lua$") and name ~= "unpack.lua" and not fs.isDir(path) then
                    local h = fs.open(path, "rb")
                    local s = h.readAll()
                    h.close()
                    local body = s:match("%((%[=*%[.-%]=*%])%),debug")
                    packed[#packed + 1] = assert(load("return " .. body))()
                    total = total + #unpack(packed[#packed])
                end
            end
        end
        local function median(f)
            local t = {}
            for i = 1, 7 do
                local a = os.epoch("utc")
                f()
                t[i] = os.epoch("utc") - a
            end
            table.sort(t)
            return t[4]
        end
        local gsub = median(function() for i = 1, 10 do for _, p in ipairs(packed) do unpack(p) end end end) / 10
        local mods = fs.list("/trapdesk/apis/")
        local function loadAll(dir)
            local a = os.epoch("utc")
            for _, name in ipairs(mods) do
                if name ~= "setup.lua" then dofile(dir .. name) end
            end
            return os.epoch("utc") - a
        end
        -- Alternately, so that neither form pays more of the other's garbage.
        local served, source = {}, {}
        for i = 1, 9 do
            if collectgarbage then collectgarbage() end
            served[i] = loadAll("/trapdesk/apis/")
            if collectgarbage then collectgarbage() end
            source[i] = loadAll("/src/apis/")
        end
        table.sort(served)
        table.sort(source)
        return #packed, total, gsub, served[5], source[5]
    "#;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("miner"), "code": code, "timeoutMs": 60000}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let v = |i: usize| data(&r)["returns"][i]["value"].clone();
    eprintln!(
        "{}: {} packed files unpack to {} bytes; unpacking them all: {} ms; dofile of every apis/ module: served {} ms, lua/ as it reads {} ms",
        rt.name(),
        v(0),
        v(1),
        v(2),
        v(3),
        v(4)
    );
    assert!(v(0).as_u64().unwrap() >= 15, "{}", text(&r));
}

on_both_runtimes!(loading_the_served_client: loading_costs);
