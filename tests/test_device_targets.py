"""init's device targets: named by the build, mapped to what the installed device libraries support."""

from __future__ import annotations

import pytest

from kernel_ports.infer.device_targets import (DEFAULT_TARGETS, device_library_dirs, infer_device_targets,
                                               nearest_target, supported_targets, wavefront_width)

# the gfx names Debian's HIP 5.2 device libraries carry, as a fixed set so the mapping is tested without them
HIP52 = ("gfx1010", "gfx1030", "gfx1031", "gfx1036", "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx940")


@pytest.mark.parametrize("target,width", [("gfx90a", 64), ("gfx942", 64), ("gfx803", 64), ("gfx1030", 32),
                                          ("gfx1100", 32), ("gfx1201", 32)])
def test_wavefront_width(target, width):
    assert wavefront_width(target) == width


@pytest.mark.parametrize("target,nearest", [("gfx90a", "gfx90a"), ("gfx942", "gfx940"), ("gfx950", "gfx940"),
                                            ("gfx1100", "gfx1036"), ("gfx1201", "gfx1036"), ("gfx1032", "gfx1031"),
                                            ("gfx902", "gfx900")])
def test_nearest_keeps_the_wavefront_width(target, nearest):
    got = nearest_target(target, HIP52)
    assert got == nearest and wavefront_width(got) == wavefront_width(target)


def test_no_target_of_that_width():
    assert nearest_target("gfx1100", ("gfx90a",)) is None


def test_cmake_and_compiler_lines_name_the_targets(tmp_path):
    (tmp_path / "cmake").mkdir()
    (tmp_path / "CMakeLists.txt").write_text('project(x)\nset(AMDGPU_TARGETS "gfx1100;gfx942:xnack-" CACHE STRING "")\n')
    (tmp_path / "cmake" / "hip.cmake").write_text("target_compile_options(k PRIVATE --offload-arch=gfx90a)\n")
    (tmp_path / "notes.txt").write_text("AMDGPU_TARGETS=gfx908\n")  # not a build file
    got = infer_device_targets(tmp_path, HIP52)
    assert got.targets == ["gfx1036", "gfx940", "gfx90a"]
    assert "CMakeLists.txt:2 as gfx1100" in got.reasons["gfx1036"] and "nearest 32-lane" in got.reasons["gfx1036"]
    assert got.reasons["gfx90a"] == "named at cmake/hip.cmake:1"
    assert not got.notes


def test_defaults_when_no_build_file_names_one(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("project(x LANGUAGES CXX)\n")
    got = infer_device_targets(tmp_path, HIP52)
    assert tuple(got.targets) == DEFAULT_TARGETS and "no build file names a target" in got.reasons["gfx1030"]


def test_one_width_only_is_said(tmp_path):
    (tmp_path / "Makefile").write_text("HIPFLAGS += --offload-arch=gfx1030\n")
    got = infer_device_targets(tmp_path, HIP52)
    assert got.targets == ["gfx1030"] and any("no 64-lane target" in n for n in got.notes)


def test_unsupported_width_is_a_note(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text('set(GPU_TARGETS "gfx1100")\n')
    got = infer_device_targets(tmp_path, ("gfx90a",))
    assert any("gfx1100" in n and "not built" in n for n in got.notes)
    assert got.targets == ["gfx90a"]  # the default that the libraries support


def test_installed_device_libraries():
    found = supported_targets(device_library_dirs(None))
    if not found:
        pytest.skip("no ROCm device libraries: apt-get install rocm-device-libs (with hipcc, libamdhip64-dev)")
    assert {"gfx1030", "gfx90a"} <= set(found)


# -- what init writes ---------------------------------------------------------------------------------------------

def _init(tmp_path, monkeypatch, capsys):
    import yaml

    from kernel_ports import cli
    from tests.mutate import engine_copy

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    copy = engine_copy(tmp_path / "copy")
    (copy.root / "CMakeLists.txt").write_text('set(AMDGPU_TARGETS "gfx1100;gfx90a" CACHE STRING "")\n')
    out = tmp_path / "reg.yaml"
    code = cli.main(["init", "--root", str(copy.root), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    return yaml.safe_load(text), text, err, copy, out


def test_init_writes_the_device_section_when_it_finds_hipcc(tmp_path, monkeypatch, capsys):
    from kernel_ports.frontend.device.compiler import CompilerMissing, find_compiler

    try:
        find_compiler("auto")
    except CompilerMissing:
        pytest.skip("needs Debian's hipcc, libamdhip64-dev and rocm-device-libs")
    data, text, err, copy, out = _init(tmp_path, monkeypatch, capsys)
    assert data["compile"]["device"] == {"rocm": {"targets": ["gfx1036", "gfx90a"], "compiler": "auto"}}
    assert "# inferred: named at CMakeLists.txt:1 as gfx1100" in text
    assert "device target gfx1036" in err and "compile.device.rocm: the HIP bodies are built by" in err
    # the check init ran built the bodies with what it wrote, and check accepts it
    from kernel_ports.registry.load import load_registry

    registry = load_registry(out)
    assert registry.compile.device_rocm.targets == ("gfx1036", "gfx90a")
    assert "device builds:" in err and "for gfx1036, gfx90a" in err


def test_init_without_a_hip_compiler_says_so_and_writes_no_device_section(tmp_path, monkeypatch, capsys):
    from kernel_ports.frontend.device import compiler

    monkeypatch.setattr(compiler, "candidates", lambda setting="auto": [str(tmp_path / "no-hipcc")])
    data, text, err, _, _ = _init(tmp_path, monkeypatch, capsys)
    assert "device" not in data["compile"]
    assert "compile.device not written: no HIP compiler found" in err
    assert "# NOTE: compile.device not written" in text
