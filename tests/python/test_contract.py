"""One contract for results and errors, checked by the official MCP Python SDK.

Every tool's error results fit its own `outputSchema` (checked with a JSON Schema validator,
and by the SDK itself, which validates `structuredContent` client-side); every bad argument
answers `invalid_arguments`, an unknown one by name; the text block is a summary an agent
reads, never the JSON again; field names are camelCase.

Run from the repository root after `cargo build`:
    python -m pytest tests/python -q -k contract
The binary is `$TRAPDESK_BIN`, else `$CARGO_TARGET_DIR/debug/trapdesk`, else
`target/debug/trapdesk`.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from test_acceptance import HostProcess, client, data, text


pytestmark = pytest.mark.anyio

# Calls that fail, at least one per tool: bad arguments (unknown, missing, wrong type, out of
# range), unknown computers, paths outside the root, a folder read as a file, a Lua error.
FAILING: list[tuple[str, dict[str, Any]]] = [
    ("probe-computers", {"timeOut": 5000}),
    ("probe-computers", {"limit": "many"}),
    ("exec-lua-many", {"code": "return 1"}),
    ("exec-lua-many", {"match": "*", "code": "error('many')"}),
    ("exec-lua-many", {"computers": ["nowhere"], "code": "return 1"}),
    ("exec-lua", {"traposId": "miner", "code": "return 1", "timeOut": 5000}),
    ("exec-lua", {"traposId": "nowhere", "code": "return 1"}),
    ("exec-lua", {"traposId": "miner", "code": "printError('e') error('kaput')"}),
    ("exec-lua", {"traposId": "miner", "code": "return 1", "timeoutMs": 0}),
    ("run-file", {"traposId": "miner", "path": "../up.lua"}),
    ("run-file", {"traposId": "miner", "path": "nope.lua"}),
    ("write-file", {"traposId": "miner", "path": "/../escape.txt", "content": "x"}),
    ("write-file", {"traposId": "miner", "path": "b.bin", "content": "***", "encoding": "base64"}),
    ("read-file", {"traposId": "miner", "path": "rom"}),
    ("read-file", {"traposId": "miner", "path": "/../escape.txt"}),
    ("read-file", {"traposId": "miner", "path": "x", "length": 0}),
    ("list-files", {"traposId": "miner", "path": ".."}),
    ("move-file", {"traposId": "miner", "from": "startup.lua", "to": "../x"}),
    ("delete-file", {"traposId": "miner", "path": "a/../../x"}),
    ("make-dir", {"traposId": "miner", "path": "../d"}),
    ("file-info", {"traposId": "miner"}),
    ("computer-output", {"traposId": "miner", "requestId": "h-999999"}),
    ("computer-output", {"traposId": "nowhere"}),
    ("session-log", {"limit": -1}),
    ("session-log", {"bogus": True}),
    ("cancel-request", {"requestId": "h-999999"}),
    ("read-screen", {"traposId": "nowhere"}),
    ("send-input", {"traposId": "miner", "keys": ["entr"]}),
    ("send-input", {"traposId": "miner", "requestId": "h-999999", "text": "x"}),
    ("send-input", {"traposId": "miner", "touch": {"x": 1, "y": 1}}),
    ("send-input", {"traposId": "miner", "monitor": "top", "text": "x"}),
    ("send-input", {"traposId": "miner", "monitor": "top", "touch": {"x": 1.5, "y": 1}}),
    ("read-screen", {"traposId": "miner", "monitor": "nowhere"}),
    ("list-peripherals", {"traposId": "nowhere"}),
    ("turtle-info", {"traposId": "miner"}),
    ("reboot-computer", {"traposId": "nowhere"}),
    ("reboot-computer", {"traposId": "miner", "timeoutMs": 0}),
    ("session-log", {"since": "yesterday-ish"}),
    ("wait-request", {"requestId": "h-999999"}),
    ("wait-request", {"requestId": "h-1", "timeoutMs": 0}),
]


def _snake_keys(d: Any) -> list[str]:
    """Field names with `_` in a result, its `error`, and the objects of its lists."""
    out: list[str] = []
    if not isinstance(d, dict):
        return out
    out += [k for k in d if "_" in k]
    if isinstance(d.get("error"), dict):
        out += [k for k in d["error"] if "_" in k]
    for v in d.values():
        if isinstance(v, list):
            for item in v:
                if isinstance(item, dict):
                    out += [k for k in item if "_" in k]
    return out




async def test_every_error_result_fits_its_output_schema(host: HostProcess) -> None:
    async with client(host.url, "contract-errors") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {name for name, _ in FAILING} == set(tools), "a failing call for every tool"
        for name, args in FAILING:
            # The SDK validates structuredContent against the tool's outputSchema as it
            # receives the result, and raises when it does not fit.
            r = await c.call_tool(name, args)
            assert r.is_error is True, (name, args, text(r))
            d = data(r)
            schema = tools[name].output_schema
            jsonschema.validate(d, schema)
            await c.session.validate_tool_result(name, r)
            assert d["ok"] is False, (name, d)
            assert not _snake_keys(d), (name, d)
            # The text block says what happened; it is not the JSON again.
            t = text(r)
            assert t and not t.lstrip().startswith("{"), (name, t)
            assert json.dumps(d, separators=(",", ":")) not in t, (name, t)
            code = d["error"]["code"] if isinstance(d.get("error"), dict) else None
            assert code != "internal", (name, args, d)
            assert code not in ("bad_arguments", "bad_request"), (name, d)


async def test_bad_arguments_answer_one_code_and_name_the_field(host: HostProcess) -> None:
    async with client(host.url, "contract-arguments") as c:
        for t in (await c.list_tools()).tools:
            assert t.input_schema.get("additionalProperties") is False, t.name
            r = await c.call_tool(t.name, {"timeOut": 5000})
            d = data(r)
            assert r.is_error is True and d["error"]["code"] == "invalid_arguments", (t.name, d)
            assert d["field"] == "timeOut", (t.name, d)
        for name, args, field in [
            ("exec-lua", {"traposId": "miner"}, "code"),
            ("exec-lua", {"traposId": "miner", "code": "return 1", "timeoutMs": 0}, "timeoutMs"),
            ("read-file", {"traposId": "miner", "path": "x", "length": 0}, "length"),
            ("send-input", {"traposId": "miner", "keys": ["entr"]}, "keys"),
            ("send-input", {"traposId": "miner", "touch": {"x": 1, "y": 1}}, "touch"),
            ("send-input", {"traposId": "miner", "monitor": "top", "keys": ["enter"]}, "keys"),
            ("send-input", {"traposId": "miner", "monitor": "top", "touch": {"x": 0, "y": 1}}, "touch.x"),
            ("exec-lua-many", {"code": "return 1"}, "match"),
        ]:
            d = data(await c.call_tool(name, args))
            assert d["error"]["code"] == "invalid_arguments", (name, d)
            assert d["field"].startswith(field), (name, d)


async def test_paths_outside_the_root_are_bad_path(host: HostProcess) -> None:
    async with client(host.url, "contract-paths") as c:
        r = await c.call_tool("write-file", {"traposId": "miner", "path": "/../escape.txt", "content": "x"})
        assert r.is_error is True
        assert data(r)["error"]["code"] == "bad_path", data(r)
        assert text(r).startswith("bad_path: path: /../escape.txt is outside the computer's root"), text(r)
        r = await c.call_tool("read-file", {"traposId": "miner", "path": "rom"})
        assert r.is_error is True
        assert "content" not in data(r) and "bytes" not in data(r), data(r)


async def test_results_read_as_text_and_camel_case(host: HostProcess) -> None:
    async with client(host.url, "contract-text") as c:
        r = await c.call_tool(
            "exec-lua", {"traposId": "miner", "code": "print('a') printError('oops') return 7"}
        )
        assert r.is_error is False, text(r)
        d = data(r)
        assert (d["output"], d["errorOutput"]) == ("a\noops\n", "oops\n")
        assert {"durationMs", "outputBytes", "outputLines", "outputTruncated"} <= set(d), d
        assert not _snake_keys(d), d
        # The output goes once, in structuredContent; the text names where it is.
        assert text(r) == "returned 7; 2 lines of output\n\n[returned]\n7\n\n[in structuredContent: output, errorOutput]\n"
        await c.session.validate_tool_result("exec-lua", r)
        # A numeric id, as the MCP Inspector sends it, and a label in another case.
        for target in (1, "1:MINER"):
            r = await c.call_tool("exec-lua", {"traposId": target, "code": "return 1"})
            assert r.is_error is False and data(r)["traposId"] == "1:miner", text(r)


async def test_an_oversized_call_is_refused_naming_the_limit(host: HostProcess) -> None:
    """A body over the host's limit (4 MiB) is a 413 with a JSON-RPC error the SDK surfaces:
    the limit, not "Server returned an error response"."""
    from mcp.shared.exceptions import MCPError

    async with client(host.url, "big-body") as c:
        with pytest.raises(MCPError) as refused:
            await c.call_tool("exec-lua", {"traposId": "miner", "code": "x" * (5 << 20)})
    message = str(refused.value)
    assert "4194304" in message and "too large" in message, message
