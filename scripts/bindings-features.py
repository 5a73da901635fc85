#!/usr/bin/env python3
"""Checks that the bindings' builds find the workspace's builds fresh.

Each binding is built alone: maturin builds `bindings/python` (`cargo rustc` on its manifest),
`bindings/node/build.js` runs `cargo build -p switchboard-node`; and cargo picks the features
of every dependency from the packages it builds: unless a binding's dependency list (its
"workspace's feature set" section) asks for every feature `cargo test --workspace` builds the
shared dependencies with, its build compiles much of the graph again (minutes on 2 cores).
This compares the feature sets with `cargo tree` (nothing is compiled), for the target and the
host (proc macros, build scripts) apart, and exits 1 naming what to add to which manifest.

Run from the repository's root: `python3 scripts/bindings-features.py [PACKAGE...]` (both
bindings when none is named).
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Dict, Set, Tuple

Key = Tuple[str, bool]  # (package and version, built for the host)

# Each binding's manifest, and the packages only it builds (PyO3's, napi's).
BINDINGS = {
    "switchboard-python": (
        "bindings/python/Cargo.toml",
        re.compile(r"^(pyo3|switchboard-python|target-lexicon|indoc|unindent|heck|memoffset|portable-atomic)\b"),
    ),
    "switchboard-node": (
        "bindings/node/Cargo.toml",
        re.compile(r"^(napi|switchboard-node|ctor|link-section|convert_case|nohash-hasher|rustc-hash)\b"),
    ),
}


def features(args: list) -> Dict[Key, Set[str]]:
    run = subprocess.run(
        ["cargo", "tree", "--locked", "--prefix", "depth", "--format", "{p}|{f}",
         "-e", "normal,build,dev", *args],
        capture_output=True,
        text=True,
    )
    if run.returncode:
        sys.exit(run.stderr)
    found: Dict[Key, Set[str]] = {}
    # (depth, host) of the nodes above the current line; sections ([build-dependencies])
    # by the depth their packages are listed at.
    stack: list = []
    sections: Dict[int, str] = {}
    for line in run.stdout.splitlines():
        match = re.match(r"^(\d+)(.*)$", line)
        if not match:
            continue
        depth, rest = int(match.group(1)), match.group(2)
        if rest.startswith("[build-dependencies]"):
            sections[depth] = "build"
            continue
        if rest.startswith("[dev-dependencies]"):
            sections[depth] = "dev"
            continue
        if "|" not in rest:
            continue
        rest = rest.replace(" (*)", "")
        package, listed = rest.split("|", 1)
        proc_macro = "(proc-macro)" in package
        package = package.replace(" (proc-macro)", "").strip()
        while stack and stack[-1][0] >= depth:
            stack.pop()
        host = (stack[-1][1] if stack else False) or proc_macro or sections.get(depth) == "build"
        for deeper in [d for d in sections if d > depth]:
            del sections[deeper]
        stack.append((depth, host))
        found.setdefault((package, host), set()).update(f for f in listed.split(",") if f)
    return found


def check(package: str, workspace: Dict[Key, Set[str]]) -> bool:
    manifest, own = BINDINGS[package]
    bindings = features(["-p", package])
    drift = []
    for (dependency, host), wanted in sorted(bindings.items()):
        if own.match(dependency):
            continue
        # `cargo tree` shows a package built alike for the host and the target once, under
        # whichever comes first: then only the other label has it.
        have = workspace.get((dependency, host), workspace.get((dependency, not host)))
        if have is None:
            drift.append(f"{dependency} ({'host' if host else 'target'}): not built by the workspace")
        elif have != wanted:
            missing, extra = sorted(have - wanted), sorted(wanted - have)
            drift.append(
                f"{dependency} ({'host' if host else 'target'}): add {missing}"
                + (f", and the workspace lacks {extra}" if extra else "")
            )
    if drift:
        print(
            f"{manifest}: its dependencies' features differ from the workspace's,"
            " so its build would compile them again:",
            *drift,
            sep="\n  ",
            file=sys.stderr,
        )
        return False
    print(f"bindings-features: {package}'s {len(bindings)} dependencies match the workspace's")
    return True


def main() -> int:
    workspace = features(["--workspace"])
    results = [check(package, workspace) for package in (sys.argv[1:] or list(BINDINGS))]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
