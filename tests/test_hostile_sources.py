"""Regressions found by the fuzz test (tests/test_fuzz.py): one hostile source file is lost on its own, with its
cause named, and never ends the run or reaches a front end past a limit."""

from __future__ import annotations

import time

from kernel_ports.frontend import witness as wit
from kernel_ports.project import Options, analyze
from kernel_ports.registry.load import load_registry
from tests.mutate import engine_copy

GATES = "src/lib/engine-core/src/lib.rs"
HIP_HEADER = "src/lib/mlx-cpp/turbo/rope_hip.h"
SHARED_HEADER = "src/lib/mlx-cpp/turbo/turbo_kernels.h"


def check(copy, cache):
    registry = load_registry(copy.registry_path, str(copy.root))
    return analyze(registry, Options(jobs=2, cache_dir=str(cache)))


def kp901(result) -> dict:
    return {f.path: f.message for f in result.findings if f.rule == "KP901"}


def test_a_string_constant_in_thousands_of_parentheses_is_read_without_recursion():
    source = b'const char* K = ' + b"(" * 5000 + b'"body"' + b")" * 5000 + b";\n"
    parser = wit.cpp_parser()
    tree = parser.parse(source)
    init = tree.root_node.children[0].child_by_field_name("declarator").child_by_field_name("value")
    pieces = wit._string_pieces(init)
    assert [(text, raw) for text, raw, _ in pieces] == [("body", False)]


def test_deep_nesting_in_a_hip_header_does_not_end_the_run(tmp_path, kp_cache):
    copy = engine_copy(tmp_path)
    with open(copy.root / HIP_HEADER, "a", encoding="utf-8") as fh:
        fh.write("int deep = " + "(" * 30000 + "0" + ")" * 30000 + ";\n")
    result = check(copy, kp_cache)  # before: RecursionError out of the witness, exit 2 for the whole tree
    assert result.summary["checked"]["tables"] == 7  # Clang gives up on rope.cpp past its bracket depth
    assert kp901(result) == {}
    assert any(f.rule == "KP902" and f.path == "src/lib/mlx-cpp/turbo/rope.cpp" for f in result.findings)


def test_a_rust_file_nested_too_deep_to_walk_is_lost_alone(tmp_path, kp_cache):
    copy = engine_copy(tmp_path)
    with open(copy.root / GATES, "a", encoding="utf-8") as fh:
        fh.write("\nconst DEEP: i32 = " + "(" * 3000 + "0" + ")" * 3000 + ";\n")
    result = check(copy, kp_cache)
    assert kp901(result) == {GATES: "not analyzed (nesting): the Rust front end found the file nested too deeply to "
                                    "walk; no rule could judge it, so the check fails closed until it can be analyzed"}
    assert result.summary["checked"]["tables"] == 8


def test_a_witness_defect_on_one_file_loses_that_file_only(tmp_path, monkeypatch, kp_cache):
    copy = engine_copy(tmp_path)
    with open(copy.root / HIP_HEADER, "a", encoding="utf-8") as fh:
        fh.write(f"// {tmp_path.name}\n")  # new content: the witness runs on it whatever the cache holds
    real = wit.witness

    def flaky(path, data, names, parser=None):
        if path == HIP_HEADER:
            raise ValueError("unexpected node")
        return real(path, data, names, parser)

    monkeypatch.setattr(wit, "witness", flaky)
    result = check(copy, kp_cache)
    assert kp901(result)[HIP_HEADER].startswith(
        "not analyzed (crash): the syntactic pass (tree-sitter) failed: ValueError: unexpected node;")
    assert result.summary["checked"]["tables"] == 8


def test_a_header_over_the_size_limit_is_not_read_by_clang_either(tmp_path, kp_cache):
    copy = engine_copy(tmp_path)
    header = copy.root / SHARED_HEADER
    # what Clang would choke on if it read the file: an assignment chain deep enough to overflow its stack
    header.write_text(header.read_text(encoding="utf-8") + "int a" + "=a" * 1_100_000 + ";\n", encoding="utf-8")
    result = check(copy, kp_cache)
    lost = kp901(result)
    assert list(lost) == [SHARED_HEADER] and lost[SHARED_HEADER].startswith("not analyzed (size): file is 2201")
    assert result.summary["checked"]["tables"] == 8  # its includers were parsed, without it


def test_a_file_tree_sitter_would_chew_on_for_a_minute_is_lost_to_the_syntax_timeout(tmp_path, kp_cache, monkeypatch):
    from kernel_ports.scope import limits

    monkeypatch.setattr(limits, "SYNTAX_TIMEOUT_S", 0.3)  # 400 KB of `a<a<...` takes tree-sitter ~4 s
    copy = engine_copy(tmp_path)
    slow = "src/lib/mlx-cpp/turbo/aaa_first.h"  # witnessed before the launchers: the parser must be reset after it
    (copy.root / slow).write_text("a<" * 200_000)
    with open(copy.root / "src/lib/mlx-cpp/turbo/activations.cpp", "a", encoding="utf-8") as fh:
        fh.write(f"// {tmp_path.name}\n")  # new content: witnessed afresh, right after the slow file
    started = time.monotonic()
    result = check(copy, kp_cache)
    assert kp901(result) == {slow: "not analyzed (timeout): the syntactic pass (tree-sitter) gave up after 0.3 s (a "
                                   "fixed bound: an ordinary file of the size limit takes well under a second); no "
                                   "rule could judge it, so the check fails closed until it can be analyzed"}
    assert result.summary["checked"]["tables"] == 8 and result.summary["checked"]["launches"] == 8
    print(f"run with the slow file: {time.monotonic() - started:.1f} s")


def test_a_header_broken_beyond_declarations_does_not_poison_the_cache(tmp_path, kp_cache):
    # found by fuzzing with a shared cache: a parse made while kernel_port.h was junk (no declaration of its own,
    # so not among the files the walk read) answered later runs on the fixed tree, 4 tables instead of 8
    copy = engine_copy(tmp_path)
    header = copy.root / "src/lib/mlx-cpp/turbo/kernel_port.h"
    good = header.read_bytes()
    header.write_text(f"%% junk {tmp_path.name} %%\n")
    assert check(copy, kp_cache).summary["checked"]["tables"] == 0
    header.write_bytes(good)
    assert check(copy, kp_cache).summary["checked"]["tables"] == 8


def test_a_header_added_later_is_seen_by_its_includers(tmp_path, kp_cache):
    copy = engine_copy(tmp_path)
    launcher = copy.root / "src/lib/mlx-cpp/turbo/rope.cpp"
    launcher.write_text(f'#include "late_{tmp_path.name}.h"\n' + launcher.read_text(encoding="utf-8"))
    def errors(result):
        return {(q.path, q.configuration): q.errors for q in result.index.parse_quality}[
            ("src/lib/mlx-cpp/turbo/rope.cpp", "default")]

    assert errors(check(copy, kp_cache)) == 1  # the header is missing
    (copy.root / f"src/lib/mlx-cpp/turbo/late_{tmp_path.name}.h").write_text("#pragma once\n")
    assert errors(check(copy, kp_cache)) == 0  # not the cached parse made without it
