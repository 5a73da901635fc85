"""Fixtures: real servers (the repository's testkit-server and the reference
server-everything) in a scratch configuration; no file of the machine's is read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict

import pytest

from switchboard import Host

# How long servers get to connect, and an event to come: bounds, not sleeps.
SETTLE = 30.0

ROOT = Path(__file__).resolve().parents[3]


def _testkit() -> str:
    given = os.environ.get("SWITCHBOARD_TESTKIT_SERVER")
    if given:
        return given
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = target / "debug" / "testkit-server"
    if not path.exists():
        raise RuntimeError(
            f"no testkit-server at {path}: build it (cargo build --workspace --bins) "
            "or set SWITCHBOARD_TESTKIT_SERVER"
        )
    return str(path)


@pytest.fixture(scope="session")
def testkit() -> str:
    """The path of the test server (`testkit-server`, flags inject faults)."""
    return _testkit()


@pytest.fixture(scope="session")
def everything() -> str:
    """The path of the reference server-everything (scripts/install-partners.sh)."""
    path = os.environ.get("SWITCHBOARD_PARTNER_EVERYTHING")
    if not path:
        raise RuntimeError(
            "SWITCHBOARD_PARTNER_EVERYTHING is not set: source .partners/partners.env "
            "(scripts/test.sh does)"
        )
    return path


@pytest.fixture
def scratch(tmp_path: Path) -> Dict[str, Any]:
    """Host.start's options for a scratch configuration: only the test's servers, its own
    state folder, a home of its own."""
    return {
        "cwd": tmp_path,
        "isolated": True,
        "state_dir": tmp_path / "state",
        "env": {
            "HOME": str(tmp_path),
            "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "config"),
            "SWITCHBOARD_MANAGED_CONFIG": str(tmp_path / "managed.json"),
        },
    }


def kit(testkit: str, *args: str, **entry: Any) -> Dict[str, Any]:
    """A testkit-server entry with these flags."""
    return {"command": testkit, "args": list(args), **entry}


async def started(servers: Dict[str, Any], scratch: Dict[str, Any], **options: Any) -> Host:
    """A host over these servers, settled."""
    host = await Host.start(config=[servers], **scratch, **options)
    readiness = await host.wait_settled(SETTLE)
    assert readiness.settled, readiness.pending
    return host
