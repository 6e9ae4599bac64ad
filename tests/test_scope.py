"""Scope: globs, excludes, .gitignore, links, and fail-closed reading (KP901)."""

from __future__ import annotations

import os
import subprocess

from kernel_ports.registry.load import load_registry
from kernel_ports.scope import glob_regex, resolve_scope

REG = """\
version: 1
root: src
sources: {include: ["lib/**"], exclude: ["lib/third_party/**"]}
kernels: []
"""


def _tree(tmp_path):
    lib = tmp_path / "src" / "lib"
    (lib / "third_party").mkdir(parents=True)
    (lib / "a.cpp").write_text("int a;\n")
    (lib / "a_hip.h").write_text("int h;\n")
    (lib / "notes.md").write_text("not a source\n")
    (lib / "k.metal").write_text("kernel void k() {}\n")
    (lib / "view.m").write_text("@interface View\n@end\n")  # Objective-C: no C++, so no MLX call
    (lib / "third_party" / "t.cpp").write_text("int t;\n")
    (tmp_path / "src" / "outside.cpp").write_text("int o;\n")
    return lib


def _scope(tmp_path):
    (tmp_path / "registry.yaml").write_text(REG)
    return resolve_scope(load_registry(tmp_path / "registry.yaml"))


def test_globs():
    assert glob_regex("src/**").match("src/a/b/c.cpp")
    assert glob_regex("**/*_tests.rs").match("x_tests.rs") and glob_regex("**/*_tests.rs").match("a/b/x_tests.rs")
    assert not glob_regex("src/*.cpp").match("src/a/b.cpp")


def test_include_exclude_and_kinds(tmp_path):
    _tree(tmp_path)
    scope = _scope(tmp_path)
    assert [f.path for f in scope.files] == ["lib/a.cpp", "lib/a_hip.h"]
    assert scope.findings == []


def test_bad_files_are_kp901_not_skipped(tmp_path):
    lib = _tree(tmp_path)
    (lib / "latin1.cpp").write_bytes(b"// caf\xe9\nint x;\n")
    (lib / "blob.h").write_bytes(b"\x00\x01\x02")
    (lib / "huge.cpp").write_bytes(b"int x;\n" * 400_000)
    scope = _scope(tmp_path)
    reasons = {f.path: f.message for f in scope.findings}
    assert set(reasons) == {"lib/latin1.cpp", "lib/blob.h", "lib/huge.cpp"}
    assert "not UTF-8" in reasons["lib/latin1.cpp"]
    assert "binary" in reasons["lib/blob.h"]
    assert "limit" in reasons["lib/huge.cpp"]
    assert all(f.rule == "KP901" for f in scope.findings)
    assert scope.listed == 5 and len(scope.files) == 2


def test_links_out_of_root_and_loops(tmp_path):
    lib = _tree(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.cpp").write_text("int s;\n")
    os.symlink(outside / "secret.cpp", lib / "linked.cpp")
    os.symlink(outside, lib / "linked_dir")
    os.symlink(lib, lib / "loop")
    scope = _scope(tmp_path)
    paths = [f.path for f in scope.files]
    assert "lib/linked.cpp" not in paths
    messages = {f.path: f.message for f in scope.findings}
    assert "outside the root" in messages["lib/linked.cpp"]
    assert "outside the root" in messages["lib/linked_dir"]
    assert "loop" in messages["lib/loop"]


def test_gitignore_is_honoured_in_a_work_tree(tmp_path):
    lib = _tree(tmp_path)
    (lib / "generated.cpp").write_text("int g;\n")
    (tmp_path / ".gitignore").write_text("src/lib/generated.cpp\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    scope = _scope(tmp_path)
    assert [f.path for f in scope.files] == ["lib/a.cpp", "lib/a_hip.h"]


def test_suffixes_in_any_case_are_in_scope(tmp_path):
    lib = _tree(tmp_path)
    (lib / "Upper.CPP").write_text("int u;\n")
    (lib / "legacy.C").write_text("int c;\n")
    (lib / "legacy.H").write_text("int h;\n")
    (lib / "Gates.RS").write_text("fn gates() {}\n")
    scope = _scope(tmp_path)
    by_path = {f.path: f for f in scope.files}
    assert set(by_path) == {"lib/a.cpp", "lib/a_hip.h", "lib/Upper.CPP", "lib/legacy.C", "lib/legacy.H", "lib/Gates.RS"}
    assert by_path["lib/Gates.RS"].language == "rust" and by_path["lib/legacy.H"].language == "cpp"


def test_upper_case_sources_are_judged(tmp_path, capsys, monkeypatch):
    """A launch in a `.CPP` file is judged (KP201), and a `.H` header that cannot be read is a KP901."""
    from kernel_ports import cli
    from tests.test_convention_free import LAUNCHER

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "engine"
    (root / "src").mkdir(parents=True)
    (root / "src" / "Scale.CPP").write_text(LAUNCHER)
    (root / "src" / "Legacy.H").write_bytes(b"// caf\xe9\nint legacy;\n")
    reg = tmp_path / "reg.yaml"
    assert cli.main(["init", "--root", str(root), "--output", str(reg)]) == 0
    capsys.readouterr()
    code = cli.main(["check", "--registry", str(reg), "--root", str(root)])
    out = capsys.readouterr().out
    assert code == 1
    assert "src/Scale.CPP:" in out and "[KP201]" in out, out
    assert "src/Legacy.H:1:1: error:" in out and "[KP901]" in out, out
