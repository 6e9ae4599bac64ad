"""What is imported when: the early prelude build needs no walk (a cold run waits for that build before any
parse), and the parse pool imports the walk before it forks its workers (each would otherwise import it on its
first job). Each case runs in a fresh interpreter, since this one has imported everything already."""

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


def test_workers_are_forked_with_the_walk_imported():
    mods = _modules_after("from kernel_ports.index.pool import ParsePool\n"
                          "pool = ParsePool(1)\npool.spawn(1)\npool.close()")
    assert "kernel_ports.frontend.clang.walk" in mods
