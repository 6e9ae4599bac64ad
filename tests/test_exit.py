"""How the ``kernel-ports`` command ends (``launch.entry``): with :func:`main`'s code, its reports whole, no process
it started left behind, and without the interpreter's teardown (``os._exit`` after every ``atexit`` handler)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.mutate import engine_copy


def _env(tmp_path) -> dict:
    env = dict(os.environ, KERNEL_PORTS_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("PYTHONUNBUFFERED", None)  # standard output buffered, as it is where nobody set this
    return env


def _command(args, tmp_path, **kw):
    env = _env(tmp_path)
    return subprocess.run([sys.executable, "-m", "kernel_ports", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=300, **kw)


def test_a_check_exits_with_its_code_and_whole_reports(tmp_path):
    copy = engine_copy(tmp_path)
    sarif = tmp_path / "report.sarif"
    proc = _command(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json",
                     "--also", f"sarif={sarif}", "--jobs", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # all of it reached the pipe before the process ended
    assert report["summary"]["counts"]["error"] == 0 and report["summary"]["checked"]["files_scanned"] > 20
    assert json.loads(sarif.read_text())["runs"][0]["tool"]["driver"]["name"] == "kernel-ports"


def test_an_error_exits_with_code_2_and_its_message(tmp_path):
    proc = _command(["check", "--registry", str(tmp_path / "missing.yaml")], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("kernel-ports:") and proc.stdout == ""


def test_help_exits_the_ordinary_way(tmp_path):
    proc = _command(["--help"], tmp_path)
    assert proc.returncode == 0 and "usage:" in proc.stdout


def _session_members(sid: int) -> list:
    """The processes of session ``sid`` still there (Linux: /proc/PID/stat)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # state, ppid, pgrp, session, ...
        except OSError:
            continue
        if int(fields[3]) == sid:
            out.append(int(stat.parent.name))
    return out


def test_no_process_the_check_started_outlives_it(tmp_path):
    # a cold check with two parser processes: the early prelude build and the pool are all started
    copy = engine_copy(tmp_path)
    env = _env(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "kernel_ports", "check", "--registry", str(copy.registry_path),
                             "--root", str(copy.root), "--jobs", "2"], cwd=REPO, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=120)  # (a process left holding the pipes: this times out)
    assert proc.returncode == 0, err
    assert "files scanned" in out
    assert _session_members(proc.pid) == []  # the command led a session of its own: nothing of it is left


def test_the_command_runs_without_the_cyclic_collector_and_its_workers_with_it(tmp_path):
    # the index is never freed (the exit skips teardown), so collecting after it walks every record for nothing;
    # a parser worker frees each unit's walk and must collect
    copy = engine_copy(tmp_path)
    probe = ("import gc, sys\n"
             "from kernel_ports import cli\n"
             "from kernel_ports.index import pool\n"
             "real = pool.clang.parse_translation_unit\n"
             "def parse(job):\n"
             f"    open({str(tmp_path / 'worker.txt')!r}, 'a').write(f'worker collector on: {{gc.isenabled()}}\\n')\n"
             "    return real(job)\n"
             "pool.clang.parse_translation_unit = parse\n"
             "seen = []\n"
             "gc.callbacks.append(lambda phase, info: seen.append(info['generation']))\n"
             "real_main = cli.main\n"
             "def main():\n"
             "    seen.clear()\n"
             "    code = real_main()\n"
             "    print('collections in main:', len(seen), gc.isenabled(), file=sys.stderr)\n"
             "    return code\n"
             "cli.main = main\n"
             f"sys.argv = ['kernel-ports', 'check', '--registry', {str(copy.registry_path)!r}, '--root', {str(copy.root)!r}]\n"
             "from kernel_ports.launch import entry\n"
             "entry()\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, env=_env(tmp_path),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "collections in main: 0 False" in proc.stderr, proc.stderr
    worker = (tmp_path / "worker.txt").read_text()  # (a worker's standard error goes to its log)
    assert "worker collector on: True" in worker and "worker collector on: False" not in worker, worker
