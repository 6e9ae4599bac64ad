#!/usr/bin/env bash
# Creates .venv and installs kernel-ports with its test extra. Idempotent.
# The Clang front end needs the system C++ standard library headers (g++).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v g++ >/dev/null 2>&1 || ! echo '#include <vector>' | g++ -x c++ -fsyntax-only - >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing g++ (C++ standard library headers)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
  else
    echo "setup: g++ and its C++ standard library headers are required (e.g. apt-get install g++)" >&2
    exit 2
  fi
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
