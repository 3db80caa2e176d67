"""The agent's tour: nine everyday tasks done through the official MCP Python SDK, counting the
calls (and the bytes of the results) each one takes.

Two ways through each task:

- `after`: the tools as they are now (detached runs, `wait-request`, input to a running chunk,
  `reboot-computer`, `probe-computers` saying what each computer is, `session-log` filters).
- `before`: the best an agent could do with the tools of trapdesk 0.1 before those existed
  (a blocking `exec-lua` watched from a second connection, polling `probe-computers` after a
  reboot, asking each computer what it is with Lua, filtering the log by hand).

Under pytest only `after` runs, against the binary cargo built, and every task must reach its
goal. As a script it runs either way against any binary and prints the table that
docs/mcp.md ("The agent's tour") records:

    python3 tests/python/test_tour.py --bin target/debug/trapdesk --way after
    python3 tests/python/test_tour.py --bin /path/to/older/trapdesk --way before
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation

REPO = Path(__file__).resolve().parents[2]
SECRET = "tour-secret-4k8d2p9x7q"

# A 20 KB Lua program: what an agent reads and edits on a real computer.
PROGRAM = "".join(
    f"-- step {i}: dig a layer, then move on to the next one\nlocal step{i} = {i} * 2\n" for i in range(260)
)
PROGRAM += "return 'ok'\n"
assert 19_000 < len(PROGRAM.encode()) < 24_000

# A job that reports milestones as it goes: the agent acts at "stage 2", then takes the result.
JOB = "for i = 1, 3 do print('stage ' .. i) sleep(0.6) end print('done') return 42"
# A program that asks its user something.
PROMPT = "write('Name? ') local n = read() print('hello ' .. n) return n"


class Host:
    """`trapdesk --mcp-only --demo 2` on ephemeral ports."""

    def __init__(self, binary: Path) -> None:
        self.dir = tempfile.mkdtemp(prefix="trapdesk-tour-")
        self.proc = subprocess.Popen(
            [str(binary), "--mcp-only", "--demo", "2", "--gateway-bind", "127.0.0.1:0",
             "--mcp-bind", "127.0.0.1:0", "--data-dir", self.dir, "--secret", SECRET],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        self.url = ""
        deadline = time.monotonic() + 30
        assert self.proc.stderr is not None
        while time.monotonic() < deadline and not self.url:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"\bMCP (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
        assert self.url, "the host printed no MCP address"
        self.token = (Path(self.dir) / "mcp-token").read_text().strip()
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class Tally:
    calls: int = 0
    bytes: int = 0
    notes: list[str] = field(default_factory=list)


class Agent:
    """One agent's connection; every `call` counts toward the current task's tally."""

    def __init__(self, client: Client, tally: Callable[[], Tally]) -> None:
        self.client = client
        self.tally = tally

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        r = await self.client.call_tool(tool, args)
        t = self.tally()
        t.calls += 1
        t.bytes += sum(len(getattr(b, "text", "") or "") for b in r.content)
        t.bytes += len(json.dumps(r.structured_content or {}))
        return r


def data(r: Any) -> dict[str, Any]:
    assert r.structured_content is not None, r
    return r.structured_content


def text(r: Any) -> str:
    return r.content[0].text if r.content else ""


@contextlib.asynccontextmanager
async def _streams(host: Host):  # type: ignore[no-untyped-def]
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {host.token}"}) as http:
        async with streamable_http_client(host.url, http_client=http) as streams:
            yield streams


def connect(host: Host, name: str) -> Client:
    return Client(_streams(host), client_info=Implementation(name=name, version="0.1"))


# ---------------------------------------------------------------------------------------------
# The nine tasks. Each returns nothing and asserts its goal was reached; `way` picks the path.


async def survey(a: Agent, way: str) -> None:
    """Which computers are there, and what is each (runtime, kind, screen)?"""
    r = await a.call("probe-computers", {"ping": False})
    computers = data(r)["computers"]
    # `--demo 2`: two computers, the demo's turtle and its pocket computer.
    assert len(computers) == 4
    if way == "after":
        for c in computers:
            assert c["device"] in ("computer", "turtle", "pocket"), c
            assert c["runtime"] and c["screen"], c
        return
    code = ("local w, h = term.getSize() return _HOST, turtle ~= nil, pocket ~= nil, "
            "term.isColour(), w, h")
    for c in computers:
        r = await a.call("exec-lua", {"traposId": c["traposId"], "code": code})
        assert not r.is_error, text(r)


async def read_program(a: Agent, way: str) -> None:
    """Read a 20 KB program whole."""
    got, offset = b"", 0
    while offset is not None:
        r = await a.call("read-file", {"traposId": "1:miner", "path": "prog/dig.lua", "offset": offset})
        assert not r.is_error, text(r)
        d = data(r)
        got += d["content"].encode()
        offset = d.get("nextOffset")
    assert got == PROGRAM.encode()


async def edit_and_check(a: Agent, way: str) -> None:
    """Change the program and make sure the computer holds exactly the new version."""
    new = PROGRAM.replace("return 'ok'", "return 'ok', 2")
    r = await a.call("write-file", {"traposId": "1:miner", "path": "prog/dig.lua", "content": new})
    assert not r.is_error, text(r)
    r = await a.call("file-info", {"traposId": "1:miner", "path": "prog/dig.lua"})
    assert data(r)["crc32"] == zlib.crc32(new.encode()), data(r)


async def long_job(a: Agent, way: str, second: Agent) -> None:
    """Start a job, act when it reports stage 2, then take its result."""
    if way == "after":
        r = await a.call("exec-lua", {"traposId": "2:farm", "code": JOB, "detach": True})
        assert data(r)["status"] == "running", data(r)
        rid = data(r)["requestId"]
        r = await a.call("wait-request", {"requestId": rid, "until": "stage 2", "timeoutMs": 10000})
        assert "stage 2" in json.dumps(data(r)), data(r)
        r = await a.call("wait-request", {"requestId": rid, "timeoutMs": 10000})
        assert data(r)["returns"][0]["value"] == 42, data(r)
        return
    # Before: the call blocks, so the agent watches it from a second connection.
    result: dict[str, Any] = {}

    async def run() -> None:
        r = await a.call("exec-lua", {"traposId": "2:farm", "code": JOB, "timeoutMs": 10000})
        result.update(data(r))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        seen = False
        while not seen:
            await anyio.sleep(0.3)
            r = await second.call("computer-output", {"traposId": "2:farm", "lines": 20})
            seen = "stage 2" in data(r)["output"]
    assert result["returns"][0]["value"] == 42, result


async def answer_prompt(a: Agent, way: str) -> None:
    """Run a program that asks for a name, and answer it."""
    if way == "after":
        r = await a.call("exec-lua", {"traposId": "2:farm", "code": PROMPT, "detach": True})
        rid = data(r)["requestId"]
        r = await a.call("wait-request", {"requestId": rid, "until": "Name?", "timeoutMs": 10000})
        r = await a.call("send-input", {"traposId": "2:farm", "requestId": rid, "text": "bob", "keys": ["enter"]})
        assert not r.is_error, text(r)
        r = await a.call("wait-request", {"requestId": rid, "timeoutMs": 10000})
        assert "hello bob" in json.dumps(data(r)), data(r)
        return
    # Before: send-input had no requestId; the keys go to whatever reads the keyboard, which
    # on a real computer is the player's shell as often as the chunk. Typed blind, with a
    # timeout as the way out.
    async with anyio.create_task_group() as tg:
        async def run() -> None:
            r = await a.call("exec-lua", {"traposId": "2:farm", "code": PROMPT, "timeoutMs": 3000})
            ok = "hello bob" in json.dumps(r.structured_content or {})
            a.tally().notes.append("answered blind" if ok else "not answered: " + text(r).splitlines()[0][:60])

        tg.start_soon(run)
        await anyio.sleep(1)
        await a.call("send-input", {"traposId": "2:farm", "text": "bob", "keys": ["enter"]})


async def reboot(a: Agent, way: str) -> None:
    """Reboot a computer and go on once it is back."""
    if way == "after":
        r = await a.call("reboot-computer", {"traposId": "2:farm", "timeoutMs": 30000})
        assert not r.is_error, text(r)
    else:
        await a.call("exec-lua", {"traposId": "2:farm", "code": "os.reboot()"})
        await anyio.sleep(0.2)
        while True:
            r = await a.call("probe-computers", {"ping": False})
            shared = data(r).get("serves", [])
            if any(c["traposId"] == "2:farm" and "exec-lua" in c.get("serves", shared) for c in data(r)["computers"]):
                break
            await anyio.sleep(0.5)
    r = await a.call("exec-lua", {"traposId": "2:farm", "code": "return 1"})
    assert not r.is_error, text(r)


async def tidy(a: Agent, way: str) -> None:
    """Make a folder, move a file into it, delete an old one."""
    await a.call("write-file", {"traposId": "1:miner", "path": "old.txt", "content": "x"})
    for tool, args in (("make-dir", {"path": "archive"}),
                       ("move-file", {"from": "prog/dig.lua", "to": "archive/dig.lua"}),
                       ("delete-file", {"path": "old.txt"})):
        r = await a.call(tool, {"traposId": "1:miner", **args})
        assert not r.is_error, text(r)


async def audit(a: Agent, way: str) -> None:
    """What ran on 2:farm, by whom?"""
    if way == "after":
        r = await a.call("session-log", {"computer": "2:farm", "limit": 50})
        events = data(r)["events"]
    else:
        r = await a.call("session-log", {"limit": 200})
        events = [e for e in data(r)["events"] if (e.get("traposId") or "").startswith("2")]
    assert any(e.get("what") == "exec-lua" for e in events), events


async def debug(a: Agent, way: str) -> None:
    """A program fails: find the line and the traceback."""
    await a.call("write-file", {"traposId": "1:miner", "path": "bad.lua",
                                "content": "local function f(t) return t.x end\nprint('start')\nf(nil)\n"})
    r = await a.call("run-file", {"traposId": "1:miner", "path": "bad.lua"})
    assert r.is_error
    assert "bad.lua:1" in text(r), text(r)


TASKS: list[tuple[str, Callable[..., Awaitable[None]]]] = [
    ("survey the computers", survey),
    ("read a 20 KB program", read_program),
    ("edit it and check the copy", edit_and_check),
    ("long job: act at a milestone, then its result", long_job),
    ("answer a program's prompt", answer_prompt),
    ("reboot and go on", reboot),
    ("tidy files", tidy),
    ("audit one computer's calls", audit),
    ("debug a failing program", debug),
]


async def tour(binary: Path, way: str) -> list[tuple[str, Tally]]:
    host = Host(binary)
    rows: list[tuple[str, Tally]] = []
    try:
        async with connect(host, "tour-agent") as c1, connect(host, "tour-watcher") as c2:
            current = Tally()
            a, second = Agent(c1, lambda: current), Agent(c2, lambda: current)
            # Setup, not counted: the demo's computers, turtle and pocket computer linked, the
            # program on the computer.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                r = await c1.call_tool("probe-computers", {"ping": False})
                cs, shared = data(r)["computers"], data(r).get("serves", [])
                if len(cs) == 4 and all("exec-lua" in x.get("serves", shared) for x in cs):
                    break
                await anyio.sleep(0.2)
            r = await c1.call_tool("write-file", {"traposId": "1:miner", "path": "prog/dig.lua", "content": PROGRAM})
            assert not r.is_error, text(r)
            for name, task in TASKS:
                current = Tally()
                with anyio.fail_after(60):
                    if task is long_job:
                        await task(a, way, second)
                    else:
                        await task(a, way)
                rows.append((name, current))
    finally:
        host.stop()
    return rows



@pytest.mark.anyio
async def test_the_tour_after() -> None:
    # Where `cargo build` put it: CARGO_TARGET_DIR when set, as cargo itself reads it.
    binary = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target") / "debug" / "trapdesk"
    if not binary.exists():
        subprocess.run(["cargo", "build", "--bin", "trapdesk"], cwd=REPO, check=True)
    rows = await tour(binary, "after")
    assert len(rows) == len(TASKS)
    for name, t in rows:
        print(f"{name}: {t.calls} calls, {t.bytes} bytes")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True, type=Path)
    p.add_argument("--way", choices=["before", "after"], required=True)
    args = p.parse_args()
    rows = anyio.run(tour, args.bin, args.way)
    print(f"| task | calls ({args.way}) | bytes of results | note |")
    print("| --- | --- | --- | --- |")
    for name, t in rows:
        print(f"| {name} | {t.calls} | {t.bytes} | {'; '.join(t.notes)} |")
    print(f"| total | {sum(t.calls for _, t in rows)} | {sum(t.bytes for _, t in rows)} | |")


if __name__ == "__main__":
    main()
