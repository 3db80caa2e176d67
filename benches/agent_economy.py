"""Agent economy: what an agent reads, in characters, to do ten ordinary tasks through the
official MCP Python SDK, beside the characters that carry the information (the floor).

A call costs what a client receives of its result: every content block (a text block's text,
any other block's JSON) plus the JSON of `structuredContent` (compact, as the host sends it).
Each task also has a floor: the information the agent needed, written compactly (the figures,
names, lines and bytes asked for, once). The ten tasks, against `trapdesk --mcp-only --demo 2`:

 1 survey       the computers, their kinds, peripherals and free disk
 2 run          write primes.lua, run it detached, follow its output, get its end
 3 require      an error raised in a file loaded with `require`: find it, fix it, run again
 4 files        write a 300 KB binary file, read it back, list, move, delete, overfill the disk
 5 input        type into the shell; answer a running program's read()
 6 devices      read and touch a monitor; drive the turtle
 7 fleet        one snippet on every computer; page the computer list
 8 lost         a detached run across a `kill -9` of the host (the demo computers die with it)
 9 resources    resources and completions
10 errors       wrong arguments, an unknown computer, a `..` path, huge code, a chunk that
                never yields, cancel

Beside them: reading the 300 KB file back (ratio to its base64), following a run of 5,000
lines to its end (ratio to its output + 20,000), the `tools/list` response, and the context a
client puts before the model (instructions + each tool's name, description and compact
inputSchema).

    cargo build && python3 benches/agent_economy.py [--bin PATH] [--out FILE] [--before FILE]
        [--only survey,fleet]

`--out` saves the figures as JSON (benches/agent_economy.before.json holds the ones measured
before the tool list was made smaller); `--before` prints the table with that file's figures
beside these.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation, ResourceTemplateReference

REPO = Path(__file__).resolve().parents[1]
SECRET = "economy-secret-9v2m7k4q8x"
FILES_TEMPLATE = "trapdesk://computer/{traposId}/files/{+path}"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def cost(result: Any) -> int:
    """Characters a client receives of a tool result: each content block, plus the JSON of
    `structuredContent`. A text block counts its text; any other block its JSON."""
    n = 0
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "text":
            n += len(block.text)
        else:
            n += len(compact(block.model_dump(mode="json", by_alias=True, exclude_none=True)))
    sc = getattr(result, "structured_content", None)
    if sc is not None:
        n += len(compact(sc))
    return n


def cost_of_model(model: Any) -> int:
    """A non-tool answer (resources, completions): its JSON."""
    return len(compact(model.model_dump(mode="json", by_alias=True, exclude_none=True)))


def sc(r: Any) -> dict[str, Any]:
    return r.structured_content or {}


def first_line(r: Any) -> str:
    for block in r.content or []:
        if getattr(block, "type", None) == "text":
            return block.text.split("\n", 1)[0]
    return ""


class Host:
    """`trapdesk --mcp-only --demo 2` on ephemeral ports; `start` again keeps the data dir."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="trapdesk-economy-")
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.token = ""
        self.gateway_port = 0
        self.craft: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(self.binary), "--mcp-only", "--demo", "2", "--gateway-bind", "127.0.0.1:0",
             "--mcp-bind", "127.0.0.1:0", "--data-dir", self.dir, "--secret", SECRET],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        assert self.proc.stderr is not None
        self.url = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not self.url:
            line = self.proc.stderr.readline()
            if not line:
                break
            g = re.search(r"\bgateway ws://127\.0\.0\.1:(\d+)/", line)
            if g:
                self.gateway_port = int(g.group(1))
            m = re.search(r"\bMCP (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
        if not self.url:
            raise RuntimeError("the host printed no MCP address")
        self.token = (Path(self.dir) / "mcp-token").read_text().strip()
        stderr = self.proc.stderr
        threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()

    def add_craftos(self, launcher: str) -> None:
        """A headless CraftOS-PC computer (id 10, `craft`) that installs the client with the
        player's one-liner, configured as tests/integration/support/craftos.rs does."""
        root = Path(self.dir) / "craftos"
        (root / "config").mkdir(parents=True, exist_ok=True)
        files = root / "computer" / "10"
        files.mkdir(parents=True, exist_ok=True)
        (root / "config" / "global.json").write_text(json.dumps({
            "http_enable": True, "http_websocket_enabled": True, "http_whitelist": ["*"],
            "http_blacklist": [], "checkUpdates": False, "keepOpenOnShutdown": False,
            "abortTimeout": 7000, "default_computer_settings": "motd.enable=false",
            "http_max_websocket_message": 131072}))
        label = base64.b64encode(b"craft").decode()
        (root / "config" / "10.json").write_text(json.dumps({"base64": True, "isColor": True, "label": label}))
        (files / "startup.lua").write_text(
            "fs.delete(shell.getRunningProgram())\n"
            f'shell.run("wget run http://127.0.0.1:{self.gateway_port}/install.lua {SECRET}")\n')
        self.craft = subprocess.Popen([launcher, "-d", str(root), "--id", "10"], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.craft is not None and self.craft.poll() is None:
            self.craft.kill()
            self.craft.wait()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def _streams(host: Host):  # type: ignore[no-untyped-def]
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {host.token}"}) as http:
        async with streamable_http_client(host.url, http_client=http) as streams:
            yield streams


def connect(host: Host) -> Client:
    return Client(_streams(host), client_info=Implementation(name="economy", version="0.1"))


class Agent:
    """One connection; every answer it reads counts toward the current task."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.chars = 0
        self.calls = 0

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        r = await self.client.call_tool(tool, args)
        self.calls += 1
        self.chars += cost(r)
        return r

    async def other(self, coro: Awaitable[Any]) -> Any:
        """A resource read, listing or completion; an error answer counts its message."""
        self.calls += 1
        try:
            r = await coro
        except Exception as e:  # the SDK raises a JSON-RPC error: the agent reads its message
            self.chars += len(str(e))
            return e
        self.chars += cost_of_model(r)
        return r


async def wait_linked(agent: Agent, n: int = 4) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = await agent.client.call_tool("probe-computers", {"ping": False})
        page = sc(r)
        rows = page.get("computers", [])
        # A row has `serves` only where it differs from the page's list.
        if len(rows) >= n and all("exec-lua" in str(x.get("serves", page.get("serves", ""))) for x in rows):
            return rows
        await anyio.sleep(0.2)
    raise RuntimeError("the demo computers did not link")


def _texts(lines: Any) -> list[str]:
    return [x.get("text", "") if isinstance(x, dict) else str(x) for x in lines or []]


def _page(d: dict[str, Any]) -> list[str] | None:
    """An output page's lines: a compact page (`output` with one time per line in `times`) or
    the older shape (`lines: [{text, ...}]`); None when `d` carries no page."""
    if isinstance(d.get("times"), list):
        n = len(d["times"])
        return str(d.get("output") or "").split("\n")[:n]
    if isinstance(d.get("lines"), list):
        return _texts(d["lines"])
    return None


async def follow(agent: Agent, request_id: str, until: str | None = None) -> tuple[Any, list[str]]:
    """Follow a run as an agent does: wait-request from cursor to cursor until it ends (or
    `until` shows), then whatever of its output the end did not carry, by computer-output pages
    from the last cursor. Returns the end (or match) and every output line, each read once."""
    # A follower passes a cursor from its first call (0: the run's start), so that an end
    # carries only what it has not read (docs/mcp.md, "Detached runs").
    after: Any = 0
    lines: list[str] = []
    for _ in range(500):
        args: dict[str, Any] = {"requestId": request_id, "timeoutMs": 10000}
        if after is not None:
            args["after"] = after
        if until is not None:
            args["until"] = until
        end = await agent.call("wait-request", args)
        d = sc(end)
        if d.get("status") == "running":
            lines += _page(d) or []
            after = d.get("cursor", after)
            if d.get("matched"):
                return end, lines
            continue
        page = _page(d) if after is not None else None
        if page is not None:  # an end that carries the lines after `after`, paged
            lines += page
            after = d.get("cursor", after)
            if d.get("more"):
                continue
        elif after is None and not d.get("outputTruncated"):
            lines += str(d.get("output") or "").splitlines()
        total = d.get("outputLines")
        while isinstance(total, int) and len(lines) < total:
            page = sc(await agent.call("computer-output", {
                "traposId": d.get("traposId"), "requestId": request_id, "after": after or 0, "lines": 2000}))
            got = _page(page) or []
            lines += got
            after = page.get("cursor", after)
            if not got or not page.get("more"):
                break
        return end, lines
    raise RuntimeError(f"{request_id} never ended")


def lines_floor(lines: list[str]) -> int:
    return sum(len(x) + 1 for x in lines)


# ---------------------------------------------------------------------------------------------
# The tasks. Each returns its floor (characters that carry the information).

PRIMES = """local n, found = 2, 0
while found < 200 do
  local prime = true
  for d = 2, math.floor(math.sqrt(n)) do if n % d == 0 then prime = false break end end
  if prime then found = found + 1 print(n) if found % 50 == 0 then sleep(0.3) end end
  n = n + 1
end
return found
"""


async def t_survey(a: Agent, ctx: dict[str, Any]) -> int:
    rows = sc(await a.call("probe-computers", {}))["computers"]
    info = []
    for row in rows:
        tid = row["traposId"]
        per = sc(await a.call("list-peripherals", {"traposId": tid}))
        free = sc(await a.call("exec-lua", {"traposId": tid, "code": "return fs.getFreeSpace('/')"}))
        info.append([tid, row.get("device"), [p["name"] for p in per.get("peripherals", [])],
                     (free.get("returns") or [None])[0]])
    return len(compact(info))


async def t_run(a: Agent, ctx: dict[str, Any]) -> int:
    await a.call("write-file", {"traposId": ctx["c1"], "path": "primes.lua", "content": PRIMES})
    start = sc(await a.call("run-file", {"traposId": ctx["c1"], "path": "primes.lua", "detach": True}))
    end, lines = await follow(a, start["requestId"])
    return lines_floor(lines) + len(compact(sc(end).get("returns")))


async def t_require(a: Agent, ctx: dict[str, Any]) -> int:
    await a.call("write-file", {"traposId": ctx["c1"], "path": "app/lib.lua",
                                "content": "local M = {}\nfunction M.go(x)\n  return x.size + 1\nend\nreturn M\n"})
    await a.call("write-file", {"traposId": ctx["c1"], "path": "app/main.lua",
                                "content": "local lib = require('lib')\nprint(lib.go(nil))\n"})
    bad = await a.call("run-file", {"traposId": ctx["c1"], "path": "app/main.lua"})
    err = str(sc(bad).get("error", ""))
    await a.call("read-file", {"traposId": ctx["c1"], "path": "app/lib.lua"})
    await a.call("write-file", {"traposId": ctx["c1"], "path": "app/lib.lua",
                                "content": "local M = {}\nfunction M.go(x)\n  return (x and x.size or 0) + 1\nend\nreturn M\n"})
    good = await a.call("run-file", {"traposId": ctx["c1"], "path": "app/main.lua"})
    return len(err) + len(str(sc(good).get("output", ""))) + 70


async def t_files(a: Agent, ctx: dict[str, Any]) -> int:
    blob = random.Random(7).randbytes(300_000)
    b64 = base64.b64encode(blob).decode()
    await a.call("write-file", {"traposId": ctx["c2"], "path": "data/blob.bin", "content": b64,
                                "encoding": "base64"})
    before = a.chars
    got = bytearray()
    offset: Any = 0
    calls = 0
    while offset is not None and calls < 200:
        d = sc(await a.call("read-file", {"traposId": ctx["c2"], "path": "data/blob.bin", "offset": offset}))
        calls += 1
        c = d.get("content", "")
        got += base64.b64decode(c) if d.get("encoding") == "base64" else c.encode()
        offset = d.get("nextOffset")
    ctx["read300"] = {"chars": a.chars - before, "calls": calls, "base64": len(b64),
                      "ratio": round((a.chars - before) / len(b64), 3), "exact": bytes(got) == blob}
    listing = sc(await a.call("list-files", {"traposId": ctx["c2"], "path": "data"}))
    await a.call("move-file", {"traposId": ctx["c2"], "from": "data/blob.bin", "to": "data/moved.bin"})
    await a.call("delete-file", {"traposId": ctx["c2"], "path": "data/moved.bin"})
    big = base64.b64encode(bytes(1_200_000)).decode()
    refused = await a.call("write-file", {"traposId": ctx["c2"], "path": "data/huge.bin", "content": big,
                                          "encoding": "base64"})
    return len(b64) + len(compact(listing.get("entries", []))) + len(first_line(refused)) + 40


PROMPT = "write('What is your name? ') local n = read() print('Hello, ' .. n) return n"


async def t_input(a: Agent, ctx: dict[str, Any]) -> int:
    await a.call("send-input", {"traposId": ctx["c2"], "text": "ls\n"})
    screen = sc(await a.call("read-screen", {"traposId": ctx["c2"]}))
    start = sc(await a.call("exec-lua", {"traposId": ctx["c2"], "code": PROMPT, "detach": True}))
    rid = start["requestId"]
    await a.call("wait-request", {"requestId": rid, "until": "name?", "timeoutMs": 5000})
    await a.call("send-input", {"traposId": ctx["c2"], "requestId": rid, "text": "Steve\n"})
    end, lines = await follow(a, rid)
    rows = [r.rstrip() for r in screen.get("rows", []) if r.strip()]
    return lines_floor(rows) + len("What is your name? Steve\nHello, Steve\n")


async def t_devices(a: Agent, ctx: dict[str, Any]) -> int:
    draw = "local m = peripheral.wrap('top') m.clear() m.setCursorPos(1,1) m.write('OK?') return true"
    await a.call("exec-lua", {"traposId": "1", "code": draw})
    mon = sc(await a.call("read-screen", {"traposId": "1", "monitor": "top"}))
    await a.call("send-input", {"traposId": "1", "monitor": "top", "touch": {"x": 1, "y": 1}})
    turtle = sc(await a.call("turtle-info", {"traposId": "turtle"}))
    moved = sc(await a.call("exec-lua", {"traposId": "turtle",
                                          "code": "return turtle.forward(), turtle.getFuelLevel()"}))
    slots = [[s["slot"], s.get("name"), s["count"]] for s in turtle.get("slots", []) if s.get("count")]
    rows = [r.rstrip() for r in mon.get("rows", []) if r.strip()]
    return lines_floor(rows) + len(compact([turtle.get("fuel"), slots, moved.get("returns")])) + 20


async def t_fleet(a: Agent, ctx: dict[str, Any]) -> int:
    many = sc(await a.call("exec-lua-many", {"match": "*", "code": "return os.getComputerID(), os.clock() > 0"}))
    floor = len(compact([[x.get("traposId"), x.get("returns")] for x in many.get("results", [])]))
    cursor: Any = None
    ids: list[str] = []
    for _ in range(10):
        args: dict[str, Any] = {"ping": False, "limit": 2}
        if cursor:
            args["cursor"] = cursor
        d = sc(await a.call("probe-computers", args))
        ids += [x["traposId"] for x in d.get("computers", [])]
        cursor = d.get("nextCursor")
        if not cursor:
            break
    return floor + len(compact(ids))


async def t_lost(a: Agent, ctx: dict[str, Any]) -> int:
    start = sc(await a.call("exec-lua", {"traposId": "1", "detach": True,
                                         "code": "for i = 1, 600 do print('tick ' .. i) sleep(0.5) end"}))
    rid = start["requestId"]
    await a.call("wait-request", {"requestId": rid, "until": "tick 2", "timeoutMs": 5000})
    host: Host = ctx["host"]
    host.kill9()
    host.start()
    async with connect(host) as c:
        b = Agent(c)
        await wait_linked(b)
        r = await b.call("wait-request", {"requestId": rid, "timeoutMs": 2000})
        a.chars += b.chars
        a.calls += b.calls
        ctx["lost_answer"] = first_line(r)
    return 100  # "that run was lost: its computer lived in the host that was killed"


async def t_resources(a: Agent, ctx: dict[str, Any]) -> int:
    await a.call("write-file", {"traposId": "1", "path": "notes.txt", "content": "hello resources\n"})
    c = a.client
    templates = await a.other(c.list_resource_templates())
    listed = await a.other(c.list_resources())
    uris = [str(r.uri) for r in getattr(listed, "resources", [])]
    floor = len(compact(uris)) + 3 * 60
    for uri in uris[:2]:
        r = await a.other(c.read_resource(uri))
        floor += sum(len(getattr(x, "text", "") or "") for x in getattr(r, "contents", []))
    await a.other(c.read_resource("trapdesk://computer/1/files/notes.txt"))
    ref = ResourceTemplateReference(type="ref/resource", uri=FILES_TEMPLATE)
    await a.other(c.complete(ref, {"name": "traposId", "value": ""}))
    await a.other(c.complete(ref, {"name": "path", "value": "no"}, {"traposId": "1"}))
    del templates
    return floor + len("hello resources\n") + 40


async def t_errors(a: Agent, ctx: dict[str, Any]) -> int:
    answers = [
        await a.call("exec-lua", {"traposId": "1", "code": 42}),
        await a.call("exec-lua", {"traposId": "99:nobody", "code": "return 1"}),
        await a.call("read-file", {"traposId": "1", "path": "../etc/passwd"}),
        await a.call("probe-computers", {"limit": 0}),
    ]
    try:
        answers.append(await a.call("exec-lua", {"traposId": "1", "code": "x = 1 --" + "a" * 5_000_000}))
    except Exception as e:  # the SDK raises on a JSON-RPC error: the agent reads its message
        a.chars += len(str(e))
    answers.append(await a.call("exec-lua", {"traposId": "1", "code": "while true do end", "timeoutMs": 2000}))
    start = sc(await a.call("exec-lua", {"traposId": "1", "code": "sleep(30)", "detach": True}))
    answers.append(await a.call("cancel-request", {"requestId": start["requestId"]}))
    return sum(len(first_line(r)) for r in answers) + 80


TASKS: list[tuple[str, Callable[[Agent, dict[str, Any]], Awaitable[int]]]] = [
    ("survey", t_survey), ("run", t_run), ("require", t_require), ("files", t_files),
    ("input", t_input), ("devices", t_devices), ("fleet", t_fleet), ("lost", t_lost),
    ("resources", t_resources), ("errors", t_errors),
]


# ---------------------------------------------------------------------------------------------
# Beside the tasks: following 5,000 lines, and the tool list.

FIVE_THOUSAND = "for i = 1, 5000 do print('line ' .. i) if i % 500 == 0 then sleep(0.1) end end return 5000"


async def follow_5000(a: Agent) -> dict[str, Any]:
    start = sc(await a.call("exec-lua", {"traposId": "2", "code": FIVE_THOUSAND, "detach": True}))
    end, lines = await follow(a, start["requestId"])
    output = sum(len(f"line {i}") + 1 for i in range(1, 5001))
    return {"chars": a.chars, "calls": a.calls, "output": output,
            "ratio": round(a.chars / (output + 20_000), 3), "ended": sc(end).get("status"),
            "complete": lines == [f"line {i}" for i in range(1, 5001)]}


def _post(url: str, token: str, body: dict[str, Any], session: str | None) -> tuple[str, str | None]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
    if session:
        headers["Mcp-Session-Id"] = session
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read().decode()
        sid = resp.headers.get("Mcp-Session-Id") or session
    if "event-stream" in (resp.headers.get("Content-Type") or ""):
        datas = [ln[5:].strip() for ln in raw.splitlines() if ln.startswith("data:")]
        raw = next((d for d in datas if d.startswith("{")), "")
    return raw, sid


def tool_list(host: Host) -> dict[str, Any]:
    """The `tools/list` response as sent (characters of its JSON-RPC message), and the context
    a client builds from it: instructions + each tool's name, description, compact inputSchema."""
    init, sid = _post(host.url, host.token, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "economy", "version": "0.1"}}}, None)
    _post(host.url, host.token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    raw, _ = _post(host.url, host.token, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
    tools = json.loads(raw)["result"]["tools"]
    instructions = json.loads(init)["result"].get("instructions") or ""
    parts = {"instructions": len(instructions)}
    parts["names"] = sum(len(t["name"]) for t in tools)
    parts["descriptions"] = sum(len(t.get("description") or "") for t in tools)
    parts["inputSchemas"] = sum(len(compact(t.get("inputSchema") or {})) for t in tools)
    parts["outputSchemas"] = sum(len(compact(t.get("outputSchema") or {})) for t in tools)
    context = parts["instructions"] + parts["names"] + parts["descriptions"] + parts["inputSchemas"]
    return {"toolsList": len(raw), "context": context, "tools": len(tools), **parts}


# ---------------------------------------------------------------------------------------------


async def stack_enter(client: Client) -> Client:
    return await client.__aenter__()


async def stack_exit(client: Client) -> None:
    # A connection to a host that was killed may fail to close cleanly; that costs nothing.
    with contextlib.suppress(Exception):
        await client.__aexit__(None, None, None)


CRAFTOS_TASKS = ("run", "require", "files", "input")


async def measure(binary: Path, only: set[str] | None, craftos: str | None = None) -> dict[str, Any]:
    host = Host(binary)
    ctx: dict[str, Any] = {"host": host, "c1": "1", "c2": "2"}
    figures: dict[str, Any] = {"tasks": {}}
    started = time.monotonic()
    try:
        figures["toolList"] = tool_list(host)
        async with connect(host) as client:
            await wait_linked(Agent(client))
        # A connection a task: the one that kills the host ends its own.
        for name, task in TASKS:
            if only is not None and name not in only:
                continue
            agent = Agent(await stack_enter(connect(host)))
            try:
                floor = await task(agent, ctx)
            finally:
                await stack_exit(agent.client)
            figures["tasks"][name] = {"chars": agent.chars, "calls": agent.calls, "floor": floor}
        if only is None or "follow5000" in only:
            async with connect(host) as client:
                figures["follow5000"] = await follow_5000(Agent(client))
        if "read300" in ctx:
            figures["read300"] = ctx.pop("read300")
        if craftos and (only is None or only & set(CRAFTOS_TASKS)):
            # The same tasks on a CraftOS-PC computer (the emulator's are above).
            host.add_craftos(craftos)
            async with connect(host) as client:
                await wait_linked(Agent(client), 5)
            ctx.update(c1="10", c2="10")
            for name, task in TASKS:
                if name not in CRAFTOS_TASKS or (only is not None and name not in only):
                    continue
                async with connect(host) as client:
                    agent = Agent(client)
                    floor = await task(agent, ctx)
                figures["tasks"][f"{name} (CraftOS-PC)"] = {"chars": agent.chars, "calls": agent.calls,
                                                          "floor": floor}
            if "read300" in ctx:
                figures["read300CraftOS"] = ctx.pop("read300")
        if "read300" in ctx:
            figures["read300"] = ctx["read300"]
        if "lost_answer" in ctx:
            figures["lostAnswer"] = ctx["lost_answer"]
    finally:
        host.stop()
    figures["seconds"] = round(time.monotonic() - started, 1)
    return figures


def table(now: dict[str, Any], before: dict[str, Any] | None) -> str:
    """The Markdown table: characters per task (calls in brackets) and the floor; with
    `before`, its figures beside these."""
    def cell(f: dict[str, Any] | None) -> str:
        return f"{f['chars']:,} ({f['calls']})" if f else "-"

    head = ["what", "before", "after", "floor"] if before else ["what", "characters (calls)", "floor"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    old = (before or {}).get("tasks", {})
    for name, f in now["tasks"].items():
        ratio = f"{f['floor']:,} (×{f['chars'] / max(f['floor'], 1):.1f})"
        rows.append("| " + " | ".join([name] + ([cell(old.get(name))] if before else []) + [cell(f), ratio]) + " |")
    for key, label, floor in [("read300", "read 300 KB back", "base64; target ≤ ×1.5"),
                              ("follow5000", "follow 5,000 lines to the end", "output + 20,000; target ≤ ×1.2")]:
        if key in now:
            f = now[key]
            b = (before or {}).get(key)
            prev = [f"{b['chars']:,} ({b['calls']}) ×{b['ratio']}" if b else "-"] if before else []
            base = f.get("base64") or f.get("output", 0) + 20_000
            rows.append(f"| {label} | " + " | ".join(prev + [f"{f['chars']:,} ({f['calls']}) ×{f['ratio']}",
                                                             f"{base:,} ({floor})"]) + " |")
    tl, btl = now.get("toolList", {}), (before or {}).get("toolList", {})
    for key, label, target in [("toolsList", "`tools/list` response", "40,000"),
                               ("context", "context: instructions + name, description, inputSchema", "16,000")]:
        if key in tl:
            prev = [f"{btl[key]:,}" if key in btl else "-"] if before else []
            rows.append(f"| {label} | " + " | ".join(prev + [f"{tl[key]:,}", f"target ≤ {target}"]) + " |")
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", type=Path, default=Path(os.environ.get("TRAPDESK_BIN") or (
        Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target") / "debug" / "trapdesk")))
    p.add_argument("--out", type=Path, help="save the figures as JSON")
    p.add_argument("--before", type=Path, help="figures to put beside these (JSON of --out)")
    p.add_argument("--only", help="comma-separated task names (and follow5000) to run")
    p.add_argument("--craftos", default=os.environ.get("CRAFTOS_PC"),
                   help="a CraftOS-PC launcher: run, require, files and input there too (default $CRAFTOS_PC)")
    args = p.parse_args()
    only = set(args.only.split(",")) if args.only else None
    figures = anyio.run(measure, args.bin, only, args.craftos or None)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    before = json.loads(args.before.read_text()) if args.before else None
    print(table(figures, before))
    print(f"\n{figures['seconds']} s", file=sys.stderr)


if __name__ == "__main__":
    main()
