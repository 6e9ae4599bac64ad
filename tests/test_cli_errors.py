"""Bad input to the tool gets one clear line and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kernel_ports.cli import main
from tests.conftest import REPO


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_no_command(capsys):
    code, _, err = run([], capsys)
    assert code == 2 and err.count("\n") == 1


def test_unknown_flag_is_one_line(capsys):
    code, _, err = run(["check", "--frobnicate"], capsys)
    assert code == 2 and err.count("\n") == 1 and "unrecognized arguments: --frobnicate" in err


def test_unknown_format(capsys):
    code, _, err = run(["check", "--format", "xml"], capsys)
    assert code == 2 and "invalid choice" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "text, expect",
    [
        ("version: 1\nroot: src\nkernels: [\n", ":4: malformed YAML"),
        ("version: 1\nroot: src\nkernels: []\nbogus: 1\n", ":4: bogus: unknown key"),
        ("version: 1\nroot: src\nkernels:\n  - {name: a, table: t, file: ../x.cpp, ports: {}}\n", ":4: kernels[0].file: path escapes the root"),
    ],
)
def test_bad_registry_one_line_exit_2(tmp_path, capsys, text, expect):
    (tmp_path / "src").mkdir()
    reg = tmp_path / "registry.yaml"
    reg.write_text(text)
    code, out, err = run(["check", "--registry", str(reg)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and expect in err and str(reg) in err


def test_missing_registry_and_root(tmp_path, capsys):
    code, _, err = run(["check", "--registry", str(tmp_path / "none.yaml")], capsys)
    assert code == 2 and "not found" in err
    (tmp_path / "src").mkdir()
    (tmp_path / "r.yaml").write_text("version: 1\nroot: src\nkernels: []\n")
    code, _, err = run(["check", "--registry", str(tmp_path / "r.yaml"), "--root", str(tmp_path / "gone")], capsys)
    assert code == 2 and "--root" in err and "not a directory" in err


def test_bad_selection_and_jobs(capsys):
    code, _, err = run(["check", "--registry", str(REPO / "registry.yaml"), "--select", "KP7"], capsys)
    assert code == 2 and "unknown rule code or prefix: KP7" in err
    code, _, err = run(["check", "--registry", str(REPO / "registry.yaml"), "--jobs", "0"], capsys)
    assert code == 2 and "--jobs" in err


def test_explain_lists_and_prints(capsys):
    code, out, _ = run(["explain"], capsys)
    assert code == 0 and "KP101  backend-comparison" in out and "KP902" in out
    code, out, _ = run(["explain", "kp105"], capsys)
    assert code == 0 and out.startswith("KP105 any-wave-lane-op") and "## Bad" in out and "## Good" in out
    code, _, err = run(["explain", "KP777"], capsys)
    assert code == 2 and "unknown rule code" in err


def test_every_rule_has_an_explain_doc():
    from kernel_ports.checkers.explain import explain_text
    from kernel_ports.findings import RULES

    for code in RULES:
        text = explain_text(code)
        assert "## Rationale" in text and "## Bad" in text and "## Good" in text, code


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "kernel_ports", "--version"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.startswith("kernel-ports ")


def test_a_report_that_cannot_be_written_leaves_nothing_behind(tmp_path, capsys):
    """`--output` naming a folder: one line, exit 2, and no temporary file next to it."""
    target = tmp_path / "reports"
    target.mkdir()
    code = main(["check", "--registry", str(REPO / "registry.yaml"), "--output", str(target), "--select", "KP104"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"] and not list(target.iterdir())


def test_a_new_report_gets_the_mode_a_plain_open_gives(tmp_path):
    import os

    from kernel_ports.commands.common import write_output

    old = os.umask(0o027)
    try:
        write_output("{}\n", str(tmp_path / "new.json"))
    finally:
        os.umask(old)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o640
    existing = tmp_path / "kept.json"
    existing.write_text("old\n")
    existing.chmod(0o600)
    write_output("new\n", str(existing))
    assert existing.read_text() == "new\n" and existing.stat().st_mode & 0o777 == 0o600
