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


def _start(base: Path, log_name: str = "serve.log"):
    """A server for ``base``'s run folder, once it listens: (process, its log file, a reader of the log)."""
    (base / "run").mkdir(mode=0o700, exist_ok=True)
    log = open(base / log_name, "w")
    proc = subprocess.Popen([sys.executable, "-m", "kernel_ports", "serve", "--idle-minutes", "5"],
                            env=_env(base), cwd=base, stderr=log)
    deadline = time.monotonic() + 30
    while "listening" not in (base / log_name).read_text():
        assert proc.poll() is None and time.monotonic() < deadline, (base / log_name).read_text()
        time.sleep(0.05)
    return proc, log, lambda: (base / log_name).read_text()


@pytest.fixture()
def server(tmp_path):
    proc, log, read_log = _start(tmp_path)
    yield tmp_path, read_log, proc
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


def _served_lines(log: str) -> list:
    return [line for line in log.splitlines() if ": check in " in line or ": facts in " in line]


def _served(read_log, count: int) -> list:
    """The server's lines for the commands it ran, once it has said ``count`` of them: it says each when the
    command's process has ended, which may be after the command has its answer (its parser processes end after)."""
    deadline = time.monotonic() + 60
    while len(lines := _served_lines(read_log())) < count:
        assert time.monotonic() < deadline, read_log()
        time.sleep(0.05)
    return lines


def test_a_served_check_prints_what_its_own_process_prints_after_each_edit(server):
    base, log, _ = server
    copy = engine_copy(base / "tree")
    args = ["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json"]
    for step, edit in enumerate((None, DTYPE_KEY, Mutation(DTYPE_KEY.path, DTYPE_KEY.new, DTYPE_KEY.old))):
        if edit is not None:
            copy.apply(edit)
        served = _command(args, _env(base), base)
        assert len(_served(log, step + 1)) == step + 1, log()  # it ran in the server
        own = _command(args, _env(base, **{resident.NO_SERVER_ENV: "1"}), base)
        assert len(_served_lines(log())) == step + 1  # the control: this one did not
        assert (served.returncode, served.stdout, served.stderr) == (own.returncode, own.stdout, own.stderr)
        time.sleep(1.0)  # (the server decodes what the check read while nothing waits)
    last = _served_lines(log())[-1]
    assert " 0 of " not in last, last  # the later checks took entries from memory


def _hits(line: str) -> tuple:
    """(entries from memory, entries read) of a served check's log line: "... H of N entries from memory"."""
    said = line.rsplit(" entries from memory", 1)[0].split()
    return int(said[-3]), int(said[-1])


def test_the_check_after_a_cold_one_takes_what_the_cold_one_stored_from_memory(server):
    base, log, _ = server
    copy = engine_copy(base / "tree")
    args = ["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json"]
    _command(args, _env(base), base)  # cold: every unit parsed, nothing read from the cache
    deadline = time.monotonic() + 60
    while _kept_entries(base) == 0:
        assert time.monotonic() < deadline, log()
        time.sleep(0.2)
    time.sleep(1.0)  # (the rest decoded while nothing waits)
    copy.apply(DTYPE_KEY)  # one launcher edited: every other unit's parse is read from the cache
    served = _command(args, _env(base), base)
    hits, read = _hits(_served(log, 2)[-1])
    # the unchanged units' parses and their function groups, stored by the cold check's parser processes
    assert hits >= read // 2 and read - hits < 20, (hits, read)
    own = _command(args, _env(base, **{resident.NO_SERVER_ENV: "1"}), base)
    assert (served.returncode, served.stdout, served.stderr) == (own.returncode, own.stdout, own.stderr)


def test_a_served_check_fails_as_its_own_process_does(server):
    base, log, _ = server
    served = _command(["check", "--registry", str(base / "missing.yaml")], _env(base), base)
    own = _command(["check", "--registry", str(base / "missing.yaml")], _env(base, **{resident.NO_SERVER_ENV: "1"}), base)
    assert served.returncode == own.returncode == 2
    assert served.stderr == own.stderr and "missing.yaml" in served.stderr
    assert len(_served(log, 1)) == 1


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


def test_an_entry_a_check_stored_is_kept_with_the_entries_it_names(tmp_path):
    entries = ResidentEntries()
    group, group_key = _entry(tmp_path, "g", ["a group"])
    unit, unit_key = _entry(tmp_path, "u", ["a unit"])
    entries.begin_check()
    entries.wrote(unit, unit_key)  # stored, never read: a cold check's parse
    entries.after_check(entries.read)
    names = lambda where, value: [(group, group_key)] if where == unit else []
    while entries.waiting():
        entries.decode_one(cachefmt.read_entry_file, names)
    assert len(entries) == 2
    never = lambda p, k: pytest.fail(f"{p} read from its file")
    entries.begin_check()
    assert entries.read_entry(unit, unit_key, never) == ["a unit"]
    assert entries.read_entry(group, group_key, never) == ["a group"]  # named by the unit: decoded with it
    for _ in range(ResidentEntries.KEEP_CHECKS):
        entries.after_check({})
    assert len(entries) == 0  # a named entry is kept as long as the entry naming it


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


def _kept_entries(base: Path) -> int:
    said = _command(["serve", "--status"], _env(base), base).stdout  # "... N command(s) run, M entries kept"
    return int(said.rsplit(" entries kept", 1)[0].rsplit(" ", 1)[-1])


def test_a_restarted_server_answers_its_first_check_from_what_the_last_one_read(server):
    base, log, _ = server
    copy = engine_copy(base / "tree")
    args = ["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json"]
    first = _command(args, _env(base), base)
    assert " 0 of " in _served(log, 1)[-1]  # a new server with no memory reads every entry from its file
    memory = list((base / "run" / "kernel-ports").glob("*.memory.json"))
    assert len(memory) == 1 and memory[0].stat().st_mode & 0o777 == 0o600
    assert "stopped" in _command(["serve", "--stop"], _env(base), base).stdout
    proc, again, read_log = _start(base, "again.log")
    try:
        deadline = time.monotonic() + 60
        while _kept_entries(base) == 0:  # it decodes what it remembered before any command
            assert time.monotonic() < deadline, read_log()
            time.sleep(0.2)
        copy.apply(DTYPE_KEY)
        served = _command(args, _env(base), base)
        line = _served(read_log, 1)[-1]
        assert " 0 of " not in line, line  # its first check took entries from memory
        own = _command(args, _env(base, **{resident.NO_SERVER_ENV: "1"}), base)
        assert (served.returncode, served.stdout, served.stderr) == (own.returncode, own.stdout, own.stderr)
        assert served.stdout != first.stdout  # (the edit is seen: a dtype key gone)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        again.close()


def test_the_server_imports_what_a_checks_parsers_import_but_never_loads_libclang(server):
    """A served check's parser processes fork from the check, itself a fork of the server: the modules they import
    as they start (the parse, the walk, the bindings' module) are the server's to import while idle, as the
    check's own are; libclang itself is loaded by each parser process, never by the server."""
    import json

    from kernel_ports.index.pool import WORKER_MODULES

    base, log, proc = server
    copy = engine_copy(base / "tree")
    args = ["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json"]
    _command(args, _env(base), base)  # cold: every unit parsed in parser processes
    _served(log, 1)  # (the server keeps what the command named once its process has ended)
    (memory,) = (base / "run" / "kernel-ports").glob("*.memory.json")
    modules = json.loads(memory.read_text())["modules"]
    assert set(WORKER_MODULES) <= set(modules) and "kernel_ports.index.pool" in modules
    deadline = time.monotonic() + 60
    while _kept_entries(base) == 0:  # (its imports come before its decoding)
        assert time.monotonic() < deadline, log()
        time.sleep(0.2)
    assert "libclang" not in Path(f"/proc/{proc.pid}/maps").read_text()
    # the control: a process that imported the same modules and then asked for the bindings' library maps it
    probe = subprocess.run([sys.executable, "-c", "import importlib, sys; from kernel_ports.index.pool import "
                            "WORKER_MODULES; [importlib.import_module(m) for m in WORKER_MODULES]; "
                            "print('libclang' in open('/proc/self/maps').read()); "
                            "from kernel_ports.frontend import clang; clang.cindex(); "
                            "print('libclang' in open('/proc/self/maps').read())"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.split() == ["False", "True"], probe.stderr


def test_a_memory_file_that_is_not_a_servers_is_ignored(tmp_path):
    folder = tmp_path / "run" / "kernel-ports"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "run", 0o700)
    for text in ("not json", "[1, 2]", '{"read": {"/etc/passwd": 3}, "modules": ["os; rm", 7]}'):
        for old in folder.glob("*.memory.json"):
            old.unlink()
        env = _env(tmp_path)
        stamp = subprocess.run([sys.executable, "-c", "from kernel_ports.commands import resident; "
                                "print(resident.installation_stamp())"], env=env, capture_output=True, text=True,
                               check=True).stdout.strip()
        (folder / f"{stamp}.memory.json").write_text(text)
        proc, log, read_log = _start(tmp_path)
        try:
            time.sleep(0.5)
            assert _kept_entries(tmp_path) == 0 and proc.poll() is None, read_log()
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            log.close()


def test_a_served_check_takes_the_header_digests_the_last_one_took_while_their_files_stand(server):
    """The content digest of each header folder (it keys every parse's entry) is kept by the server with the
    folder's listing; the next check's process takes it while no file's size, modification time or inode moved.
    Seen here through the one edit that keeps all three: a header rewritten in place, its size and time put back,
    which the command in its own process reads and a served one does not."""
    import json

    from kernel_ports.frontend import headers

    base, log, _ = server
    copy = engine_copy(base / "tree")
    include = base / "mlx-include"
    shutil.copytree(headers.STUBS_DIR, include)
    env = _env(base, MLX_INCLUDE_DIR=str(include))
    args = ["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json"]

    def digest(env, served: int = 0) -> str:
        out = _command(args, env, base)
        if served:
            _served(log, served)  # it ran in the server, whose process has ended (the server has its report)
        return json.loads(out.stdout)["summary"]["headers"]["digest"]

    first = digest(env, served=1)
    header = include / "mlx" / "array.h"
    st = header.stat()
    text = header.read_bytes()
    header.write_bytes(text.replace(b"#pragma once", b"#pragma ONCE", 1))  # (same size, same inode)
    assert header.read_bytes() != text and header.stat().st_ino == st.st_ino
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns))
    copy.apply(DTYPE_KEY)  # (a changed tree: the check does not answer from its whole-check entry)
    assert digest(env, served=2) == first
    # (its own cache: the served check's whole-check entry would answer it, its inputs being the same)
    own = digest(_env(base, MLX_INCLUDE_DIR=str(include), XDG_CACHE_HOME=str(base / "own-cache"),
                      **{resident.NO_SERVER_ENV: "1"}))
    assert own != first
    # the control: the same file with another modification time is read again by a served check
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    copy.apply(Mutation(DTYPE_KEY.path, DTYPE_KEY.new, DTYPE_KEY.old))
    assert digest(env, served=3) == own
