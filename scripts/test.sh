#!/usr/bin/env bash
# Sets up (if needed) and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
