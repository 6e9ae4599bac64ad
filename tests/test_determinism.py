"""The same tree gives byte-identical JSON and SARIF whatever the number of parser processes, cold or warm, run
after run: a verdict may not depend on which parse finished first or came from the cache."""

from __future__ import annotations

import json

import pytest

from kernel_ports.cli import main
from tests.mutate import Mutation, engine_copy

LAUNCHER = "src/lib/mlx-cpp/turbo/fused_norm.cpp"
JOBS = (1, 2, 4)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy with findings of several rules (KP201, KP901 ...), so that there is an order to get wrong."""
    copy = engine_copy(tmp_path_factory.mktemp("determinism"),
                       Mutation(LAUNCHER, '{{"T", x.dtype()}, {"N", n}}', '{{"N", n}}'))
    (copy.root / "src/lib/mlx-cpp/turbo/legacy.cpp").write_bytes(b"// caf\xe9\nint legacy;\n")
    return copy


@pytest.fixture(scope="module")
def reports(tree, tmp_path_factory):
    """{(jobs, run, format): bytes}: per number of jobs one cold run into an empty cache, then warm runs on it."""
    out_dir = tmp_path_factory.mktemp("reports")
    runs = (("cold", "json"), ("warm", "json"), ("warm", "sarif"), ("again", "json"), ("again", "sarif"))
    got = {}
    patch = pytest.MonkeyPatch()
    try:
        for jobs in JOBS:
            patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp(f"cache-jobs{jobs}")))
            for run, fmt in runs:
                target = out_dir / f"{jobs}-{run}.{fmt}"
                code = main(["check", "--registry", str(tree.registry_path), "--root", str(tree.root), "--format", fmt,
                             "--jobs", str(jobs), "--output", str(target)])
                assert code == 1
                got[jobs, run, fmt] = target.read_bytes()
        # partly warm: two files change where no finding is (their ends), the rest comes from the last cache
        for rel in ("src/lib/mlx-cpp/turbo/kernel_port.h", "src/lib/mlx-cpp/turbo/rope.cpp"):
            with open(tree.root / rel, "a", encoding="utf-8") as fh:
                fh.write("// touched\n")
        for fmt in ("json", "sarif"):
            target = out_dir / f"partial.{fmt}"
            assert main(["check", "--registry", str(tree.registry_path), "--root", str(tree.root), "--format", fmt,
                         "--jobs", "2", "--output", str(target)]) == 1
            got[2, "partial", fmt] = target.read_bytes()
    finally:
        patch.undo()
    return got


def test_json_is_byte_identical_across_jobs_cold_and_warm(reports):
    first = reports[1, "cold", "json"]
    rules = {f["rule"] for f in json.loads(first)["findings"]}
    assert {"KP201", "KP901"} <= rules  # the control: there is something to order
    for key, text in reports.items():
        if key[2] == "json":
            assert text == first, key


def test_sarif_is_byte_identical_across_jobs_and_runs(reports):
    first = reports[1, "warm", "sarif"]
    assert json.loads(first)["runs"][0]["results"]
    for key, text in reports.items():
        if key[2] == "sarif":
            assert text == first, key


def test_the_summary_holds_no_timing(reports):
    summary = json.loads(reports[2, "cold", "json"])["summary"]
    assert not any("time" in k or "second" in k for k in json.dumps(summary).split('"'))
