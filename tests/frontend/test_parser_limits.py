"""A parse bounded by the parser process's memory budget: the file is lost to "memory limit", the rest is judged."""

from __future__ import annotations

import dataclasses
import sys

import pytest
from helpers import files_under, make_registry, write_tree

from kernel_ports.scope import limits
from kernel_ports.index import build_index

FACTORY = '#include "mlx/mlx.h"\nauto k = mlx::core::fast::metal_kernel("k", {}, {}, "");\n'


def initializer_bomb(levels: int) -> str:
    """Seven lines whose macros expand to 10**(levels+1) initializers: ~1.5 GB of AST at levels=6."""
    lines = ["#define E0 1,1,1,1,1,1,1,1,1,1,"]
    lines += [f"#define E{i} " + " ".join([f"E{i - 1}"] * 10) for i in range(1, levels + 1)]
    return FACTORY + "\n".join(lines) + f"\nint values[] = {{ E{levels} 0 }};\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_a_file_over_the_memory_budget_is_lost_to_the_limit_and_the_others_are_parsed(tmp_path):
    write_tree(tmp_path, {"src/bomb.cpp": initializer_bomb(6), "src/fine.cpp": FACTORY})
    reg = dataclasses.replace(make_registry(tmp_path), limits={"parser_memory_mib": 300})
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False, timeout=60)
    reasons = dict(idx.unanalyzable)
    assert set(reasons) == {"src/bomb.cpp"}
    assert reasons["src/bomb.cpp"].startswith(
        "memory limit: the parser ran out of memory under the 300 MiB address-space limit of a parser process")
    assert "--limit parser_memory_mib=N" in reasons["src/bomb.cpp"]
    # the process that ran out was replaced: the next file parsed in a fresh one
    assert [f.loc.path for f in idx.factory_calls] == ["src/fine.cpp"]


def test_the_default_budget_leaves_room_for_an_ordinary_parse(tmp_path):
    write_tree(tmp_path, {"src/a.cpp": initializer_bomb(3)})  # 10**4 initializers
    reg = make_registry(tmp_path)
    assert limits.Limits.of(reg).parser_memory_mib == 4096
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    assert idx.unanalyzable == [] and [f.loc.path for f in idx.factory_calls] == ["src/a.cpp"]


def test_without_the_budget_the_same_process_answers():
    assert limits.apply_memory_limit(0) is False


def test_a_reply_is_judged_by_what_the_parser_wrote():
    failed = type("R", (), {"ok": False})()
    assert limits.judge_reply(("ok", failed), "LLVM ERROR: out of memory\n", 300)[0] == "memory"
    assert limits.judge_reply(("ok", failed), "LLVM ERROR: out of memory\n", 0)[0] == "ok"  # no budget: not ours
    dump = "Assertion failed: x\nlibclang: crash detected during parsing: {\n  'options' : 513,\n}\n"
    assert limits.judge_reply(("ok", failed), dump, 300) == ("crash", "libclang crashed while parsing (Assertion failed: x)")
    ok = type("R", (), {"ok": True})()
    assert limits.judge_reply(("ok", ok), "out of memory", 300) == ("ok", ok)
    assert limits.judge_death(-9, "", 300) == ("crash", "the parser process died of signal 9 (SIGKILL)")
    assert limits.judge_death(-6, "terminate called after throwing an instance of 'std::bad_alloc'\n", 300)[0] == "memory"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /dev/zero are Linux's")
def test_an_include_of_an_endless_device_is_stopped_by_the_memory_budget(tmp_path):
    # Clang reads an #include'd character device until it has the whole "file": without a budget the parser
    # grows by gigabytes a second until the machine runs out, long before the timeout
    write_tree(tmp_path, {"src/a.cpp": '#include "/dev/zero"\n' + FACTORY, "src/b.cpp": FACTORY})
    reg = dataclasses.replace(make_registry(tmp_path), limits={"parser_memory_mib": 512})
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False, timeout=60)
    reasons = dict(idx.unanalyzable)
    assert set(reasons) == {"src/a.cpp"} and reasons["src/a.cpp"].startswith("memory limit: ")
    assert [f.loc.path for f in idx.factory_calls] == ["src/b.cpp"]
