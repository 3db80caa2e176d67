//! Peripherals created at run time with CraftOS-PC's own API (`periphemu.create`/`remove`), used
//! through CC's `peripheral` API, from `exec-lua` through a real MCP client. One body per
//! behaviour runs on the emulator and on CraftOS-PC where its headless build has the type: a
//! wired modem and its network, chests, a drive. Monitors (CraftOS-PC headless refuses them:
//! "Monitors are not available in this mode") and speakers (its build here has no audio: "No
//! peripheral named speaker") run on the emulator only, where the test also reads the monitor
//! from Rust and clicks it as a player would.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{lua_mark, mcp_fake as fake, wait_mark, world};

use std::time::Duration;

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::json;
use trapdesk::emu::{InventorySpec, Item, PeripheralSpec};
use world::{Runtime, World};

/// `show(...)`: every value as text, tables with sorted keys, joined by " | ".
const PRELUDE: &str = r#"local function ser(v, d)
  d = d or 0
  local t = type(v)
  if t == "string" then return '"' .. v .. '"' end
  if t == "number" then if v == math.floor(v) then return ("%d"):format(v) end return tostring(v) end
  if t ~= "table" then return t == "function" and "fn" or tostring(v) end
  if d > 3 then return "{...}" end
  local keys = {} for k in pairs(v) do keys[#keys+1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local o = {} for _, k in ipairs(keys) do o[#o+1] = tostring(k) .. "=" .. ser(v[k], d + 1) end
  return "{" .. table.concat(o, ",") .. "}"
end
local function show(...) local r = table.pack(...) local o = {} for i = 1, r.n do o[i] = ser(r[i]) end return table.concat(o, " | ") end
local function sorted(t) table.sort(t) return t end
-- The events queued until now (a timer marks the end), as "name arg" strings.
local function drain()
  local id, seen = os.startTimer(0.3), {}
  while true do
    local e = table.pack(os.pullEvent())
    if e[1] == "timer" and e[2] == id then return seen end
    if e[1] == "peripheral" or e[1] == "peripheral_detach" or e[1] == "monitor_resize" or e[1] == "disk" or e[1] == "disk_eject" then
      seen[#seen + 1] = e[1] .. " " .. tostring(e[2])
    end
  end
end
"#;

/// Runs `code` (after the prelude) on `label`; its first return value as text.
async fn lua(w: &World, label: &str, code: &str) -> String {
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos(label), "code": format!("{PRELUDE}\n{code}")}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    d["returns"][0]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no string returned: {d}"))
        .to_owned()
}

async fn a_wired_network_of_chests(rt: Runtime) {
    let w = World::boot(rt, &["base"]).await;
    // Creating: true; the name taken or an unknown type: false and CraftOS-PC's reason.
    assert_eq!(
        lua(
            &w,
            "base",
            r#"return show(periphemu.create("back", "modem"), { periphemu.create("back", "modem") },
                           { periphemu.create("top", "nope") }, periphemu.remove("bottom"), drain())"#
        )
        .await,
        r#"true | {1=false,2="Peripheral already attached on side back"} | {1=false,2="No peripheral named nope"} | false | {1="peripheral back"}"#
    );
    // A number side names the peripheral "<type>_<n>"; on the network behind the modem.
    assert_eq!(
        lua(
            &w,
            "base",
            r#"local a, b = periphemu.create(0, "chest"), periphemu.create(1, "minecraft:chest")
               return show(a, b, sorted(drain()), sorted(peripheral.getNames()),
                           { peripheral.getType("back") }, peripheral.call("back", "isWireless"),
                           peripheral.call("back", "getNameLocal") == "computer_" .. os.getComputerID(),
                           sorted(peripheral.call("back", "getNamesRemote")))"#
        )
        .await,
        r#"true | true | {1="peripheral chest_0",2="peripheral minecraft:chest_1"} | {1="back",2="chest_0",3="minecraft:chest_1"} | {1="modem",2="peripheral_hub"} | false | true | {1="chest_0",2="minecraft:chest_1"}"#
    );
    // A chest as CC types a vanilla one, its methods, and items moved over the network.
    assert_eq!(
        lua(
            &w,
            "base",
            r#"local types = { peripheral.getType("chest_0") }
               local m = {} for _, n in ipairs(peripheral.getMethods("chest_0")) do m[n] = true end
               local chest = peripheral.wrap("chest_0")
               -- CraftOS-PC's chest takes items with setItem; the emulator's answers it too but,
               -- as a CC chest has no such method, does not list it (so it is not wrapped).
               local put = peripheral.call("chest_0", "setItem", 1, { name = "minecraft:stone", count = 10 })
               local moved = chest.pushItems("minecraft:chest_1", 1, 4)
               local ok, err = pcall(chest.pushItems, "nope", 1)
               return show(types[1], peripheral.hasType("chest_0", "inventory"),
                           m.size, m.list, m.getItemDetail, m.pushItems, m.pullItems,
                           chest.size(), put, moved, chest.list(), peripheral.call("minecraft:chest_1", "list"),
                           chest.getItemDetail(1).name, ok, err:find("Target 'nope' does not exist", 1, true) ~= nil,
                           peripheral.getName(chest), #{ peripheral.find("inventory") })"#
        )
        .await,
        r#""minecraft:chest" | true | true | true | true | true | true | 27 | 10 | 4 | {1={count=6,name="minecraft:stone"}} | {1={count=4,name="minecraft:stone"}} | "minecraft:stone" | false | true | "chest_0" | 2"#
    );
    // A drive: empty; CraftOS-PC's insertDisk(id) puts floppy `id` in (its files in `disk/<id>`
    // beside the computer's directory on both runtimes), mounted at /disk; then out, and gone.
    assert_eq!(
        lua(
            &w,
            "base",
            r#"periphemu.create("top", "drive")
               local m = {} for _, n in ipairs(peripheral.getMethods("top")) do m[n] = true end
               local empty = peripheral.call("top", "isDiskPresent")
               peripheral.call("top", "insertDisk", 7)
               local path = disk.getMountPath("top")
               local h = fs.open(fs.combine(path, "note.txt"), "w") h.write("on the floppy") h.close()
               local id, present = disk.getID("top"), disk.isPresent("top")
               disk.eject("top")
               local after = fs.exists(fs.combine(path, "note.txt"))
               local removed = periphemu.remove("top")
               return show(m.isDiskPresent, m.getDiskID, m.ejectDisk, empty, path, id, present, after,
                           removed, drain(), peripheral.isPresent("top"))"#
        )
        .await,
        r#"true | true | true | false | "disk" | 7 | true | false | true | {1="peripheral top",2="disk top",3="disk_eject top",4="peripheral_detach top"} | false"#
    );
    let floppy = w.files("base").parent().unwrap().join("disk/7/note.txt");
    assert_eq!(
        std::fs::read_to_string(&floppy).unwrap_or_default(),
        "on the floppy",
        "{}",
        floppy.display()
    );
}

on_both_runtimes!(a_wired_network_of_chests);

/// Monitors: CraftOS-PC headless cannot create one, so this is the emulator only, which the
/// test also reads from Rust (what the monitor really shows) and clicks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_draws_scales_and_is_touched() {
    let w = World::boot(Runtime::Emulator, &["board"]).await;
    assert_eq!(
        lua(
            &w,
            "board",
            r#"local ok = periphemu.create("top", "monitor")
               local mon = peripheral.find("monitor")
               local w, h = mon.getSize()
               mon.setBackgroundColour(colours.blue) mon.clear()
               mon.setCursorPos(2, 1) mon.setTextColour(colours.yellow) mon.write("Reactor")
               mon.setCursorPos(1, 3) mon.blit("ok!", "0e5", "fff")
               local old = term.redirect(mon) term.setCursorPos(1, 4) term.write("printed") term.redirect(old)
               return show(ok, w, h, mon.getTextScale(), mon.isColour(), drain(), mon.getCursorPos())"#
        )
        .await,
        r#"true | 51 | 19 | 1 | true | {1="peripheral top"} | 8 | 4"#
    );
    let m = w
        .computer("board")
        .emu()
        .monitor("top")
        .expect("a monitor on top");
    assert_eq!((m.size, m.scale), ((51, 19), 1.0));
    assert_eq!(&m.text[0][..9], " Reactor ");
    assert_eq!(&m.fg[0][1..8], "4444444", "yellow text");
    assert_eq!(&m.bg[0][..9], "bbbbbbbbb", "on blue");
    assert_eq!(
        (&m.text[2][..3], &m.fg[2][..3], &m.bg[2][..3]),
        ("ok!", "0e5", "fff")
    );
    assert_eq!(
        &m.text[3][..7],
        "printed",
        "term.redirect draws on the monitor"
    );

    // The scale sizes the monitor as CC does; a size change clears it and says so.
    assert_eq!(
        lua(
            &w,
            "board",
            r#"local mon = peripheral.wrap("top")
               mon.setTextScale(0.5) local a = { mon.getSize() }
               mon.setTextScale(2) local b = { mon.getSize() }
               local ok, err = pcall(mon.setTextScale, 6)
               return show(a, b, mon.getTextScale(), ok, err, drain())"#
        )
        .await,
        r#"{1=102,2=38} | {1=26,2=10} | 2 | false | "/rom/apis/peripheral.lua:257: Expected number in range 0.5-5" | {1="monitor_resize top",2="monitor_resize top"}"#
    );
    let m = w.computer("board").emu().monitor("top").unwrap();
    assert_eq!((m.size, m.scale), ((26, 10), 2.0));
    assert!(
        m.text.iter().all(|r| r.trim().is_empty()),
        "cleared: {:?}",
        m.text
    );

    // A player's click arrives as monitor_touch with the cell; off the monitor, nothing.
    let emu = w.computer("board").emu().clone();
    assert!(
        !emu.monitor_touch("top", 27, 1),
        "column 27 is off a 26-wide monitor"
    );
    assert!(!emu.monitor_touch("left", 1, 1), "no monitor on the left");
    let code = lua_mark("in-pull") + r#"return show(os.pullEvent("monitor_touch"))"#;
    let (touched, _) = tokio::join!(lua(&w, "board", &code), async {
        wait_mark(&w.files("board"), "in-pull").await;
        assert!(emu.monitor_touch("top", 3, 4));
    });
    assert_eq!(touched, r#""monitor_touch" | "top" | 3 | 4"#);
}

/// A monitor on the wired network: reached by its network name through the modem, drawn on
/// through `peripheral.wrap` as on CC; gone with the modem.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_monitor_through_a_wired_modem() {
    let w = World::boot(Runtime::Emulator, &["hall"]).await;
    assert_eq!(
        lua(
            &w,
            "hall",
            r#"periphemu.create("monitor_0", "monitor", 20, 5)
               local before = peripheral.isPresent("monitor_0")
               periphemu.create("left", "modem")
               local mon = peripheral.wrap("monitor_0")
               mon.write("remote") 
               return show(before, peripheral.isPresent("monitor_0"), peripheral.getType("monitor_0"),
                           peripheral.call("left", "getTypeRemote", "monitor_0"),
                           peripheral.call("left", "hasTypeRemote", "monitor_0", "monitor"),
                           { mon.getSize() }, drain())"#
        )
        .await,
        r#"false | true | "monitor" | "monitor" | true | {1=20,2=5} | {1="peripheral left",2="peripheral monitor_0"}"#
    );
    // A modem on the network, called through the hub and back through itself: answers (the
    // emulator once waited on its own lock there).
    assert_eq!(
        lua(
            &w,
            "hall",
            r#"periphemu.create("modem_1", "modem")
               local r = peripheral.call("modem_1", "callRemote", "modem_1", "isWireless")
               periphemu.remove("modem_1")
               return show(r, drain())"#
        )
        .await,
        r#"false | {1="peripheral modem_1",2="peripheral_detach modem_1"}"#
    );
    let emu = w.computer("hall").emu().clone();
    assert_eq!(&emu.monitor("monitor_0").unwrap().text[0][..6], "remote");
    let code = lua_mark("in-pull")
        + r#"local e = { os.pullEvent("monitor_touch") }
               periphemu.remove("left")
               return show(e[2], e[3], e[4], drain(), peripheral.isPresent("monitor_0"),
                           peripheral.call("left", "getNamesRemote"))"#;
    let (after, _) = tokio::join!(lua(&w, "hall", &code), async {
        wait_mark(&w.files("hall"), "in-pull").await;
        assert!(emu.monitor_touch("monitor_0", 20, 5));
    });
    assert_eq!(
        after,
        r#""monitor_0" | 20 | 5 | {1="peripheral_detach monitor_0",2="peripheral_detach left"} | false | nil"#
    );
    assert!(
        !emu.monitor_touch("monitor_0", 1, 1),
        "without a modem the computer does not see the monitor"
    );
}

/// A chest filled from Rust, as a test builds a world, listed from Lua; a speaker and a wireless
/// modem answer as CC's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chest_filled_from_rust_a_speaker_and_a_wireless_modem() {
    let w = World::boot(Runtime::Emulator, &["store"]).await;
    let emu = w.computer("store").emu().clone();
    let mut pick = Item::new("minecraft:diamond_pickaxe", 1);
    pick.max_count = 1;
    pick.damage = Some((3, 1561));
    emu.attach(
        "right",
        PeripheralSpec::Chest(
            InventorySpec::chest()
                .with_item(1, Item::new("minecraft:cobblestone", 64))
                .with_item(5, pick),
        ),
    )
    .unwrap();
    assert!(emu.attach("right", PeripheralSpec::Speaker).is_err());
    emu.attach("bottom", PeripheralSpec::Speaker).unwrap();
    assert_eq!(
        lua(
            &w,
            "store",
            r#"local c = peripheral.wrap("right")
               local d = c.getItemDetail(5)
               local ok, err = pcall(c.getItemDetail, 28)
               return show(c.list(), d.displayName, d.damage, d.maxDamage, d.maxCount, c.getItemLimit(1), ok, err)"#
        )
        .await,
        r#"{1={count=64,name="minecraft:cobblestone"},5={count=1,name="minecraft:diamond_pickaxe"}} | "Diamond Pickaxe" | 3 | 1561 | 1 | 64 | false | "/rom/apis/peripheral.lua:257: Slot out of range (28)""#
    );
    assert_eq!(
        lua(
            &w,
            "store",
            r#"local s = peripheral.wrap("bottom")
               local ok, err = pcall(s.playNote, "kazoo")
               periphemu.create("top", "modem", { wireless = true })
               local m = peripheral.wrap("top")
               m.open(5)
               local ok2, err2 = pcall(m.open, 70000)
               return show(peripheral.getType("bottom"), s.playNote("harp", 1, 12), ok, err,
                           s.playSound("minecraft:entity.cat.ambient"),
                           { peripheral.getType("top") }, m.isWireless(), m.isOpen(5), m.isOpen(6), ok2, err2,
                           m.getNamesRemote == nil)"#
        )
        .await,
        r#""speaker" | true | false | "/rom/apis/peripheral.lua:257: Invalid instrument, "kazoo"!" | true | {1="modem"} | true | true | false | false | "/rom/apis/peripheral.lua:257: Expected number in range 0-65535" | true"#
    );
    // What Lua did to the chest is what Rust reads.
    lua(
        &w,
        "store",
        r#"return show(peripheral.call("right", "pullItems", "right", 1, 10, 2))"#,
    )
    .await;
    let slots = emu.inventory("right").unwrap();
    assert_eq!(slots[0].as_ref().map(|i| i.count), Some(54));
    assert_eq!(slots[1].as_ref().map(|i| i.count), Some(10));
    assert!(emu.detach("right"));
    assert!(emu.inventory("right").is_none());
}

/// Peripherals given in the spec are there from boot (no events: the computer finds them),
/// and they are blocks beside the computer: a reboot keeps them and what a monitor shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peripherals_from_the_spec_outlive_a_reboot() {
    use trapdesk::emu::{Computer, ComputerSpec, MonitorSpec};
    let dir = tempfile::tempdir().unwrap();
    let spec = ComputerSpec::new(4, None, dir.path().join("4"))
        .with_peripheral("back", PeripheralSpec::Modem { wireless: false })
        .with_peripheral("top", PeripheralSpec::Monitor(MonitorSpec::blocks(1, 1)))
        .with_peripheral(
            "minecraft:chest_2",
            PeripheralSpec::Chest(
                InventorySpec::chest().with_item(3, Item::new("minecraft:coal", 9)),
            ),
        );
    let c = Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
    let run = |code: &'static str| {
        let c = c.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(10), c.run_lua(code))
                .await
                .expect("in time")
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let out = run(r#"local m = peripheral.wrap("top") m.write("kept")
        local w, h = m.getSize()
        print(table.concat(peripheral.getNames(), ","), w, h, peripheral.call("minecraft:chest_2", "list")[3].count)"#)
    .await;
    assert_eq!(out.trim(), "top,back,minecraft:chest_2\t7\t5\t9");
    c.reboot();
    // Wait for the new boot to answer.
    let out = crate::support::wait_ok(
        Duration::from_secs(30),
        async || match tokio::time::timeout(
            Duration::from_millis(500),
            c.run_lua(r#"print(#peripheral.getNames(), peripheral.getType("back"))"#),
        )
        .await
        {
            Ok(Ok(o)) => Ok(o),
            other => Err(format!("the new boot never answered: {other:?}")),
        },
    )
    .await;
    assert_eq!(out.trim(), "3\tmodem\tperipheral_hub");
    assert_eq!(&c.monitor("top").unwrap().text[0][..4], "kept");
    c.shutdown();
}
