"""Fixtures of the recipes' tests: the repository's `switchboard` and `testkit-server`, built
by cargo. These tests need no `switchboard` Python package: the frameworks talk to
`switchboard serve --stdio` as to any MCP server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _built(variable: str, name: str) -> str:
    given = os.environ.get(variable)
    if given:
        return given
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = target / "debug" / name
    if not path.exists():
        raise RuntimeError(
            f"no {name} at {path}: build it (cargo build --workspace --bins) or set {variable}"
        )
    return str(path)


@pytest.fixture(scope="session")
def testkit() -> str:
    """The path of the test server (`testkit-server`)."""
    return _built("SWITCHBOARD_TESTKIT_SERVER", "testkit-server")


@pytest.fixture(scope="session")
def switchboard_bin() -> str:
    """The path of the `switchboard` command."""
    return _built("SWITCHBOARD_BIN", "switchboard")
