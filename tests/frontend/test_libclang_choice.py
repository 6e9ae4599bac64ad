"""Which libclang parses: the choice ($KERNEL_PORTS_LIBCLANG, the verified system majors), what it is keyed by,
what a library that cannot serve the bindings does, and that two libclangs' parses never mix in one cache.

The facts of the two libclangs are held equal on the goldens by tests/test_golden.py; here, the mechanism.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_ports.frontend.clang import prelude, toolchain

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def system_dir(tmp_path, monkeypatch):
    """A fake system library folder the choice searches instead of the machine's; files made with ``add``."""
    folder = tmp_path / "lib"
    folder.mkdir()
    monkeypatch.setattr(toolchain, "_SYSTEM_GLOBS", (str(folder / "libclang-*.so.1"),))
    toolchain._choose.cache_clear()
    yield lambda major: _touch(folder / f"libclang-{major}.so.1")
    toolchain._choose.cache_clear()


def _touch(path: Path) -> Path:
    path.write_bytes(b"not a library " + path.name.encode())
    return path


def _choice(monkeypatch, setting: str):
    monkeypatch.setenv(toolchain.LIBCLANG_ENV, setting)
    toolchain._choose.cache_clear()
    return toolchain.libclang()


def test_auto_takes_a_verified_newer_system_library_worth_taking_and_nothing_else(system_dir, monkeypatch):
    assert _choice(monkeypatch, "auto").source == "wheel"  # none installed
    system_dir(15)
    system_dir(23)  # newer, but its facts were never held to the wheel's
    nineteen = system_dir(19)
    assert toolchain.AUTO_SYSTEM_MAJORS == ()  # 19 is verified, but not faster: not taken unasked
    assert _choice(monkeypatch, "").source == "wheel"
    with monkeypatch.context() as m:  # and with no major worth taking, the system's folders are not searched
        m.setattr(toolchain, "system_libclangs", lambda: pytest.fail("searched the system's libraries"))
        assert _choice(monkeypatch, "auto").source == "wheel"
    # majors listed as worth taking: the newest of them that is also verified (23 is not)
    monkeypatch.setattr(toolchain, "AUTO_SYSTEM_MAJORS", (19, 23))
    monkeypatch.setattr(toolchain, "VERIFIED_SYSTEM_MAJORS", (19,))
    chosen = _choice(monkeypatch, "auto")
    assert (chosen.source, chosen.path, chosen.version) == ("system", str(nineteen), "19")
    assert chosen.label == f"libclang 19 (system: {nineteen})"
    # asked for: the newest the system has; the wheel; a library by its path (a system one still says so)
    assert _choice(monkeypatch, "system").version == "23"
    wheel = _choice(monkeypatch, "wheel")
    assert (wheel.source, wheel.version) == ("wheel", toolchain.wheel_libclang().version)
    assert wheel.label.endswith("(the libclang wheel)") and Path(wheel.path).name == "libclang.so"
    assert _choice(monkeypatch, str(nineteen)).source == "system"
    other = _touch(system_dir(19).parent.parent / "libclang.so")
    assert _choice(monkeypatch, str(other)) == toolchain.Libclang("path", str(other), "")


def test_a_setting_that_names_nothing_usable_is_one_error(system_dir, monkeypatch):
    with pytest.raises(toolchain.FrontEndError, match="libclang1-19"):
        _choice(monkeypatch, "system")
    with pytest.raises(toolchain.FrontEndError, match="not wheel, system, auto or a libclang library file"):
        _choice(monkeypatch, "/no/such/libclang.so")


def test_the_key_names_the_library_and_moves_when_it_changes(system_dir, monkeypatch):
    nineteen = system_dir(19)
    system, wheel = _choice(monkeypatch, "system"), _choice(monkeypatch, "wheel")
    assert system.key != wheel.key
    before = system.key
    nineteen.write_bytes(b"an upgraded library, of another size")
    assert system.key != before


def test_the_prelude_of_one_libclang_is_not_another_s(system_dir, monkeypatch, tmp_path):
    args = ["-std=c++17", "-I", str(tmp_path)]
    _choice(monkeypatch, "wheel")
    wheel_pch = prelude.prelude_path(args, tmp_path)
    system_dir(19)
    _choice(monkeypatch, "system")
    assert prelude.prelude_path(args, tmp_path) != wheel_pch
    _choice(monkeypatch, "wheel")
    assert prelude.prelude_path(args, tmp_path) == wheel_pch


def _run(args: list, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernel_ports", *args], env=dict(os.environ, PYTHONPATH=str(REPO), **env),
                          cwd=REPO, capture_output=True, text=True, timeout=600)


def test_a_library_without_the_bindings_calls_is_one_line_and_exit_2(tmp_path):
    """A shared library that is not libclang (built here, empty) cannot serve the bindings' function table."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the empty library")
    (tmp_path / "empty.c").write_text("int kernel_ports_not_libclang;\n")
    lib = tmp_path / "libclang-99.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "empty.c")], check=True)
    probe = ("from kernel_ports.frontend.clang import toolchain\n"
             "try:\n    toolchain.cindex()\nexcept toolchain.FrontEndError as e:\n    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, PYTHONPATH=str(REPO),
                          KERNEL_PORTS_LIBCLANG=str(lib)), cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith(f"refused: libclang 99 (path: {lib}) cannot serve the bindings: "), done
    assert "undefined symbol" in done.stdout
    bad = _run(["check", "--registry", str(REPO / "registry.yaml"), "--no-cache"],
               {"KERNEL_PORTS_LIBCLANG": "nonsense"})
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "kernel-ports: KERNEL_PORTS_LIBCLANG='nonsense': not wheel, system, auto or a libclang library file"]


def _verified_system() -> str:
    verified = [p for major, p in toolchain.system_libclangs() if major in toolchain.VERIFIED_SYSTEM_MAJORS]
    if not verified:
        pytest.skip(f"no system libclang of a verified major (Debian 12: apt-get install {toolchain.SYSTEM_PACKAGE})")
    return verified[0]


def test_two_libclangs_parses_never_mix_in_one_cache(tmp_path):
    """The same tree in the same cache: each libclang reads only the parses it made, and says it parsed."""
    system = _verified_system()
    env = {"KERNEL_PORTS_CACHE_DIR": str(tmp_path / "cache")}
    argv = ["facts", "--registry", str(REPO / "registry.yaml"), "--format", "json"]

    def files(setting: str) -> tuple:
        done = _run(argv, dict(env, KERNEL_PORTS_LIBCLANG=setting))
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        return doc["headers"]["libclang"], [f["cached"] for f in doc["files"] if f.get("parsed")]

    label, cached = files("wheel")
    assert label.endswith("(the libclang wheel)") and cached and not any(cached)
    label, cached = files(system)
    assert label.endswith(f"(system: {system})") and not any(cached)  # the wheel's parses are not read
    assert all(files("wheel")[1]) and all(files(system)[1])  # each reads its own


def test_the_whole_check_entry_answers_only_for_the_same_libclang(tmp_path):
    """The check answered from its one entry: the libclang setting is among its inputs, and the library is."""
    argv = ["check", "--registry", str(REPO / "registry.yaml"), "--format", "json", "--cache-dir", str(tmp_path)]
    wheel = toolchain.wheel_libclang().path

    def entry_said(setting: str) -> str:
        done = _run(argv, {"KERNEL_PORTS_LIBCLANG": setting, "KERNEL_PORTS_DEBUG": "1"})
        assert done.returncode in (0, 1), done.stderr
        assert json.loads(done.stdout)["summary"]["headers"]["libclang"].startswith("libclang")
        return "\n".join(line for line in done.stderr.splitlines() if "check entry:" in line)

    assert "check entry: none for these inputs" in entry_said("wheel")
    assert entry_said("wheel") == ""  # answered
    assert "check entry: none for these inputs" in entry_said(wheel)  # the same library named otherwise: run again
    from kernel_ports.cache import check_entry
    from kernel_ports.registry.load import load_registry

    outside = dict(check_entry.outside_inputs(load_registry(REPO / "registry.yaml")))
    assert os.path.realpath(toolchain.libclang().path) in outside and "/usr/lib" in outside
