"""Links with a symbol order file whose names are first matched to the binary's own.

Called by link-ordered.sh as `link-ordered.py LINKER ARGS...` (gcc's collect2 and its
arguments) when ARGS hold `--symbol-ordering-file=FILE`. Links once without the order, reads
the binary's function names (`nm`), and maps each name of FILE that the binary lacks to the
binary's names that are the same once demangled with their crate hashes left out
(`std[e28293b1aa0f68bd]::...` and a legacy `...::h0123456789abcdef` alike). Then links again
with that list. If the matching fails, it links with FILE as given.
`SWITCHBOARD_LINK_REPORT=PATH` appends what matched to PATH (rustc hides a linker's messages).
"""
import os
import re
import subprocess
import sys

FLAG = "--symbol-ordering-file="


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                             text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return list(names)
    return out[: len(names)] if len(out) >= len(names) else list(names)


HASHES = re.compile(r"\[[0-9a-f]+\]|::h[0-9a-f]{16}$")


def normal(names):
    return [HASHES.sub("", d) for d in demangle(names)]


def main():
    cc, args = sys.argv[1], sys.argv[2:]
    at = next(i for i, a in enumerate(args) if a.startswith(FLAG))
    order = args[at][len(FLAG):]
    out = args[args.index("-o") + 1] if "-o" in args else "a.out"
    plain = args[:at] + args[at + 1:]
    first = subprocess.run([cc] + plain)
    if first.returncode != 0:
        return first.returncode
    try:
        listed = [n for n in open(order).read().split("\n") if n]
        nm = subprocess.run(["nm", "--defined-only", out], capture_output=True, text=True,
                            check=True).stdout
        have = [p[2] for p in (l.split() for l in nm.split("\n")) if len(p) == 3
                and p[1] in "tTwW"]
        present = set(have)
        missing = [n for n in listed if n not in present]
        by_normal = {}
        for name, key in zip(have, normal(have)) if missing else ():
            by_normal.setdefault(key, []).append(name)
        found = dict(zip(missing, normal(missing)))
        matched, result, seen = 0, [], set()
        for name in listed:
            names = [name] if name in present else by_normal.get(found[name], [])
            # Legacy mangling tells generic instances apart by the hash alone: without it they
            # are one name, and taking them all would lay out thousands of cold functions.
            names = names if len(names) == 1 else []
            matched += name not in present and bool(names)
            for n in names:
                if n not in seen:
                    seen.add(n)
                    result.append(n)
        fixed = out + ".order"
        with open(fixed, "w") as f:
            f.write("\n".join(result) + "\n")
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"link-ordered: order file used as given: {e}", file=sys.stderr)
        return subprocess.run([cc] + args).returncode
    report = os.environ.get("SWITCHBOARD_LINK_REPORT")
    if report:
        with open(report, "a") as f:
            f.write(f"{out}: {len(listed)} names, {len(listed) - len(missing)} as given, "
                    f"{matched} matched without their hashes, {len(result)} ordered\n")
    second = subprocess.run([cc] + args[:at] + [FLAG + fixed] + args[at + 1:])
    os.remove(fixed)
    return second.returncode


if __name__ == "__main__":
    sys.exit(main())
