"""The per-file cache key folds in the front ends' own source (FRONTEND_VERSION): a change to a module that can change
what a front end records makes every entry written before it a miss, wherever that module sits in the package.
A path the key names that is not there would be skipped without a word, so each must exist."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from kernel_ports.cache import units
from tests.conftest import REPO

PACKAGE = REPO / "kernel_ports"


def test_every_source_the_key_names_is_there():
    for rel in units._FRONT_END_SOURCES:
        assert (PACKAGE / rel).is_file(), rel
    for pkg in units._FRONT_END_PACKAGES:
        assert list((PACKAGE / pkg).glob("*.py")), pkg


def _version_of(package_copy) -> str:
    env = dict(os.environ, PYTHONPATH=str(package_copy.parent))
    out = subprocess.run([sys.executable, "-c", "from kernel_ports.cache.units import FRONTEND_VERSION as v; print(v)"],
                         env=env, capture_output=True, text=True, check=True, cwd=package_copy.parent)
    return out.stdout.strip()


def test_the_key_follows_the_front_ends_source_and_only_it(tmp_path):
    copy = tmp_path / "kernel_ports"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "headers", "stubs"))
    before = _version_of(copy)
    assert _version_of(copy) == before
    changed = {}
    for rel in ("index/merge.py", "frontend/clang/walk.py", "frontend/witness.py", "cache/units.py", "facts.py",
                "reporters/text.py", "checkers/drift.py"):
        with open(copy / rel, "a", encoding="utf-8") as fh:
            fh.write("\n# an edit\n")
        now = _version_of(copy)
        changed[rel] = now != before
        before = now
    assert changed == {"index/merge.py": True, "frontend/clang/walk.py": True, "frontend/witness.py": True,
                       "cache/units.py": True, "facts.py": True, "reporters/text.py": False, "checkers/drift.py": False}
