"""Resources and completions through the official MCP Python SDK, against the real binary.

The host runs headless with two emulated demo computers (1:miner, 2:farm; the demo's turtle
and pocket computer are 3 and 4) and a policy in
its config.toml that makes every read of the farm need a person's approval; with no console
nobody could give it, and completions must not even try.

Run from the repository root after `cargo build`:
    python -m pytest tests/python -q -k resources
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp_types import BlobResourceContents, ResourceTemplateReference, TextResourceContents

from test_acceptance import SECRET, TOKENS, _binary, client, data, stdio, text

pytestmark = pytest.mark.anyio

FILES = "trapdesk://computer/{traposId}/files/{+path}"
SCREEN = "trapdesk://computer/{traposId}/screen"
MONITOR = "trapdesk://computer/{traposId}/monitor/{monitor}/screen"

POLICY = """
[[policy.rule]]
computer = "*farm"
agent = { read = "ask" }
"""


class PolicyHost:
    """`trapdesk --mcp-only --demo 2` with a config.toml of its own in its data dir."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="trapdesk-resources-")
        (Path(self.dir) / "config.toml").write_text(POLICY)
        self.proc = subprocess.Popen(
            [
                str(_binary()), "--mcp-only", "--demo", "2",
                "--gateway-bind", "127.0.0.1:0", "--mcp-bind", "127.0.0.1:0",
                "--data-dir", self.dir, "--secret", SECRET,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        self.url = ""
        while time.monotonic() < deadline and not self.url:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"\bMCP (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
        if not self.url:
            self.proc.kill()
            raise AssertionError("no start line with the MCP address:\n" + "".join(self.lines))
        TOKENS[self.url] = (Path(self.dir) / "mcp-token").read_text().strip()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


async def _wait_for_two(url: str) -> None:
    deadline = time.monotonic() + 60
    async with client(url, "resources-setup") as c:
        while time.monotonic() < deadline:
            probed = data(await c.call_tool("probe-computers", {"ping": False}))
            computers, shared = probed["computers"], probed.get("serves", [])
            # The two computers, the demo's turtle and its pocket computer.
            if len(computers) == 4 and all("exec-lua" in x.get("serves", shared) for x in computers):
                return
            await anyio.sleep(0.1)
    raise AssertionError("the demo computers did not link")



@pytest.fixture(scope="module")
def host():
    h = PolicyHost()
    try:
        anyio.run(_wait_for_two, h.url)
        yield h
    finally:
        h.stop()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_resources_templates_reads_and_screen(host: PolicyHost, mode: str) -> None:
    async with client(host.url, f"resources-{mode}", mode) as c:
        caps = c.server_capabilities
        assert caps is not None and caps.resources is not None and caps.completions is not None
        templates = (await c.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [FILES, SCREEN, MONITOR]
        listed = [str(r.uri) for r in (await c.list_resources()).resources]
        assert "trapdesk://computer/1:miner/screen" in listed

        r = await c.call_tool("write-file", {"traposId": "miner", "path": "notes/hello world.txt", "content": "grüße\n"})
        assert not r.is_error, text(r)
        for uri in (
            "trapdesk://computer/1:miner/files/notes/hello%20world.txt",
            "trapdesk://computer/1%3Aminer/files/notes/hello%20world.txt",
        ):
            contents = (await c.read_resource(uri)).contents
            assert len(contents) == 1
            assert isinstance(contents[0], TextResourceContents), contents
            assert contents[0].text == "grüße\n"

        blob = bytes(range(256))
        r = await c.call_tool(
            "write-file",
            {"traposId": "miner", "path": "b.bin", "content": base64.b64encode(blob).decode(), "encoding": "base64"},
        )
        assert not r.is_error, text(r)
        contents = (await c.read_resource("trapdesk://computer/1:miner/files/b.bin")).contents
        assert isinstance(contents[0], BlobResourceContents), contents
        assert base64.b64decode(contents[0].blob) == blob

        screen = (await c.read_resource("trapdesk://computer/1:miner/screen")).contents[0]
        assert isinstance(screen, TextResourceContents)
        rows = data(await c.call_tool("read-screen", {"traposId": "miner"}))["rows"]
        assert screen.text == "\n".join(rows)

        with pytest.raises(MCPError) as e:
            await c.read_resource("trapdesk://computer/miner/files/missing.txt")
        # Resource not found: -32002 before 2026-07-28, -32602 (invalid params) from it on.
        assert e.value.error.code == (-32002 if mode == "legacy" else -32602), e.value.error
        assert e.value.error.data["code"] == "not_found", e.value.error
        # The farm's reads need an approval nobody can give here: refused, said so.
        with pytest.raises(MCPError) as e:
            await c.read_resource("trapdesk://computer/2:farm/screen")
        assert e.value.error.code == -32003, e.value.error
        assert "refused by policy" in e.value.error.message

        log = data(await c.call_tool("session-log", {"kind": "resources/read", "who": f"resources-{mode}"}))
        assert len(log["events"]) == 6, log
        assert {e["traposId"] for e in log["events"]} == {"1:miner", "2:farm"}


async def test_completions_of_ids_and_paths_and_none_under_ask(host: PolicyHost) -> None:
    async with client(host.url, "resources-completer") as c:
        files = ResourceTemplateReference(type="ref/resource", uri=FILES)
        r = await c.complete(files, {"name": "traposId", "value": ""})
        # The farm needs an approval to read: it is not offered (the demo's turtle and pocket
        # computer are).
        assert r.completion.values == ["1:miner", "3:turtle", "4:pocket"]
        r = await c.complete(files, {"name": "traposId", "value": "1:M"})
        assert r.completion.values == ["1:miner"]

        await c.call_tool("write-file", {"traposId": "miner", "path": "progs/dig.lua", "content": "x"})
        await c.call_tool("write-file", {"traposId": "miner", "path": "progs/farm.lua", "content": "x"})
        r = await c.complete(files, {"name": "path", "value": "progs/d"}, {"traposId": "1:miner"})
        assert r.completion.values == ["progs/dig.lua"]
        r = await c.complete(files, {"name": "path", "value": "pro"}, {"traposId": "miner"})
        assert "progs/" in r.completion.values

        before = data(await c.call_tool("session-log", {"computer": "2:farm"}))["latest"]
        r = await c.complete(files, {"name": "path", "value": ""}, {"traposId": "2:farm"})
        assert r.completion.values == []
        # Nothing was tried on the farm: no request, no refusal, no approval waiting.
        log = data(await c.call_tool("session-log", {"computer": "2:farm", "since": before}))
        assert log["events"] == [], log
        computers = data(await c.call_tool("probe-computers", {"ping": False}))["computers"]
        assert all(x["pending"] == 0 for x in computers), computers


async def test_the_stdio_front_forwards_resources_and_completions(host: PolicyHost) -> None:
    async with client(stdio(host), "resources-stdio") as c:  # type: ignore[arg-type]
        caps = c.server_capabilities
        assert caps is not None and caps.resources is not None and caps.completions is not None
        templates = (await c.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [FILES, SCREEN, MONITOR]
        r = await c.call_tool("write-file", {"traposId": "miner", "path": "via-stdio.txt", "content": "piped\n"})
        assert not r.is_error, text(r)
        contents = (await c.read_resource("trapdesk://computer/1:miner/files/via-stdio.txt")).contents
        assert isinstance(contents[0], TextResourceContents) and contents[0].text == "piped\n"
        files = ResourceTemplateReference(type="ref/resource", uri=FILES)
        r = await c.complete(files, {"name": "path", "value": "via-"}, {"traposId": "miner"})
        assert r.completion.values == ["via-stdio.txt"]
