"""benches/agent_economy.py runs, and counts what a client receives.

The count is checked two ways: on results built by hand (a text block counts its text, any
other block its JSON, `structuredContent` its compact JSON), and on a real call, against the
characters of the same result read off the wire. Then the script runs two of its tasks and the
tool-list measurement against its own `--demo` host and prints its table.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult, ImageContent, TextContent

from test_acceptance import HostProcess, _binary, client

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benches"))
import agent_economy  # noqa: E402

pytestmark = pytest.mark.anyio


def test_a_result_costs_each_block_and_the_json_of_structured_content() -> None:
    image = ImageContent(type="image", data="AAAA", mime_type="image/png")
    r = CallToolResult(
        content=[TextContent(type="text", text="héllo\nworld"), image],
        structured_content={"ok": True, "lines": ["a", "é"]},
    )
    image_json = '{"type":"image","data":"AAAA","mimeType":"image/png"}'
    assert agent_economy.cost(r) == len("héllo\nworld") + len(image_json) + len('{"ok":true,"lines":["a","é"]}')
    assert agent_economy.cost(CallToolResult(content=[])) == 0


def _raw_call(host: HostProcess, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """One tools/call in a session of its own, the result as the wire carried it."""

    def post(body: dict[str, Any], session: str | None) -> tuple[str, str | None]:
        return agent_economy._post(host.url, host.token, body, session)

    _, sid = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}, None)
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    raw, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}, sid)
    return json.loads(raw)["result"]


async def test_a_real_call_costs_what_the_wire_carried(host: HostProcess) -> None:
    args = {"traposId": "1", "code": "print('a') print('b') return 1, 'two'"}
    async with client(host.url, "economy-count") as c:
        agent = agent_economy.Agent(c)
        await agent.call("exec-lua", args)
    wire = _raw_call(host, "exec-lua", args)
    texts = sum(len(b["text"]) for b in wire["content"] if b["type"] == "text")
    expected = texts + len(agent_economy.compact(wire["structuredContent"]))
    # durationMs and requestId differ between the two runs by a few digits at most.
    assert abs(agent.chars - expected) <= 8, (agent.chars, expected)
    assert agent.calls == 1


def test_the_script_runs_and_prints_its_table(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    before = tmp_path / "before.json"
    before.write_text(json.dumps({"tasks": {"survey": {"chars": 99999, "calls": 9, "floor": 1}},
                                  "toolList": {"toolsList": 66012, "context": 30000}}))
    p = subprocess.run(
        [sys.executable, str(REPO / "benches" / "agent_economy.py"), "--bin", str(_binary()),
         "--only", "survey,resources", "--craftos", "", "--out", str(out), "--before", str(before)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert p.returncode == 0, p.stderr
    figures = json.loads(out.read_text())
    assert set(figures["tasks"]) == {"survey", "resources"}
    for name, f in figures["tasks"].items():
        assert f["calls"] > 0 and f["chars"] >= f["floor"] > 0, (name, f)
    tl = figures["toolList"]
    assert tl["tools"] > 0 and tl["toolsList"] > tl["context"] > tl["descriptions"] > 0
    assert "| survey | 99,999 (9) | " in p.stdout, p.stdout
    assert "| `tools/list` response | 66,012 | " in p.stdout, p.stdout
