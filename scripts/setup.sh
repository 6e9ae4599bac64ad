#!/usr/bin/env bash
# Creates .venv and installs kernel-ports with its test and mlx extras. Idempotent.
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
# The real MLX headers (the [mlx] extra) and Debian's cxx crate (rust/cxx.h), so the Clang front end judges through
# what engines build with; without either, the bundled stubs are a complete fallback and the tests that need the
# real headers skip, naming the package.
# pip runs again only when pyproject.toml changed since the last complete install (the install is editable, so code
# changes need none): asking pip to confirm an installed environment took ~3 s of every check-sample.sh and test.sh.
# Remove .venv/.kernel-ports-installed to force it.
# The editable install is a plain path entry (setuptools' compat mode), not its default import finder: that
# finder is imported by every interpreter the venv starts, ~0.02 s each (a served check's client, each test's
# command), which a package installed from its wheel never pays.
editable=(--config-settings editable_mode=compat)
stamp=.venv/.kernel-ports-installed
want="$(.venv/bin/python -c 'import hashlib, sys; print(sys.version.split()[0], hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())') compat"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  rm -f "$stamp"
  if .venv/bin/python -m pip install -q --disable-pip-version-check "${editable[@]}" -e '.[test,mlx]' 2>/dev/null; then
    echo "$want" > "$stamp"
  else
    echo "setup: the [mlx] extra (MLX C++ headers) could not be installed; the bundled stubs are used" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check "${editable[@]}" -e '.[test]'
  fi
fi
if ! ls /usr/share/cargo/registry/cxx-*/include/cxx.h >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ]; then
  echo "setup: installing librust-cxx-dev (rust/cxx.h)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends librust-cxx-dev; } \
    >/dev/null 2>&1 || echo "setup: librust-cxx-dev could not be installed; the bundled cxx stub is used" >&2
fi
