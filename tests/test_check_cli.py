"""`kernel-ports check` end to end on copies of the sample engine: exit codes,
formats, fail-closed reading, and the summary of what was checked."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from kernel_ports.cli import main
from tests.mutate import REGISTRY_KEY, Mutation, engine_copy

SARIF_SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sarif-schema-2.1.0.json"
LAUNCHER = "src/lib/mlx-cpp/turbo/fused_norm.cpp"
KEYED = '{{"T", x.dtype()}, {"N", n}}'


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """A copy whose fused_norm launch lost its dtype key (KP201) and that holds
    a Latin-1 source file (KP901)."""
    tmp = tmp_path_factory.mktemp("broken")
    copy = engine_copy(tmp, Mutation(LAUNCHER, KEYED, '{{"N", n}}'))
    (copy.root / "src/lib/mlx-cpp/turbo/legacy.cpp").write_bytes(b"// caf\xe9\nint legacy;\n")
    return copy


def run(capsys, copy, *argv):
    code = main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_clean_copy_exits_0_and_says_what_was_checked(tmp_path, capsys):
    code, out, err = run(capsys, engine_copy(tmp_path))
    assert (code, err) == (0, "")
    last = out.splitlines()[-1]
    assert last.startswith("checked 21 files scanned, 0 files unanalyzable, 9 files parsed by clang")
    assert "8 tables, 8 launches" in last and "KP201, KP202" in last
    assert last.endswith(": 0 error(s), 0 warning(s)")


def test_findings_exit_1_with_text_lines(broken, capsys):
    code, out, _ = run(capsys, broken)
    line = broken.line_of(LAUNCHER, "std::vector<array> outputs = kernel(")
    assert code == 1
    assert "src/lib/mlx-cpp/turbo/legacy.cpp:1:1: error: not analyzed (encoding): not UTF-8 text (byte 6)" in out
    kp201 = [l for l in out.splitlines() if l.endswith("[KP201]")]
    assert any(l.startswith(f"{LAUNCHER}:{line}:") for l in kp201), kp201
    assert "1 files unanalyzable" in out.splitlines()[-1]


def test_json_format(broken, capsys):
    code, out, _ = run(capsys, broken, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["version"] == 1
    rules = {f["rule"] for f in doc["findings"]}
    assert {"KP201", "KP901"} <= rules
    first = next(f for f in doc["findings"] if f["rule"] == "KP201")
    assert first["name"] == "dtype-key-missing" and first["path"] == LAUNCHER and first["kernel"] == "fused_norm"
    assert doc["summary"]["counts"]["error"] >= 2


@pytest.mark.skipif(not SARIF_SCHEMA.exists(), reason="the shared SARIF schema is not beside this checkout")
def test_sarif_output_file_validates(broken, capsys, tmp_path):
    target = tmp_path / "out.sarif"
    code, out, _ = run(capsys, broken, "--format", "sarif", "--output", str(target))
    assert code == 1 and out == ""
    doc = json.loads(target.read_text())
    jsonschema.Draft7Validator(json.loads(SARIF_SCHEMA.read_text())).validate(doc)
    assert {r["ruleId"] for r in doc["runs"][0]["results"]} >= {"KP201", "KP901"}


def test_github_format_and_select(broken, capsys):
    code, out, _ = run(capsys, broken, "--format", "github", "--select", "KP901")
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith("::error file=src/lib/mlx-cpp/turbo/legacy.cpp,line=1,col=1,title=KP901 unanalyzable-file::")
    assert len(lines) == 2 and lines[-1].startswith("kernel-ports: 1 error(s), 0 warning(s) in total")


def test_ignore_and_severity_downgrade(broken, capsys, tmp_path):
    code, out, _ = run(capsys, broken, "--ignore", "KP2,KP901")
    assert code == 0 and "[KP201]" not in out
    registry = broken.registry_path.read_text().replace("severity: {KP202: warning}", "severity: {KP202: warning, KP201: warning, KP901: warning}")
    softer = tmp_path / "registry.yaml"
    softer.write_text(registry)
    code = main(["check", "--registry", str(softer), "--root", str(broken.root)])
    out, _ = capsys.readouterr()
    assert code == 0 and ": warning: " in out and "[KP201]" in out


def test_output_to_an_unwritable_place_is_one_line(broken, capsys):
    code, out, err = run(capsys, broken, "--output", "/nonexistent-dir/report.txt")
    assert code == 2 and err.count("\n") == 1 and "--output" in err


def test_registry_finding_in_a_mutated_registry_is_one_line_exit_2(tmp_path, capsys):
    copy = engine_copy(tmp_path, Mutation(REGISTRY_KEY, "    file: src/lib/mlx-cpp/turbo/rope.cpp\n", "    file: ../rope.cpp\n"))
    code, out, err = run(capsys, copy)
    assert code == 2 and out == "" and "kernels[1].file: path escapes the root" in err


def test_a_cache_folder_that_cannot_be_made_is_one_note_and_no_traceback(tmp_path, capfd):
    # capfd, not capsys: the prelude is built in a forked process, whose standard error is the same descriptor
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    copy = engine_copy(tmp_path / "tree")
    code = main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root),
                 "--cache-dir", str(blocker / "cache")])
    out, err = capfd.readouterr()
    assert code == 0
    assert out.splitlines()[-1].endswith(": 0 error(s), 0 warning(s)")
    assert err == f"note: the cache folder {blocker / 'cache'} cannot be written: this check keeps nothing for the next one\n"
