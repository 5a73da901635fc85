"""A call's cost from Python: the testkit's `echo` over stdio, one call at a time, through
`Host` and through `SyncHost` (BENCHMARKS.md, "Python bindings").

    SWITCHBOARD_TESTKIT_SERVER=target/debug/testkit-server python bindings/python/benches/calls.py [ROUNDS]

Each round starts a host on a scratch configuration, makes 200 warm-up calls, then calls for
1 s (at most 4000 calls) and prints calls/s and the median latency; the same shape as the
`switchboard` case of `crates/switchboard/benches/calls.rs` (`--calls-case switchboard stdio mt
4000 10`), which is the Rust figure to pair it with.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, List, Tuple

from switchboard import Host, SyncHost

KIT = os.environ["SWITCHBOARD_TESTKIT_SERVER"]
ARGUMENTS = {"text": "hello"}


def options(folder: str) -> dict:
    return {
        "cwd": folder,
        "isolated": True,
        "state_dir": os.path.join(folder, "state"),
        "env": {"HOME": folder, "SWITCHBOARD_CONFIG_DIR": os.path.join(folder, "config")},
        "allow": ["mcp__kit"],
    }


def figures(latencies: List[float], seconds: float) -> Tuple[float, float]:
    return len(latencies) / seconds, statistics.median(latencies) * 1e6


async def through_host(folder: str) -> Tuple[float, float]:
    async with Host.start(config=[{"kit": {"command": KIT}}], **options(folder)) as host:
        await host.wait_settled(30)
        for _ in range(200):
            await host.call("mcp__kit__echo", ARGUMENTS)
        latencies: List[float] = []
        started = time.perf_counter()
        while len(latencies) < 4000 and time.perf_counter() - started < 1.0:
            one = time.perf_counter()
            await host.call("mcp__kit__echo", ARGUMENTS)
            latencies.append(time.perf_counter() - one)
        return figures(latencies, time.perf_counter() - started)


def through_sync_host(folder: str) -> Tuple[float, float]:
    with SyncHost.start([{"kit": {"command": KIT}}], **options(folder)) as host:
        host.wait_settled(30)
        for _ in range(200):
            host.call("mcp__kit__echo", ARGUMENTS)
        latencies: List[float] = []
        started = time.perf_counter()
        while len(latencies) < 4000 and time.perf_counter() - started < 1.0:
            one = time.perf_counter()
            host.call("mcp__kit__echo", ARGUMENTS)
            latencies.append(time.perf_counter() - one)
        return figures(latencies, time.perf_counter() - started)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    cases: List[Tuple[str, Callable[[str], Tuple[float, float]]]] = [
        ("Host", lambda folder: asyncio.run(through_host(folder))),
        ("SyncHost", through_sync_host),
    ]
    for _ in range(rounds):
        for name, case in cases:
            with tempfile.TemporaryDirectory() as folder:
                rate, p50 = case(folder)
            print(f"{name:8} seq: {rate:.0f} calls/s, p50 {p50:.0f} us")


if __name__ == "__main__":
    main()
