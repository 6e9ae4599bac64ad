#!/usr/bin/env bash
# Sets up (if needed) and checks the bundled sample engine with registry.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/kernel-ports check "$@"
