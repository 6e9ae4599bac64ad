"""Fuzzing the gate with what a pull request controls: seeded byte-level mutations of the sample engine's sources
(truncations, deleted braces, random bytes, deep nesting, a 10 MB line, duplicated chunks) and random edits of
the registry's keys, types and values (tests/fuzz_cases.py).

Every case runs the real command line in its own process: it must end with exit 0, 1 or 2, one-line errors, no
traceback and no internal error, within the per-file timeout; a case that damages a launcher must be reported
for that file while the other launchers' tables are still found. Cases share the session's parse cache, so a
case re-parses only what it changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.fuzz_cases import LAUNCHERS, Case, registry_cases, source_cases
from tests.mutate import ENGINE, REGISTRY, REPO

SEED = 20261201
PARSE_TIMEOUT = 20  # seconds, per file: a run may take a few of them, never hang past them
SOURCE_CASES = source_cases(SEED, 14)
REGISTRY_CASES = registry_cases(SEED, 10)


def run_case(tmp_path, case: Case, *extra):
    root = tmp_path / "engine"
    shutil.copytree(ENGINE, root, symlinks=True)
    registry = tmp_path / "registry.yaml"
    registry.write_text(case.registry or REGISTRY.read_text(encoding="utf-8"), encoding="utf-8")
    if case.path:
        (root / case.path).write_bytes(case.data)
    argv = [sys.executable, "-m", "kernel_ports", "check", "--registry", str(registry), "--root", str(root),
            "--format", "json", "--jobs", "2", "--limit", f"parse_timeout_s={PARSE_TIMEOUT}", *extra]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=dict(os.environ),
                          timeout=3 * PARSE_TIMEOUT + 30)
    elapsed = time.monotonic() - started
    print(f"{case.name}: exit {proc.returncode} in {elapsed:.1f} s")
    assert proc.returncode in (0, 1, 2), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    if proc.returncode == 2:
        assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
        return None
    assert proc.stderr == ""
    return json.loads(proc.stdout)


def kernels_of(path: str) -> set:
    import yaml

    return {k["name"] for k in yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))["kernels"] if k["file"] == path}


@pytest.mark.parametrize("case", SOURCE_CASES, ids=[c.name for c in SOURCE_CASES])
def test_a_mutated_source_is_judged_or_reported(tmp_path, case):
    doc = run_case(tmp_path, case)
    assert doc is not None, "a bad source file is a finding, not a usage error"
    findings = doc["findings"]
    if case.damages:
        about = [f for f in findings if f["path"] == case.path or case.path in f["message"]]
        assert about, f"{case.path} was damaged but nothing was reported about it"
    if case.path in LAUNCHERS:
        # the rest of the tree is still judged: no other launcher's table went missing
        others = {k for p in LAUNCHERS if p != case.path for k in kernels_of(p)} - kernels_of(case.path)
        lost = [f for f in findings if f["rule"] == "KP302" and any(f"`{k}`" in f["message"] for k in others)]
        assert not lost, lost
        assert doc["summary"]["checked"]["tables"] >= 8 - len(kernels_of(case.path))


@pytest.mark.parametrize("case", REGISTRY_CASES, ids=[c.name for c in REGISTRY_CASES])
def test_a_mutated_registry_is_refused_in_one_line_or_judged(tmp_path, case):
    doc = run_case(tmp_path, case)
    if doc is not None:
        assert set(doc["summary"]["checked"]) >= {"files_scanned", "tables"}


def test_the_cases_cover_every_mutation_and_are_reproducible():
    names = {c.name.split("-")[1] for c in SOURCE_CASES}
    assert names == {"truncate", "delete_brace", "random_bytes", "random_ascii", "deep_nesting", "duplicate_chunk",
                     "ten_mb_line"}
    assert [c.data for c in source_cases(SEED, 14)] == [c.data for c in SOURCE_CASES]
    assert [c.registry for c in registry_cases(SEED, 10)] == [c.registry for c in REGISTRY_CASES]
    assert any(c.damages for c in SOURCE_CASES) and any(c.path in LAUNCHERS for c in SOURCE_CASES)


def test_after_the_cases_the_shared_cache_judges_the_clean_tree_like_a_fresh_run(tmp_path):
    """Runs after the cases (file order): no mutated parse may answer for the tree it was not made from."""
    def report(*extra):
        return run_case(tmp_path / "-".join(extra or ("cached",)), Case("clean"), *extra)

    cached, fresh = report(), report("--no-cache")  # in two folders: the summaries differ by their roots only
    for doc in (cached, fresh):
        for key in ("root", "root_uri", "registry"):
            doc["summary"].pop(key)
    assert cached == fresh and cached["findings"] == [] and cached["summary"]["checked"]["tables"] == 8
