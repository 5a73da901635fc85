#!/bin/sh
# gcc's `-wrapper` for the release `switchboard` link (build.rs): runs gcc's subcommand as is,
# except the link itself (collect2, with `--symbol-ordering-file=`), which goes through
# link-ordered.py: it matches the order file's names to the binary's own first. Mangled names
# carry hashes of their crates' metadata, which change with any dependency or feature change,
# and an order file whose names no longer match lays nothing out (one lazy server was 22 MB
# instead of 11). Without python3 or nm, the file is used as it is.
case "$*" in
*--symbol-ordering-file=*)
  if command -v python3 >/dev/null 2>&1 && command -v nm >/dev/null 2>&1; then
    exec python3 "$(dirname "$0")/link-ordered.py" "$@"
  fi
  ;;
esac
exec "$@"
