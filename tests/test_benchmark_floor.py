"""benchmarks/compiler_floor.py: the `g++ -fsyntax-only` lines of the units a check parses, which g++ accepts."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kernel_ports.cli import main

REPO = Path(__file__).resolve().parent.parent


def _floor_module():
    spec = importlib.util.spec_from_file_location("kp_bench_floor", REPO / "benchmarks" / "compiler_floor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_command_per_parsed_unit_and_configuration(tmp_path, capsys):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    assert main(["facts", "--registry", str(REPO / "registry.yaml"), "--format", "json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    units = sorted((f["path"], f["configuration"]) for f in facts["files"] if f["parsed"] and not f["translation_unit"])
    commands = _floor_module().commands(str(REPO / "registry.yaml"), facts)
    assert len(commands) == len(units) > 10
    assert sorted({c[-1] for c in commands}) == sorted({str(REPO / "cpp_fixtures" / "engine" / p) for p, _ in units})
    for c in commands:
        assert c[:2] == ["g++", "-fsyntax-only"] and not any(a.startswith("-ferror-limit") for a in c)
    # the sample engine compiles: units of both ends of the list pass g++ with the flags the check gave Clang
    for c in (commands[0], commands[-1]):
        done = subprocess.run(c, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-1000:]
