"""What is imported (and loaded) when: the early prelude build needs no walk (a cold run waits for that build before any
parse), and the parse pool's workers import the walk as each starts, not the parent before it forks them (the
parent decodes the cached units meanwhile and never walks one). Each case runs in a fresh interpreter, since this
one has imported everything already."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def _modules_after(code: str) -> set:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         env=env, capture_output=True, text=True, check=True, cwd=REPO)
    return set(out.stdout.split())


def test_the_early_prelude_start_imports_no_walk():
    # everything start_for_build reaches for
    mods = _modules_after("import kernel_ports.index.prelude, kernel_ports.project\n"
                          "from kernel_ports.frontend import clang\n"
                          "clang.build_args, clang.prelude_path, clang.build_prelude, clang.stubs_shadowed, "
                          "clang.GPU_SUFFIXES, clang.FrontEndError")
    assert "kernel_ports.frontend.clang.args" in mods
    assert not {"kernel_ports.frontend.clang.walk", "kernel_ports.frontend.clang.session",
                "kernel_ports.frontend.witness", "tree_sitter"} & mods


def _worker_says(what: str) -> str:
    """Code that starts one parser process and sets ``said`` to ``what`` evaluated in the worker when it first waits
    for a job (its connection wrapped), before any job."""
    return ("import sys\n"
            "from kernel_ports.index import pool as pool_mod\n"
            "from kernel_ports.frontend.clang import toolchain\n"
            "class Told:\n"
            "    def __init__(self, conn):\n"
            "        self.conn, self.first = conn, True\n"
            "    def recv(self):\n"
            "        if self.first:\n"
            "            self.first = False\n"
            f"            self.conn.send({what})\n"
            "        return self.conn.recv()\n"
            "    def send(self, x):\n"
            "        self.conn.send(x)\n"
            "real = pool_mod._worker_main\n"
            "pool_mod._worker_main = lambda conn, *args: real(Told(conn), *args)\n"
            "pool = pool_mod.ParsePool(1)\npool.spawn(1)\n"
            "parent_has_walk = 'kernel_ports.frontend.clang.walk' in sys.modules\n"
            "said = pool.workers[0][1].recv()\npool.close()\n")


def test_workers_import_the_walk_themselves():
    mods = _modules_after(_worker_says("sorted(m for m in sys.modules if m.startswith('kernel_ports.frontend.clang'))")
                          + "print('parent:walk' if parent_has_walk else 'parent:no-walk')\n"
                          "print('\\n'.join('worker:' + m for m in said))")
    assert "parent:no-walk" in mods
    assert {"worker:kernel_ports.frontend.clang.walk", "worker:kernel_ports.frontend.clang.session"} <= mods


def test_the_command_asks_for_a_server_before_it_imports_the_command_line():
    # the client side as `kernel-ports` runs it, no server listening (a folder nobody opened): served() says so
    mods = _modules_after("import os, tempfile\n"
                          "os.environ['XDG_RUNTIME_DIR'] = tempfile.mkdtemp()\n"
                          "import kernel_ports.launch\n"
                          "from kernel_ports.commands.resident import served\n"
                          "assert served(['check']) is None")
    assert "kernel_ports.launch" in mods and "kernel_ports.commands.resident" in mods
    assert not {"kernel_ports.cli", "argparse", "kernel_ports.commands.check", "kernel_ports.commands.common"} & mods
    assert "pathlib" not in mods  # (the client's paths are strings: pathlib's imports were ~3 ms of each command)
    assert "_hashlib" not in mods  # (the stamp's SHA-256 is the interpreter's own: OpenSSL's load was ~4 ms)


def test_the_clients_stamp_digest_is_sha256():
    import hashlib

    from kernel_ports.commands import resident

    data = b"kernel-ports installation stamp"
    assert resident.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


def test_workers_load_the_bindings_before_their_first_job():
    told = _modules_after(_worker_says("toolchain._ci is not None")
                          + "print('worker:bindings' if said else 'worker:no-bindings')")
    assert "worker:bindings" in told


def test_the_default_lane_op_patterns_compile_on_import():
    # a served check's process finds them compiled: the server imported the module
    told = _modules_after("from kernel_ports.checkers import lane_ops\n"
                          "print('compiled:%d' % lane_ops._matchers.cache_info().currsize)")
    assert "compiled:1" in told
