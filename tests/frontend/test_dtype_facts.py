"""Template-arg and input facts the dtype-key rules read (KP201/KP202).

One small tree (dtype_snippets.py), indexed once for the module.
"""

from __future__ import annotations

import pytest

import dtype_snippets as ds
from helpers import files_under, make_registry, write_tree
from kernel_ports.index import build_index


@pytest.fixture(scope="module")
def dt_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("dtype-snippets")
    write_tree(root, ds.TREE)
    reg = make_registry(root, include_dirs=("src",))
    return build_index(reg, files_under(root), jobs=2, use_cache=False)


def _inv(index, marker):
    path, line = ds.line_of(marker)
    (inv,) = [i for i in index.invocations if i.loc.path == path and i.loc.line == line]
    return inv


def _entries(inv):
    return {e.name: e for e in inv.template_args}


def test_tree_parses_and_every_launch_reaches_its_table(dt_index):
    assert dt_index.unanalyzable == [] and dt_index.unconfirmed == []
    assert len(dt_index.invocations) == 15
    assert all(i.tables == ("k_ports",) for i in dt_index.invocations if i.loc.line != ds.line_of("cast-to-param")[1])


def test_dtype_parameter_of_a_header_launch_is_traced_through_its_caller(dt_index):
    # launch_dt is defined in the header before the caller that passes x.dtype()
    inv = _inv(dt_index, "param-dtype")
    t = _entries(inv)["T"]
    assert t.is_dtype and t.from_parameter and t.source_input == "a"
    # the second input is cast to the first's dtype by the caller
    assert {i.name: i.dtype_follows for i in inv.inputs} == {"a": (), "b": ("a",)}


def test_input_cast_to_a_dtype_parameter_follows_it(dt_index):
    inv = _inv(dt_index, "cast-to-param")
    assert inv.tables == ("unknown",)  # nobody passes the kernel
    t = _entries(inv)["T"]
    assert t.is_dtype and t.from_parameter and t.parameter == "dt" and t.source_input is None
    assert {i.name: i.dtype_follows for i in inv.inputs} == {"a": (), "bc": ("dt",)}


def test_template_args_parameter_is_resolved_through_a_later_caller(dt_index):
    inv = _inv(dt_index, "param-args")
    assert inv.template_args_resolved
    t = _entries(inv)["T"]
    # the caller passes {{"T", y.dtype()}} and y as the array argument `a`
    assert t.is_dtype and t.source_input == "a"


def test_dtype_bound_to_a_local_and_checked_equal(dt_index):
    inv = _inv(dt_index, "checked")
    t = _entries(inv)["T"]
    assert t.is_dtype and t.source_input == "x" and not t.from_parameter and not t.constant
    assert inv.dtype_checks == (("w", "x"),)
    assert {i.name: i.dtype_follows for i in inv.inputs} == {"x": (), "alias": ("w",)}


def test_helper_filling_the_vector_through_a_reference(dt_index):
    inv = _inv(dt_index, "out-param")
    assert inv.template_args_resolved
    entries = _entries(inv)
    assert entries["T"].is_dtype and entries["T"].source_input == "x" and entries["T"].how == "push_back"
    assert entries["N"].constant and not entries["N"].is_dtype  # the caller passes 3


def test_vector_filled_by_an_unseen_function_is_not_resolved(dt_index):
    inv = _inv(dt_index, "out-param-unknown")
    assert not inv.template_args_resolved and inv.template_args == ()


def test_pair_built_in_a_local_then_pushed(dt_index):
    inv = _inv(dt_index, "pair-local")
    t = _entries(inv)["T"]
    assert t.is_dtype and t.source_input == "x" and t.how == "push_back"


def test_inputs_follow_the_dtype_they_are_cast_to(engine_index):
    by_fn = {i.enclosing_function: i for i in engine_index.invocations}
    norm = by_fn["mlxcel::fused_add_rms_norm"]
    assert {i.name: i.dtype_follows for i in norm.inputs} == {"x": (), "res": ("x",), "w": ("x",), "eps_array": ()}


def test_template_args_in_a_member(dt_index):
    inv = _inv(dt_index, "member-args")
    assert inv.template_args_resolved
    entries = _entries(inv)
    assert entries["N"].constant and entries["N"].how == "member"  # constructor initialiser
    assert entries["T"].is_dtype and entries["T"].source_input == "x_" and entries["T"].how == "push_back"
    assert [i.text for i in inv.inputs] == ["x_"]


def test_member_changed_by_a_method_defined_elsewhere_is_not_resolved(dt_index):
    inv = _inv(dt_index, "member-args-elsewhere")
    assert not inv.template_args_resolved and inv.template_args == ()


def test_inputs_built_by_stubbed_ops_have_fixed_dtypes(dt_index):
    inv = _inv(dt_index, "stub-ops")
    got = {i.name: (i.dtype_fixed, i.fixed_dtype, i.how) for i in inv.inputs}
    assert got.pop("x")[0] is not True  # the keyed input varies
    assert got == {"scale_arr": (True, "float32", "constructed"), "count": (True, "int32", "constructed"),
                   "plain": (True, None, "scalar")}
    assert not inv.unresolved


def test_inputs_from_ops_with_a_fixed_result_dtype(dt_index):
    inv = _inv(dt_index, "fixed-result")
    got = {i.name: (i.dtype_fixed, i.fixed_dtype) for i in inv.inputs}
    assert got.pop("x")[0] is not True
    assert got == {"key": (True, "uint32"), "narrow": (True, "uint16"), "plain_key": (True, "uint32"),
                   "varying": (None, None), "best": (True, "uint32")}


def test_inputs_refused_unless_of_one_constant_dtype_are_fixed(dt_index):
    inv = _inv(dt_index, "const-checked")
    got = {i.name: (i.dtype_fixed, i.fixed_dtype, i.how) for i in inv.inputs}
    assert got["idx"] == (True, "int32", "checked") and got["offsets"] == (True, "uint32", "checked")
    # two allowed dtypes, or a test that does not throw: not fixed
    assert got["loose"][0] is not True and got["quiet"][0] is not True and got["x"][0] is not True


def test_member_arrays_and_reshaped_inputs_follow_their_source(dt_index):
    inv = _inv(dt_index, "reshaped")
    (t,) = inv.template_args
    assert t.is_dtype and t.source_input == "w.inner"
    assert {(i.name or i.text): i.dtype_follows for i in inv.inputs} == {
        "flat": ("w.inner",), "cast_flat": ("w.inner",), "w.inner": ()}


def test_conditional_inputs_and_launch_outputs(dt_index):
    inv = _inv(dt_index, "chained")
    got = {(i.name or i.text): (i.dtype_fixed, i.fixed_dtype, i.dtype_follows) for i in inv.inputs}
    assert got["bias_arr"][0] is not True and got["bias_arr"][2] == ("x",)  # both branches have x's dtype
    assert got["fixed_bias"][:2] == (True, "float32")
    assert got["first[0]"][:2] == (True, "float32") and got["first[1]"][:2] == (True, "int32")
