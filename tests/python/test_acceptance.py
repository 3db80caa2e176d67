"""Acceptance from outside: the official MCP Python SDK drives the real `trapdesk` binary.

The host runs headless with two emulated demo computers, and the demo's turtle and pocket
computer (the real Lua client); this file
talks to it as a stranger's agent would, over Streamable HTTP (both MCP eras) and over
stdio through `trapdesk mcp-stdio`, and ends by stopping the host with SIGTERM.

Run from the repository root after `cargo build` (or `cargo test`):
    python -m pytest tests/python -q
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path
from typing import Any

import contextlib

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation

REPO = Path(__file__).resolve().parents[2]
# Where `cargo build` put it: CARGO_TARGET_DIR when set, as cargo itself reads it.
# `$TRAPDESK_BIN` names another binary (tests/python/test_tour.py's "before" runs an older one).
BIN = Path(
    os.environ.get("TRAPDESK_BIN")
    or Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target") / "debug" / "trapdesk"
)

TOOLS = {
    "probe-computers",
    "exec-lua-many",
    "exec-lua",
    "run-file",
    "write-file",
    "read-file",
    "list-files",
    "move-file",
    "delete-file",
    "make-dir",
    "file-info",
    "computer-output",
    "session-log",
    "cancel-request",
    "wait-request",
    "read-screen",
    "send-input",
    "reboot-computer",
    "list-peripherals",
    "turtle-info",
}

pytestmark = pytest.mark.anyio

# A strong secret (the host refuses weak ones given by hand).
SECRET = "acceptance-secret-7f3k9q2m"

# Each host's local token by its MCP URL: every request needs one, as a stranger's agent
# would be told by `trapdesk agent add` (the local one here, read from the data dir).
TOKENS: dict[str, str] = {}



def _binary() -> Path:
    if not BIN.exists():
        subprocess.run(["cargo", "build", "--bin", "trapdesk"], cwd=REPO, check=True)
    assert BIN.exists(), f"{BIN} was not built"
    return BIN


class HostProcess:
    """`trapdesk --mcp-only --demo 2` on ephemeral ports; its stderr is collected."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="trapdesk-accept-")
        self.proc = subprocess.Popen(
            [
                str(_binary()),
                "--mcp-only",
                "--demo",
                "2",
                "--gateway-bind",
                "127.0.0.1:0",
                "--mcp-bind",
                "127.0.0.1:0",
                "--data-dir",
                self.dir,
                "--secret",
                SECRET,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RUST_LOG": "info"},
        )
        self.lines: list[str] = []
        self.url = self._read_start_line()
        # Written before the host listens, so it is there once the start line is.
        self.token = (Path(self.dir) / "mcp-token").read_text().strip()
        TOKENS[self.url] = self.token
        threading.Thread(target=self._drain, daemon=True).start()

    def _read_start_line(self) -> str:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"\bMCP (http://\S+/mcp)", line)
            if m:
                return m.group(1)
        self.proc.kill()
        raise AssertionError("no start line with the MCP address:\n" + "".join(self.lines))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def data(r: Any) -> dict[str, Any]:
    assert r.structured_content is not None, r
    return r.structured_content


def text(r: Any) -> str:
    return r.content[0].text if r.content else ""


@contextlib.asynccontextmanager
async def _with_token(url: str, token: str):  # type: ignore[no-untyped-def]
    """Streamable HTTP with `Authorization: Bearer`, as a client configured with a header sends."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def client(server: Any, name: str, mode: str = "auto") -> Client:
    if isinstance(server, str):
        server = _with_token(server, TOKENS[server])
    return Client(server, client_info=Implementation(name=name, version="0.1"), mode=mode)


def stdio(host: HostProcess) -> StdioServerParameters:
    """`trapdesk mcp-stdio` as an agent starts it: it finds the host's token in its data dir."""
    return StdioServerParameters(command=str(BIN), args=["mcp-stdio", "--connect", host.url, "--data-dir", host.dir])


async def _wait_for_two(url: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    last: Any = None
    async with client(url, "acceptance-setup") as c:
        while time.monotonic() < deadline:
            r = await c.call_tool("probe-computers", {"ping": False})
            last = data(r)["computers"]
            shared = data(r).get("serves", [])
            # The two computers, the demo's turtle (3) and its pocket computer (4).
            if len(last) == 4 and all("exec-lua" in x.get("serves", shared) for x in last):
                return last
            await anyio.sleep(0.1)
    raise AssertionError(f"the demo computers did not link: {last}")




async def test_tools_are_the_nine_with_schemas_annotations_and_titles(host: HostProcess) -> None:
    async with client(host.url, "acceptance-http") as c:
        assert c.server_info is not None and c.server_info.name == "trapdesk"
        tools = (await c.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        assert len(tools) == len(TOOLS)
        for t in tools:
            assert t.title, t.name
            assert t.input_schema.get("type") == "object", t.name
            assert t.output_schema and t.output_schema.get("type") == "object", t.name
            a = t.annotations
            assert a is not None, t.name
            for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
                assert getattr(a, hint) is not None, (t.name, hint)
        exec_lua = next(t for t in tools if t.name == "exec-lua")
        assert {"traposId", "code"} <= set(exec_lua.input_schema["required"])
        assert next(t for t in tools if t.name == "read-file").annotations.read_only_hint is True


async def test_detach_then_wait_request(host: HostProcess) -> None:
    """A detached run answers at once; wait-request finds a line, then gives the full result."""
    async with client(host.url, "acceptance-detach") as c:
        started = time.monotonic()
        r = await c.call_tool(
            "exec-lua",
            {"traposId": "miner", "code": "print('warming') sleep(0.5) print('ready') sleep(0.5) return 7", "detach": True},
        )
        assert not r.is_error, text(r)
        d = data(r)
        assert d["status"] == "running" and d["requestId"].startswith("h-"), d
        assert time.monotonic() - started < 5
        rid = d["requestId"]
        r = await c.call_tool("wait-request", {"requestId": rid, "until": "ready", "timeoutMs": 20000})
        assert not r.is_error, text(r)
        w = data(r)
        assert w["status"] == "running" and w["matched"] is True and w["line"] == "ready", w
        r = await c.call_tool("wait-request", {"requestId": rid, "after": w["cursor"], "timeoutMs": 20000})
        assert not r.is_error, text(r)
        end = data(r)
        assert end["status"] == "ok" and end["returns"] == [{"type": "number", "value": 7}], end


async def test_probe_pings_both_computers(host: HostProcess) -> None:
    async with client(host.url, "acceptance-http") as c:
        r = await c.call_tool("probe-computers", {})
        assert not r.is_error, text(r)
        computers = data(r)["computers"]
        assert [x["traposId"] for x in computers] == ["1:miner", "2:farm", "3:turtle", "4:pocket"]
        sizes = {"computer": (51, 19), "turtle": (39, 13), "pocket": (26, 20)}
        for x, device in zip(computers, ["computer", "computer", "turtle", "pocket"]):
            assert x["ping"]["ok"] is True and isinstance(x["ping"]["rttMs"], int), x
            # What each is, as its client said at hello (emulated: advanced, colour).
            assert x["device"] == device and x["advanced"] is True and x["command"] is False, x
            w, h = sizes[device]
            assert x["screen"] == {"width": w, "height": h}, x
            assert "trapdesk emulator" in x["runtime"], x


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_exec_lua_on_both_computers(host: HostProcess, mode: str) -> None:
    """`auto` ends up on the stateless 2026-07-28 era, `legacy` on the initialize handshake."""
    async with client(host.url, f"acceptance-{mode}", mode) as c:
        code = "print('id', os.getComputerID()) return os.getComputerLabel(), 6 * 7"
        for target, label in (("1", "miner"), ("farm", "farm")):
            r = await c.call_tool("exec-lua", {"traposId": target, "code": code})
            assert not r.is_error, text(r)
            d = data(r)
            assert d["ok"] is True
            assert d["returns"] == [{"type": "string", "value": label}, {"type": "number", "value": 42}]
            assert d["output"] == f"id\t{d['traposId'].split(':')[0]}\n"
            assert d["traposId"].endswith(":" + label)
            assert d["requestId"].startswith("h-")
            # The text block carries a one-line summary and the same data as JSON.
            assert text(r).splitlines()[0]
        # The session log names this agent by its clientInfo name, in either era.
        r = await c.call_tool("session-log", {"limit": 20})
        assert any(e.get("who") == f"acceptance-{mode}" and e.get("what") == "exec-lua" for e in data(r)["events"])


async def test_run_file_with_args_and_files_round_trip(host: HostProcess) -> None:
    async with client(host.url, "acceptance-files") as c:
        prog = "local a, b = ...\nprint(a .. '+' .. b)\nreturn tonumber(a) + tonumber(b), #arg\n"
        r = await c.call_tool("write-file", {"traposId": "2:farm", "path": "prog/add.lua", "content": prog})
        assert not r.is_error, text(r)
        r = await c.call_tool("run-file", {"traposId": "farm", "path": "prog/add.lua", "args": ["2", "40"]})
        assert not r.is_error, text(r)
        assert data(r)["returns"][:2] == [{"type": "number", "value": 42}, {"type": "number", "value": 2}]
        assert data(r)["output"] == "2+40\n"

        blob = bytes(range(256)) * 3
        r = await c.call_tool(
            "write-file",
            {"traposId": "miner", "path": "blob.bin", "content": base64.b64encode(blob).decode(), "encoding": "base64"},
        )
        assert not r.is_error and data(r)["bytes"] == len(blob), text(r)
        r = await c.call_tool("read-file", {"traposId": "miner", "path": "blob.bin"})
        assert data(r)["encoding"] == "base64"
        assert base64.b64decode(data(r)["content"]) == blob

        words = "grüße, ☃ and 𝄞\n"
        await c.call_tool("write-file", {"traposId": "miner", "path": "words.txt", "content": words})
        r = await c.call_tool("read-file", {"traposId": "miner", "path": "words.txt"})
        assert (data(r)["content"], data(r)["encoding"]) == (words, "utf8")

        r = await c.call_tool("list-files", {"traposId": "miner"})
        names = {e["name"] for e in data(r)["entries"]}
        assert {"blob.bin", "words.txt"} <= names, names


async def test_failures_are_error_results(host: HostProcess) -> None:
    async with client(host.url, "acceptance-errors") as c:
        r = await c.call_tool("exec-lua", {"traposId": "miner", "code": "print('so far') error('kaput')"})
        assert r.is_error is True
        assert "kaput" in text(r).splitlines()[0]
        assert data(r)["output"] == "so far\n" and data(r)["ok"] is False

        r = await c.call_tool("run-file", {"traposId": "miner", "path": "nope.lua"})
        assert r.is_error is True

        r = await c.call_tool("exec-lua", {"traposId": "nowhere", "code": "return 1"})
        assert r.is_error is True
        assert data(r)["error"]["code"] == "unknown_computer"
        assert "1:miner" in text(r) and "2:farm" in text(r)
        assert set(data(r)["linked"]) == {"1:miner", "2:farm", "3:turtle", "4:pocket"}

        r = await c.call_tool("exec-lua", {"traposId": "miner", "code": "sleep(30)", "timeoutMs": 300})
        assert r.is_error is True and data(r)["error"]["code"] == "timeout"


async def test_live_output_arrives_as_progress(host: HostProcess) -> None:
    seen: list[tuple[float, str | None, float]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message, time.monotonic()))

    async with client(host.url, "acceptance-progress") as c:
        started = time.monotonic()
        r = await c.call_tool(
            "exec-lua",
            {"traposId": "miner", "code": "for i=1,3 do print(i) sleep(0.3) end"},
            progress_callback=on_progress,
        )
        done = time.monotonic()
        assert not r.is_error, text(r)
        assert "".join(m or "" for _, m, _ in seen) == "1\n2\n3\n"
        assert [p for p, _, _ in seen] == sorted({p for p, _, _ in seen})
        # The first line arrived while the chunk was still sleeping.
        assert seen[0][2] - started < done - started - 0.4, (seen, done - started)


async def test_stdio_proxy_joins_the_session_under_the_agents_name(host: HostProcess) -> None:
    params = stdio(host)
    async with client(params, "acceptance-stdio-agent") as c:  # type: ignore[arg-type]
        tools = (await c.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        r = await c.call_tool("exec-lua", {"traposId": "farm", "code": "print('via stdio') return 1"})
        assert not r.is_error, text(r)
        assert data(r)["output"] == "via stdio\n"
        assert data(r)["traposId"] == "2:farm"
    async with client(host.url, "acceptance-log-reader") as c:
        # A long log is cut from its oldest end to fit one result: ask for the recent part.
        r = await c.call_tool("session-log", {"limit": 30})
        events = data(r)["events"]
        who = {e.get("who") for e in events}
        assert "acceptance-stdio-agent" in who, sorted(w for w in who if w)
        assert any(e.get("who") == "acceptance-stdio-agent" and e.get("what") == "exec-lua" for e in events)


async def _pending(url: str) -> int:
    async with client(url, "acceptance-watch") as c:
        r = await c.call_tool("probe-computers", {"ping": False})
        return sum(x["pending"] for x in data(r)["computers"])


@pytest.mark.parametrize("via", ["http", "stdio"])
async def test_abandoning_a_call_cancels_it_on_the_computer(host: HostProcess, via: str) -> None:
    """The SDK sends notifications/cancelled when a call's scope is cancelled; the chunk stops."""
    server: Any = host.url
    if via == "stdio":
        server = stdio(host)
    async with client(server, f"acceptance-cancel-{via}") as c:
        with anyio.move_on_after(1.0) as scope:
            await c.call_tool("exec-lua", {"traposId": "farm", "code": "print('zz') sleep(30)"})
        assert scope.cancelled_caught
        deadline = time.monotonic() + 5
        while await _pending(host.url) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert await _pending(host.url) == 0
        r = await c.call_tool("exec-lua", {"traposId": "farm", "code": "return 'free'"})
        assert data(r)["returns"][0]["value"] == "free"
    async with client(host.url, "acceptance-log-reader") as c:
        r = await c.call_tool("session-log", {"limit": 40})
        assert any(
            e.get("event") == "call" and e.get("who") == f"acceptance-cancel-{via}" and e.get("status") == "cancelled"
            for e in data(r)["events"]
        ), data(r)["events"]


def test_stdio_without_a_host_fails_with_one_clear_line() -> None:
    p = subprocess.run(
        [str(_binary()), "mcp-stdio", "--connect", "http://127.0.0.1:9/mcp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode != 0
    assert p.stdout == ""
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, p.stderr
    assert "127.0.0.1:9" in lines[0] and "no trapdesk" in lines[0], lines[0]


async def test_stdio_standalone_runs_its_own_host(tmp_path: Path) -> None:
    """With no trapdesk running, `mcp-stdio --standalone` serves a headless host of its own."""
    params = StdioServerParameters(
        command=str(_binary()),
        args=[
            "mcp-stdio", "--standalone", "--connect", "http://127.0.0.1:9/mcp",
            "--gateway-bind", "127.0.0.1:0", "--mcp-bind", "127.0.0.1:0",
            "--data-dir", str(tmp_path), "--secret", SECRET, "--demo", "1",
        ],
    )
    async with client(params, "acceptance-standalone") as c:  # type: ignore[arg-type]
        deadline = time.monotonic() + 20
        computers: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            computers = data(await c.call_tool("probe-computers", {"ping": False}))["computers"]
            # `--demo 1`: the computer, the demo's turtle and its pocket computer.
            if len(computers) == 3:
                break
            await anyio.sleep(0.2)
        assert [x["traposId"] for x in computers] == ["1:miner", "2:turtle", "3:pocket"]
        r = await c.call_tool("exec-lua", {"traposId": "miner", "code": "return 6 * 7"})
        assert data(r)["returns"][0]["value"] == 42


def test_foreign_origin_is_refused(host: HostProcess) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "evil", "version": "1"},
            },
        }
    ).encode()

    def post(origin: str | None, token: str | None = host.token) -> int:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if origin:
            headers["Origin"] = origin
        req = urllib.request.Request(host.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as e:
            return e.code

    assert post("http://evil.example") == 403
    assert post("http://localhost:3000") == 200
    assert post(None) == 200
    # As a computer of the same Minecraft server asks: loopback, no Origin, no token.
    assert post(None, token=None) == 401
    assert post(None, token="td_guessed") == 401


async def test_the_sdk_without_a_token_is_refused_with_a_reason(host: HostProcess) -> None:
    """The official client, given no token, cannot even list the tools (this SDK reports the
    401 as a generic "Server returned an error response")."""
    listed = None
    with pytest.raises(Exception):
        async with Client(host.url, client_info=Implementation(name="no-token", version="0.1")) as c:
            listed = await c.list_tools()
    assert listed is None


async def test_results_tell_the_truth(host: HostProcess) -> None:
    async with client(host.url, "acceptance-truth") as c:
        # Schema failures are error results naming the field (MCP 2025-11-25), not -32602.
        r = await c.call_tool("exec-lua", {"traposId": "miner"})
        assert r.is_error is True, r
        assert data(r)["error"]["code"] == "invalid_arguments" and data(r)["field"] == "code"
        r = await c.call_tool("exec-lua", {"traposId": "miner", "code": "return 1", "timeoutMs": 0})
        assert r.is_error is True and data(r)["field"] == "timeoutMs"
        # A timeout keeps the output so far.
        r = await c.call_tool(
            "exec-lua",
            {"traposId": "miner", "timeoutMs": 2000, "code": "print('start') sleep(0.3) print('mid') sleep(5)"},
        )
        assert r.is_error is True and data(r)["error"]["code"] == "timeout"
        assert data(r)["output"] == "start\nmid\n", data(r)
        # Large output: head, tail, true totals.
        r = await c.call_tool("exec-lua", {"traposId": "farm", "code": "for i=1,10000 do print('line '..i) end return 'done'"})
        d = data(r)
        assert d["outputLines"] == 10000 and d["outputTruncated"] is True
        assert d["output"].startswith("line 1\n") and d["output"].endswith("line 10000\n")
        assert text(r).startswith('returned "done"; 10000 lines of output')


async def test_file_tools_input_to_a_chunk_and_reboot(host: HostProcess) -> None:
    async with client(host.url, "acceptance-ftools") as c:
        t = "farm"
        r = await c.call_tool("write-file", {"traposId": t, "path": "ft/a.txt", "content": "abc"})
        assert not r.is_error, text(r)
        r = await c.call_tool("file-info", {"traposId": t, "path": "ft/a.txt"})
        d = data(r)
        assert d["size"] == 3 and d["isDir"] is False and d["crc32"] == zlib.crc32(b"abc"), d
        assert isinstance(d["modified"], int) and d["readOnly"] is False, d
        r = await c.call_tool("make-dir", {"traposId": t, "path": "ft/a.txt"})
        assert r.is_error and data(r)["error"]["code"] == "exists", text(r)
        r = await c.call_tool("move-file", {"traposId": t, "from": "ft/a.txt", "to": "ft/b.txt"})
        assert not r.is_error, text(r)
        r = await c.call_tool("delete-file", {"traposId": t, "path": "ft"})
        assert r.is_error and data(r)["error"]["code"] == "not_empty", text(r)
        r = await c.call_tool("make-dir", {"traposId": t, "path": "../x"})
        assert r.is_error and data(r)["error"]["code"] == "bad_path", text(r)

        # A chunk in read() gets the text sent to its requestId; the shell does not.
        result: dict[str, Any] = {}

        async def reader() -> None:
            result["r"] = await c.call_tool(
                "exec-lua", {"traposId": t, "code": "return read()", "timeoutMs": 20000}
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            rid = None
            for _ in range(100):
                probe = data(await c.call_tool("probe-computers", {"ping": False, "match": "2:*"}))
                pending = probe["computers"][0].get("pendingRequests", [])
                if pending:
                    rid = pending[0]["requestId"]
                    assert isinstance(pending[0]["ageMs"], int), pending
                    break
                await anyio.sleep(0.05)
            assert rid is not None, "the chunk never showed as pending"
            await anyio.sleep(0.3)
            r = await c.call_tool("send-input", {"traposId": t, "requestId": rid, "text": "py\n"})
            assert not r.is_error, text(r)
        d = data(result["r"])
        assert d["returns"] == [{"type": "string", "value": "py"}], d

        # reboot-computer answers once the computer has linked again.
        r = await c.call_tool("reboot-computer", {"traposId": t})
        assert not r.is_error, text(r)
        assert data(r)["rebooted"] is True and data(r)["tookMs"] > 0, data(r)
        r = await c.call_tool("exec-lua", {"traposId": t, "code": "return 1"})
        assert not r.is_error, text(r)


def test_zz_sigterm_stops_the_host_cleanly(host: HostProcess) -> None:
    # A call pending when the host stops gets `shutting_down` at once, with its output so far.
    result: dict[str, Any] = {}

    async def pending_call() -> None:
        async with client(host.url, "acceptance-shutdown") as c:
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    r = await c.call_tool("exec-lua", {"traposId": "miner", "code": "print('so far') sleep(30)"})
                    result["r"] = r
                    result["at"] = time.monotonic()

                tg.start_soon(call)
                await anyio.sleep(1.0)
                result["sent"] = time.monotonic()
                host.proc.send_signal(signal.SIGTERM)

    anyio.run(pending_call)
    r = result["r"]
    assert r.is_error is True and data(r)["error"]["code"] == "shutting_down", r
    assert data(r)["output"] == "so far\n", data(r)
    assert result["at"] - result["sent"] < 2.0, result["at"] - result["sent"]
    try:
        code = host.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        host.proc.kill()
        raise AssertionError("host did not stop within 20 s of SIGTERM:\n" + "".join(host.lines[-20:]))
    assert code == 0, "".join(host.lines[-20:])
