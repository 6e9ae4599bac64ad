"""`kernel-ports serve`: a served check prints what the command prints in its own process, after edits too; a command
runs in its own process when no trusted server listens; kept entries answer only for unchanged files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kernel_ports.cache import format as cachefmt
from kernel_ports.cache.resident import ResidentEntries
from kernel_ports.commands import resident
from tests.mutate import Mutation, engine_copy

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the server forks and passes descriptors")

LAUNCHER = "src/lib/mlx-cpp/turbo/fused_norm.cpp"
DTYPE_KEY = Mutation(LAUNCHER, '{{"T", x.dtype()}, {"N", n}}', '{{"N", n}}')


def _env(base, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (resident.NO_SERVER_ENV, "KERNEL_PORTS_CACHE_DIR")}
    env.update(XDG_RUNTIME_DIR=str(base / "run"), XDG_CACHE_HOME=str(base / "cache"))
    env.update(extra)
    return env


@pytest.fixture()
def tmp_path():
    # a short folder: a socket's path has ~107 bytes at most, and pytest's folders are long
    base = tempfile.mkdtemp(prefix="kps-", dir="/tmp")
    yield Path(base)
    shutil.rmtree(base, ignore_errors=True)


def _command(args, env, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernel_ports", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture()
def server(tmp_path):
    (tmp_path / "run").mkdir(mode=0o700)
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "kernel_ports", "serve", "--idle-minutes", "5"],
                            env=_env(tmp_path), cwd=tmp_path, stderr=log)
    deadline = time.monotonic() + 30
    while "listening" not in (tmp_path / "serve.log").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
        time.sleep(0.05)
    yield tmp_path, lambda: (tmp_path / "serve.log").read_text(), proc
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


def _served_lines(log: str) -> list:
    return [line for line in log.splitlines() if ": check in " in line or ": facts in " in line]


def test_a_served_check_prints_what_its_own_process_prints_after_each_edit(server):
    base, log, _ = server
    copy = engine_copy(base / "tree")
    args = ["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json"]
    for step, edit in enumerate((None, DTYPE_KEY, Mutation(DTYPE_KEY.path, DTYPE_KEY.new, DTYPE_KEY.old))):
        if edit is not None:
            copy.apply(edit)
        served = _command(args, _env(base), base)
        assert len(_served_lines(log())) == step + 1, log()  # it ran in the server
        own = _command(args, _env(base, **{resident.NO_SERVER_ENV: "1"}), base)
        assert len(_served_lines(log())) == step + 1  # the control: this one did not
        assert (served.returncode, served.stdout, served.stderr) == (own.returncode, own.stdout, own.stderr)
        time.sleep(1.0)  # (the server decodes what the check read while nothing waits)
    last = _served_lines(log())[-1]
    assert " 0 of " not in last, last  # the later checks took entries from memory


def test_a_served_check_fails_as_its_own_process_does(server):
    base, log, _ = server
    served = _command(["check", "--registry", str(base / "missing.yaml")], _env(base), base)
    own = _command(["check", "--registry", str(base / "missing.yaml")], _env(base, **{resident.NO_SERVER_ENV: "1"}), base)
    assert served.returncode == own.returncode == 2
    assert served.stderr == own.stderr and "missing.yaml" in served.stderr
    assert len(_served_lines(log())) == 1


def test_without_a_server_or_with_an_open_folder_the_command_runs_in_its_own_process(tmp_path):
    (tmp_path / "run").mkdir(mode=0o700)
    folder = tmp_path / "run" / "kernel-ports"
    env = _env(tmp_path)
    got = _command(["check", "--registry", str(tmp_path / "missing.yaml")], env, tmp_path)
    assert got.returncode == 2 and "missing.yaml" in got.stderr  # no server: ran here
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(tmp_path / "run")
    try:
        assert resident.connect() is None  # a folder others may open is never trusted
        os.chmod(folder, 0o700)
        assert resident.private_folder(folder)
    finally:
        if old is None:
            os.environ.pop("XDG_RUNTIME_DIR")
        else:
            os.environ["XDG_RUNTIME_DIR"] = old


def test_serve_says_when_its_socket_path_is_too_long(tmp_path):
    run = tmp_path / ("r" * 100)
    run.mkdir(mode=0o700)
    got = _command(["serve"], _env(tmp_path, XDG_RUNTIME_DIR=str(run)), tmp_path)
    assert got.returncode == 2 and "cannot listen on" in got.stderr and "internal error" not in got.stderr


def test_serve_refuses_a_folder_others_may_open(tmp_path):
    (tmp_path / "run" / "kernel-ports").mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "run" / "kernel-ports", 0o777)
    got = _command(["serve"], _env(tmp_path), tmp_path)
    assert got.returncode == 2 and "not a folder only this user can open" in got.stderr


def test_stop_and_status(server):
    base, log, _ = server
    assert "listening" in _command(["serve", "--status"], _env(base), base).stdout
    assert "stopped" in _command(["serve", "--stop"], _env(base), base).stdout
    assert _command(["serve", "--status"], _env(base), base).returncode == 1


def _entry(tmp_path, name: str, value) -> tuple:
    path = tmp_path / name
    assert cachefmt.write_entry(path, name, value)
    return str(path), name


def test_a_kept_entry_answers_only_for_its_unchanged_file_and_once_a_check(tmp_path):
    entries = ResidentEntries()
    path, key = _entry(tmp_path, "a", ["first"])
    entries.after_check({path: key})
    entries.decode_one(cachefmt.read_entry_file)
    reads = []

    def read_file(p, k):
        reads.append(p)
        return cachefmt.read_entry_file(p, k)

    entries.begin_check()
    assert entries.read_entry(path, key, read_file) == ["first"] and reads == []  # from memory
    assert entries.read_entry(path, key, read_file) == ["first"] and reads == [path]  # handed out once
    entries.begin_check()
    assert entries.read_entry(path, "another key", read_file) is None  # another key is never the kept value
    _entry(tmp_path, "a", ["second"])  # replaced, as every cache writer replaces a file
    entries.begin_check()
    reads.clear()
    assert entries.read_entry(path, key, read_file) == ["second"] and reads == [path]


def test_kept_entries_are_dropped_when_no_recent_check_read_them(tmp_path):
    entries = ResidentEntries()
    path, key = _entry(tmp_path, "a", [1])
    entries.after_check({path: key})
    entries.decode_one(cachefmt.read_entry_file)
    assert len(entries) == 1
    for _ in range(ResidentEntries.KEEP_CHECKS - 1):
        entries.after_check({})
    assert len(entries) == 1  # a warm check that read its whole-check entry alone keeps the rest
    entries.after_check({})
    assert len(entries) == 0


def test_a_server_ended_by_a_signal_removes_its_socket(server):
    base, log, proc = server
    sockets = list((base / "run" / "kernel-ports").glob("*.sock"))
    assert len(sockets) == 1
    proc.terminate()
    proc.wait(timeout=20)
    assert not sockets[0].exists() and "stopped" in log()
