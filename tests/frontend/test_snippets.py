"""Clang facts on the snippet tree (tests/frontend/snippets.py), parsed once per session."""

from snippets import line_of


def _at(facts, marker):
    path, line = line_of(marker)
    return [f for f in facts if f.loc.path == path and f.loc.line == line]


def test_parse_quality_and_files(snippet_index):
    parsed = {(q.path, q.configuration) for q in snippet_index.parse_quality if q.parsed}
    assert ("src/eng/alpha.cpp", "default") in parsed and ("src/eng/alpha.cpp", "rocm") in parsed
    assert ("src/eng/bad.cpp", "default") in parsed and ("src/eng/bad.cpp", "rocm") not in parsed
    assert all(q.diagnostics == 0 for q in snippet_index.parse_quality)
    assert snippet_index.unanalyzable == [] and snippet_index.unconfirmed == []
    # a header whose only candidate is in a comment is not sent to Clang
    assert "src/eng/unused_note.h" not in {p for p, _ in snippet_index.clang_files}


def test_templated_holder_slots_resolve_per_backend(snippet_index):
    t = snippet_index.table("alpha_ports")
    assert t.rocm_any_wave_size and t.slots["cuda"] is None
    metal, rocm = t.slots["metal"], t.slots["rocm"]
    assert metal.accessor == "get_alpha_kernel<GpuKernelBackend::Metal>"
    assert [f.backend for f in metal.factory_calls] == ["metal"]  # the switch picked Metal only
    assert [f.backend for f in rocm.factory_calls] == ["rocm"]
    assert rocm.configurations == frozenset({"rocm"})  # a slot only under a define
    assert metal.configurations == frozenset({"default", "rocm"})
    assert rocm.hip_sources == ("ALPHA_HIP_SOURCE",)
    kinds = [s.kind for s in rocm.chain]
    assert kinds[0] == "getter" and "accessor" in kinds and kinds[-1] == "factory"
    assert any(s.bindings == (("B", "Rocm"),) for s in rocm.chain)


def test_factory_calls(snippet_index):
    (fc,) = _at(snippet_index.factory_calls, "alpha-hip-factory")
    assert fc.backend == "rocm" and fc.kernel_name == "alpha" and fc.source_constants == ("ALPHA_HIP_SOURCE",)
    assert fc.configurations == frozenset({"rocm"}) and fc.enclosing_function == "mlxcel::make_alpha"
    assert not fc.in_table_slot


def test_selector_calls_resolve_tables(snippet_index):
    (s,) = _at(snippet_index.selector_calls, "alpha-select")
    assert (s.entry_point, s.fallback) == ("alpha", "graph")
    assert s.tables == ("alpha_ports", "alpha_small_ports")  # through a local bound to a ternary
    (b,) = _at(snippet_index.selector_calls, "beta-select")
    assert b.tables == ("beta_ports",) and b.enclosing_function == "mlxcel::beta_kernel"


def test_macro_wrapped_invocation_with_helper_built_args(snippet_index):
    (inv,) = _at(snippet_index.invocations, "alpha-invoke")
    assert inv.in_macro and inv.tables == ("alpha_ports", "alpha_small_ports")
    entries = {e.name: e for e in inv.template_args}
    assert entries["T"].is_dtype and entries["T"].source_input == "x" and entries["T"].how == "helper"
    assert entries["N"].how == "push_back" and not entries["N"].is_dtype
    assert inv.inputs[1].dtype_fixed is True  # scale is a scalar array


def test_header_defined_invocation_through_wrapper_and_parameter(snippet_index):
    invs = _at(snippet_index.invocations, "beta-invoke")
    assert {i.loc.path for i in invs} == {"src/eng/beta_launch.h"}
    by_cfg = {c: i for i in invs for c in i.configurations}
    assert by_cfg["default"].tables == ("beta_ports",) and by_cfg["default"].kernel_from_parameter
    names_default = {e.name for e in by_cfg["default"].template_args}
    names_rocm = {e.name for e in by_cfg["rocm"].template_args}
    assert names_default == {"ACC", "T"} and names_rocm == {"ACC"}  # judged per configuration
    acc = next(e for e in by_cfg["rocm"].template_args if e.name == "ACC")
    assert acc.is_dtype and acc.from_parameter and acc.how == "emplace_back"
    fixed = {x.text: x.dtype_fixed for x in by_cfg["default"].inputs}
    assert fixed == {"x": False, "y": True}  # y is astype(x, float32)
    # the header's includers are known
    assert snippet_index.translation_units_of("src/eng/beta_launch.h") == {"src/eng/beta.cpp"}


def test_backend_tests_every_shape(snippet_index):
    bt = snippet_index.backend_tests
    (eq,) = _at(bt, "eq-test")
    assert (eq.operator, eq.origin, eq.via, eq.compared_to) == ("==", "runtime", "direct", ("Cuda",))
    (ne,) = _at(bt, "ne-reversed-test")
    assert ne.operator == "!=" and ne.compared_to == ("Metal",)
    (sw,) = _at(bt, "switch-test")
    assert (sw.operator, sw.via) == ("switch", "local")
    (bl,) = _at(bt, "bool-local")
    assert bl.operator == "bool-local" and bl.query == "mlxcel::custom_kernels_available"
    (tern,) = _at(bt, "ternary-test")
    assert tern.operator == "ternary" and tern.via == "local"
    (mac,) = _at(bt, "macro-test")
    assert mac.in_macro and mac.macro == "IS_CUDA"
    (mem,) = _at(bt, "member-test")
    assert mem.via == "member" and mem.origin == "runtime"
    (par,) = _at(bt, "param-test")
    assert par.via == "parameter" and par.origin == "runtime"
    (notl,) = _at([b for b in bt if b.operator == "!"], "refusal")
    assert notl.query == "mlxcel::custom_kernels_available"
    # the templated holder's switch is a compile-time choice, not a runtime test
    comp = [b for b in bt if b.enclosing_function == "mlxcel::make_alpha"]
    assert comp and all(b.origin == "compile_time" and b.via == "template_parameter" for b in comp)
    # comments and strings are not tests
    assert not [b for b in bt if b.loc.path == "src/eng/bad.cpp" and b.loc.line in (5, 6)]


def test_refusal(snippet_index):
    (r,) = _at(snippet_index.refusals, "refusal")
    assert r.tested == ("mlxcel::custom_kernels_available",) and r.enclosing_function == "mlxcel::refuse"


def test_holder_accesses_inside_and_outside_slots(snippet_index):
    ha = snippet_index.holder_accesses
    (bound,) = _at(ha, "bound-ref")
    assert bound.kind == "bound_ref_get" and not bound.in_table_slot
    (direct,) = _at(ha, "direct-get")
    assert direct.kind == "accessor_get" and direct.accessor == "get_alpha_kernel<GpuKernelBackend::Metal>"
    assert all(h.in_table_slot for h in ha if h.enclosing_function.endswith((".metal", ".cuda", ".rocm")))


def test_predicate_reads_tables(snippet_index):
    (p,) = [p for p in snippet_index.predicates if p.name == "alpha_available"]
    assert p.tables == ("alpha_ports", "alpha_small_ports") and p.default_device_check
    assert p.backend_queries == () and p.has_port_calls == 2


def test_seams_and_hip_sources(snippet_index):
    (call,) = _at(snippet_index.seam_calls, "seam")
    assert call.language == "cpp" and not call.is_forwarding and not call.is_declaration
    (hip,) = snippet_index.hip_source("ALPHA_HIP_SOURCE")
    assert len(hip.piece_locs) == 2 and "__shfl_xor" not in hip.identifiers and "threadIdx" in hip.identifiers


def test_to_json_is_stable(snippet_index):
    a, b = snippet_index.to_json(), snippet_index.to_json()
    assert a == b
    for key in ("port_tables", "selector_calls", "invocations", "factory_calls", "predicates", "backend_tests",
                "holder_accesses", "refusals", "hip_sources", "rust_gates", "seam_calls", "files"):
        assert isinstance(a[key], list)
    assert {t["name"] for t in a["port_tables"]} == {"alpha_ports", "alpha_small_ports", "beta_ports"}
