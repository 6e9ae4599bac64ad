"""KP902 for a port table Clang parsed with an error inside its initialiser.

Clang recovers such an initialiser by guessing (a designator naming no field becomes the next slot), so the slots
the rules would read are Clang's guess, not the code: the table is reported at the first error inside it, with the
error, and an error elsewhere in the same file does not make a table suspect.
"""

from __future__ import annotations

import pytest

from tests.mutate import Mutation, check, describe, engine_copy, findings_at

ROPE = "src/lib/mlx-cpp/turbo/rope.cpp"
CUDA_SLOT = "      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_rope_kernel_cuda().get(); },\n"


def _run(tmp_path, kp_cache, *mutations):
    copy = engine_copy(tmp_path, *mutations)
    return copy, check(copy, cache_dir=kp_cache)


@pytest.mark.parametrize("broken, error", [
    (CUDA_SLOT.replace(".cuda =", ".cdua ="), "field designator 'cdua' does not refer to any field"),
    (CUDA_SLOT.replace("get_rope_kernel_cuda()", "get_rope_kernel_cdua()"), "get_rope_kernel_cdua"),
], ids=["misspelt-designator", "getter-that-does-not-compile"])
def test_a_table_with_an_error_inside_is_kp902_at_the_error(tmp_path, kp_cache, broken, error):
    copy, result = _run(tmp_path, kp_cache, Mutation(ROPE, CUDA_SLOT, broken))
    line = copy.line_of(ROPE, broken.strip())
    found = findings_at(result, "KP902", ROPE, line)
    assert len(found) == 1, describe(result)
    assert found[0].column == 7
    assert "port table `rope_ports`" in found[0].message and "recovered it by guessing" in found[0].message
    assert error in found[0].message  # the Clang error itself, so the user sees what to fix


def test_an_error_outside_every_table_leaves_the_tables_alone(tmp_path, kp_cache):
    """The quiet control: the same file with an error in another function has no damaged-table KP902."""
    copy, result = _run(tmp_path, kp_cache, Mutation(ROPE, "bool rope_available() {\n",
                                                     "int rope_broken() { return undeclared_name; }\n\nbool rope_available() {\n"))
    assert not [f for f in result.findings if f.rule == "KP902" and "port table" in f.message], describe(result)
    assert {t.name for t in result.index.port_tables} >= {"rope_ports"}
