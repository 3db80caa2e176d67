"""What every file of the acceptance suite shares: the asyncio backend for anyio's pytest
plugin, and a host per test module (`trapdesk --mcp-only --demo 2`, test_acceptance.py's
HostProcess) once both demo computers, the turtle and the pocket computer have linked. A module with a host of another kind (a
policy in its config, as test_resources.py has) defines its own `host`.

The binary is `$TRAPDESK_BIN`, else `$CARGO_TARGET_DIR/debug/trapdesk`, else
`target/debug/trapdesk`; it is built when missing.
"""

from __future__ import annotations

import anyio
import pytest

from test_acceptance import HostProcess, _wait_for_two


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def host():
    h = HostProcess()
    try:
        anyio.run(_wait_for_two, h.url)
        yield h
    finally:
        h.stop()
