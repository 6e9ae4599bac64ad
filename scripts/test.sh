#!/usr/bin/env bash
# Sets up (if needed) and runs the test suite, on two worker processes (pytest-xdist) unless the arguments choose
# (`-n N`, `-n 0` for one process, or `-p no:xdist`): the suite is mostly single-threaded Python and Clang.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
workers=(-n 2)
for arg in "$@"; do
  case "$arg" in -n|-n*|--numprocesses*|no:xdist) workers=() ;; esac
done
exec .venv/bin/python -m pytest "${workers[@]}" "$@"
