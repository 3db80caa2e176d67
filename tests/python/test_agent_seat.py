"""The agent's seat through the official MCP Python SDK, for what the other files do not walk:
`computer-output` followed with its `after` cursor (only newer lines, a time on each, the
request's status) and `session-log`'s filters (one entry per call, the resolved traposId).

Run from the repository root after `cargo build`:
    python -m pytest tests/python -q -k agent_seat
"""

from __future__ import annotations

import time

import anyio
import pytest

from test_acceptance import HostProcess, client, data, text


pytestmark = pytest.mark.anyio




async def test_output_is_followed_with_after(host: HostProcess) -> None:
    async with client(host.url, "seat-output") as c:
        code = "for i = 1, 6 do print('tick ' .. i) sleep(0.3) end return 'done'"
        r = await c.call_tool("exec-lua", {"traposId": "farm", "code": code, "detach": True})
        rid = data(r)["requestId"]
        seen: list[str] = []
        cursor = None
        status = "running"
        deadline = time.monotonic() + 30
        while status == "running" and time.monotonic() < deadline:
            args = {"traposId": "farm", "requestId": rid}
            if cursor is not None:
                args["after"] = cursor
            r = await c.call_tool("computer-output", args)
            assert not r.is_error, text(r)
            d = data(r)
            lines = d["output"].splitlines()
            assert len(d["times"]) == len(lines), d
            if lines:
                assert isinstance(d["at"], int) and d["at"] > 1_700_000_000_000, d
            # Without a cursor the newest page comes; with one, only what is newer: no line twice.
            seen += lines
            cursor = d["cursor"] if d["cursor"] is not None else cursor
            status = d["status"]
            await anyio.sleep(0.4)
        assert status == "ok", d
        r = await c.call_tool("computer-output", {"traposId": "farm", "requestId": rid, "after": cursor})
        seen += data(r)["output"].splitlines()
        assert seen == [f"tick {i}" for i in range(1, 7)], seen


async def test_session_log_filters_and_one_entry_per_call(host: HostProcess) -> None:
    async with client(host.url, "seat-log-a") as a, client(host.url, "seat-log-b") as b:
        first = data(await a.call_tool("session-log", {"limit": 1}))["latest"]
        await a.call_tool("exec-lua", {"traposId": "FARM", "code": "return 1"})
        await b.call_tool("exec-lua", {"traposId": 1, "code": "return 2"})
        await b.call_tool("list-files", {"traposId": "miner"})
        d = data(await a.call_tool("session-log", {"since": first, "computer": "2:farm"}))
        calls = [e for e in d["events"] if e["event"] == "call"]
        # One entry for the call, under the name it resolved to, not the one typed.
        assert [(e["who"], e["what"], e["traposId"]) for e in calls] == [("seat-log-a", "exec-lua", "2:farm")], d
        d = data(await a.call_tool("session-log", {"since": first, "who": "seat-log-b", "kind": "exec-lua"}))
        assert [(e["what"], e["traposId"]) for e in d["events"]] == [("exec-lua", "1:miner")], d
