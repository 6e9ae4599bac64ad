"""`kernel-ports init` with no flags: include dirs, build configurations and defines inferred from the tree.

The sample engine's includes are written `"turbo/kernel_port.h"` (they resolve
only under src/lib/mlx-cpp), every hip_kernel call sits behind
`#ifdef MLXCEL_BRIDGE_ROCM_BACKEND` and its bridge exports with `MLXCEL_API`:
init must find all three by itself. Each guard spelling gets a small tree of
its own whose guarded launch lacks a dtype key, so the configuration init
infers is shown to make Clang judge the launch (KP201 in that configuration).
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from kernel_ports.frontend.witness import WitnessNames, cpp_parser
from kernel_ports.infer.guards import guarded_constructs, required_defines
from tests.mutate import ENGINE


@pytest.fixture
def kp(capsys):
    from tests.test_baseline import kp as run

    return lambda *argv: run(capsys, *argv)


def test_sample_engine_init_with_no_flags_checks_clean(tmp_path, kp):
    root = tmp_path / "engine"
    shutil.copytree(ENGINE, root)
    reg = tmp_path / "registry.yaml"
    code, _, err = kp("init", "--root", root, "--output", reg)
    assert code == 0, err
    data = yaml.safe_load(reg.read_text())
    assert data["compile"]["include_dirs"] == ["src/lib/mlx-cpp"], err
    assert data["compile"]["configurations"]["rocm"] == ["MLXCEL_BRIDGE_ROCM_BACKEND"], err
    assert "MLXCEL_API=" in data["compile"]["defines"], err
    assert len(data["kernels"]) == 8
    text = reg.read_text()
    assert "# inferred: " in text and "named after the rocm factory" in text
    assert "include dir src/lib/mlx-cpp:" in err and "check with this registry: 0 error(s)" in err
    code, out, err = kp("check", "--registry", reg, "--root", root)
    assert code == 0, out
    assert " 8 tables," in out and " 0 error(s)" in out


LAUNCH_TREE = """\
#include "mlx/mlx.h"

namespace demo {{
namespace fast = mlx::core::fast;
using mlx::core::array;

constexpr const char* SCALE_HIP_SOURCE = R"(out[0] = x[0] * 2;)";

{open}
fast::CustomKernelFunction& scale_kernel() {{
  static fast::CustomKernelFunction k = fast::hip_kernel("scale", {{"x"}}, {{"out"}}, SCALE_HIP_SOURCE);
  return k;
}}

array scale(const array& x) {{
  auto& kernel = scale_kernel();
  std::vector<std::pair<std::string, fast::TemplateArg>> template_args;
  template_args.emplace_back("N", 4);
  auto outs = kernel({{x}}, {{x.shape()}}, {{x.dtype()}}, {{256, 1, 1}}, {{256, 1, 1}}, template_args, std::nullopt, false, {{}});  // launch
  return outs[0];
}}
{close}
}}  // namespace demo
"""

GUARDS = [
    ("ifdef", "#ifdef DEMO_ROCM", "#endif", ["DEMO_ROCM"]),
    ("ifndef-else", "#ifndef DEMO_ROCM\n#else", "#endif", ["DEMO_ROCM"]),
    ("if-defined", "#if defined(DEMO_ROCM)", "#endif", ["DEMO_ROCM"]),
    ("if-defined-and-value", "#if defined(DEMO_ROCM) && DEMO_ROCM", "#endif", ["DEMO_ROCM=1"]),
    ("nested", "#ifdef DEMO_GPU\n#if defined(DEMO_ROCM) && DEMO_ROCM", "#endif\n#endif", ["DEMO_GPU", "DEMO_ROCM=1"]),
    ("elif", "#if defined(DEMO_CUDA)\n#elif defined(DEMO_ROCM)", "#endif", ["DEMO_ROCM"]),
]


@pytest.mark.parametrize("name,open_,close,defines", GUARDS, ids=[g[0] for g in GUARDS])
def test_guard_spelling_becomes_a_configuration_and_the_launch_is_judged(tmp_path, kp, name, open_, close, defines):
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    source = LAUNCH_TREE.format(open=open_, close=close)
    (root / "src" / "scale.cpp").write_text(source)
    reg = tmp_path / "registry.yaml"
    code, _, err = kp("init", "--root", root, "--output", reg)
    assert code == 0, err
    confs = yaml.safe_load(reg.read_text())["compile"]["configurations"]
    assert confs == {"default": [], "rocm": defines}, err
    code, out, _ = kp("check", "--registry", reg, "--format", "json")
    import json

    findings = json.loads(out)["findings"]
    line = source[: source.index("// launch")].count("\n") + 1
    hits = [f for f in findings if f["rule"] == "KP201" and f["line"] == line]
    assert code == 1 and hits and hits[0]["configuration"] == "rocm", out


NAMES = WitnessNames(factories={"metal_kernel": "metal", "cuda_kernel": "cuda", "hip_kernel": "rocm"},
                     selector="select_kernel_port", has_port="has_kernel_port", table_type="KernelPorts",
                     backend_queries=frozenset(), seams=frozenset(), predicates=frozenset())


def _constructs(src: str):
    return guarded_constructs("x.cpp", cpp_parser().parse(src.encode()).root_node, NAMES)


def test_a_slot_guarded_inside_an_initializer_list_is_read_from_the_parse_tree():
    src = ("const KernelPorts& t() {\n  static const KernelPorts ports{\n      .metal = nullptr,\n"
           "#ifdef BUILD_ROCM\n      .rocm = +[]() -> CustomKernelFunction& { return get_k_hip().get(); },\n#endif\n"
           "      .rocm_any_wave_size = false,\n  };\n  return ports;\n}\n")
    slots = [c for c in _constructs(src) if c.kind == "slot"]
    assert [(c.backend, required_defines(c.needs)) for c in slots] == [("rocm", ("BUILD_ROCM",))]


def test_what_a_construct_needs_undefined_is_the_default_and_unread_conditions_are_reported():
    src = ('void f(Args& a) {\n#ifndef BUILD_ROCM\n  a.push_back({"T", x.dtype()});\n#endif\n'
           '#if BUILD_LEVEL > 2\n  a.emplace_back("W", 4);\n#endif\n}\n')
    found = _constructs(src)
    assert [required_defines(c.needs) for c in found if not c.unreadable] == [()]
    assert [c.unreadable for c in found if c.unreadable] == ["BUILD_LEVEL > 2"]


def test_an_include_that_fits_two_folders_takes_the_one_more_includers_need():
    from kernel_ports.infer.includes import infer_include_dirs

    # turbo/k.h fits under a/lib and b; turbo/j.h only under a/lib: a/lib serves every includer
    known = {"a/lib/turbo/k.h", "a/lib/turbo/j.h", "b/turbo/k.h", "a/src/x.cpp", "a/src/y.cpp", "c/w.cpp"}
    includes = {"a/src/x.cpp": [("turbo/k.h", False), ("turbo/j.h", False)], "a/src/y.cpp": [("turbo/j.h", False)],
                "c/w.cpp": [("turbo/k.h", False), ("gen/missing.h", False), ("vector", True)]}
    chosen, missing = infer_include_dirs(includes, known)
    assert [c.path for c in chosen] == ["a/lib"]
    assert "also fit (fewer includers need them): b" in chosen[0].reason()
    assert missing == {("c/w.cpp", "gen/missing.h")}


def test_export_attributes_defined_nowhere_get_an_empty_definition(tmp_path, kp):
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "api.h").write_text("#define KNOWN_API\nstruct SHOUTY { int x; };\n"
                                        "KNOWN_API void g();\nSHOUTY make_shouty();\n")
    (root / "src" / "api.cpp").write_text('#include "api.h"\nDEMO_API bool f() { return true; }\n'
                                          "class DEMO_API Thing { int y; };\n")
    reg = tmp_path / "registry.yaml"
    code, _, err = kp("init", "--root", root, "--output", reg)
    assert code == 0, err
    assert yaml.safe_load(reg.read_text())["compile"]["defines"] == ["DEMO_API="], err
    assert "define DEMO_API=: used as a declaration specifier 2 time(s) in 1 file(s)" in err


def test_explicit_flags_replace_the_inference(tmp_path, kp):
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "scale.cpp").write_text(LAUNCH_TREE.format(open="#ifdef DEMO_ROCM", close="#endif"))
    reg = tmp_path / "registry.yaml"
    code, _, err = kp("init", "--root", root, "--output", reg, "--config", "hip=DEMO_ROCM=1")
    assert code == 0, err
    assert yaml.safe_load(reg.read_text())["compile"]["configurations"] == {"default": [], "hip": ["DEMO_ROCM=1"]}


def test_include_dirs_of_a_compile_commands_json_in_the_tree_come_first(tmp_path):
    import json

    from kernel_ports.infer import infer_build
    from kernel_ports.scope import SourceFile

    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(tmp_path / "build"), "file": "../src/a.cpp", "command": "c++ -I../gen -DX=1 -c ../src/a.cpp"}]))
    files = [SourceFile("src/a.cpp", tmp_path / "src/a.cpp", b'#include "cfg.h"\n#include "lib/k.h"\n'),
             SourceFile("gen/cfg.h", tmp_path / "gen/cfg.h", b""),
             SourceFile("third/lib/k.h", tmp_path / "third/lib/k.h", b"")]
    out = infer_build(tmp_path, files, NAMES)
    assert out.compile_commands == tmp_path / "build" / "compile_commands.json"
    assert [d for d, _ in out.include_dirs] == ["gen", "third"]
    assert "from compile_commands.json" in out.include_dirs[0][1]
    assert "resolve only under it" in out.include_dirs[1][1]


def test_a_guard_the_compiler_defines_is_reported_not_made_a_configuration():
    from kernel_ports.infer import Inferred, _configurations

    found = _constructs('#ifdef __APPLE__\nauto k = metal_kernel("a", {}, {}, S);\n#endif\n'
                        '#if defined(USE_CUDA)\nauto c = cuda_kernel("a", {}, {}, S);\n#endif\n')
    out = Inferred()
    _configurations(out, found)
    assert [(n, d) for n, d, _ in out.configurations] == [("cuda", ("USE_CUDA",))]
    assert "__APPLE__ (reserved for the compiler)" in out.notes[0]


def test_a_condition_nested_too_deep_to_read_is_reported_not_a_crash():
    deep = "(" * 5000 + "defined(X)" + ")" * 5000
    found = _constructs(f"#if {deep}\nauto k = hip_kernel(\"a\", {{}}, {{}}, S);\n#endif\n")
    assert found and found[0].unreadable.startswith("((((")
