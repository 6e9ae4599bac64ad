"""Adopting the gate with known debt: `init --baseline` and `sync --baseline`.

A copy of the sample engine is given two backend comparisons (KP101) in two
launchers. `init --baseline --tracking '#1'` records them; the check is then
green, stays green when lines above them move, fails (KP101) on a new
comparison in a third launcher, and reports the exemption of a fixed one as
stale (KP401). `sync --baseline --write` records the new one.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from kernel_ports import cli
from tests.mutate import ENGINE, Copy, Mutation

TURBO = "src/lib/mlx-cpp/turbo/"
ROPE, NORM, ACT = TURBO + "rope.cpp", TURBO + "fused_norm.cpp", TURBO + "activations.cpp"
ROPE_DEBT = Mutation(ROPE, "  const int dims = x.shape(-1);\n",
                     "  const int dims = x.shape(-1);\n  if (gpu_kernel_backend() == GpuKernelBackend::Cuda) { return x; }\n")
NORM_DEBT = Mutation(NORM, "  const int n = x.shape(-1);\n",
                     "  const int n = x.shape(-1);\n  if (gpu_kernel_backend() != GpuKernelBackend::Metal) { return x; }\n")
NORM_FIXED = Mutation(NORM, "  if (gpu_kernel_backend() != GpuKernelBackend::Metal) { return x; }\n", "")
ROPE_MOVED = Mutation(ROPE, "namespace mlxcel {\n", "// a comment that moves every line below it\n\nnamespace mlxcel {\n")
NEW_COMPARISON = Mutation(ACT, "  const int size = static_cast<int>(gate.size());\n",
                          "  const int size = static_cast<int>(gate.size());\n"
                          "  if (gpu_kernel_backend() == GpuKernelBackend::Rocm) { return gate; }  // new\n")


def kp(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def findings(capsys, reg):
    code, out, _ = kp(capsys, "check", "--registry", reg, "--format", "json")
    return code, json.loads(out)["findings"]


@pytest.fixture
def adopted(tmp_path, capsys):
    root = tmp_path / "engine"
    shutil.copytree(ENGINE, root)
    copy = Copy(root, tmp_path / "registry.yaml")
    copy.apply(ROPE_DEBT)
    copy.apply(NORM_DEBT)
    code, _, err = kp(capsys, "init", "--root", root, "--output", copy.registry_path, "--baseline", "--tracking", "#1")
    assert code == 0, err
    return copy, err


def test_baseline_records_each_finding_by_construct_and_check_is_green(adopted, capsys):
    copy, err = adopted
    exemptions = yaml.safe_load(copy.registry_path.read_text())["exemptions"]
    assert {(e["rule"], e["path"], e["symbol"]) for e in exemptions} == {
        ("KP101", ROPE, "mlxcel::apply_rope"), ("KP101", NORM, "mlxcel::fused_add_rms_norm")}
    assert all(e["reason"] == "present when the gate was adopted" and e["tracking"] == "#1" for e in exemptions)
    assert "check with them: 0 error(s)" in err
    code, found = findings(capsys, copy.registry_path)
    assert code == 0 and found == []
    copy.apply(ROPE_MOVED)  # the construct, not the line, identifies the exemption
    assert findings(capsys, copy.registry_path) == (0, [])


def test_a_new_violation_fails_and_a_fixed_one_leaves_a_stale_exemption(adopted, capsys):
    copy, _ = adopted
    copy.apply(NEW_COMPARISON)
    code, found = findings(capsys, copy.registry_path)
    line = copy.line_of(ACT, "// new")
    assert code == 1 and [(f["rule"], f["path"], f["line"]) for f in found] == [("KP101", ACT, line)], found
    copy.apply(NORM_FIXED)
    code, found = findings(capsys, copy.registry_path)
    stale = [f for f in found if f["rule"] == "KP401"]
    assert len(stale) == 1 and "mlxcel::fused_add_rms_norm" in stale[0]["message"], found
    # sync --baseline records the new finding (and keeps the stale exemption a KP401)
    code, out, err = kp(capsys, "sync", "--registry", copy.registry_path, "--baseline", "--tracking", "#2")
    assert code == 1 and '"mlxcel::swiglu"' in out, err
    code, _, err = kp(capsys, "sync", "--registry", copy.registry_path, "--baseline", "--tracking", "#2", "--write")
    assert code == 0, err
    code, found = findings(capsys, copy.registry_path)
    assert [f["rule"] for f in found] == ["KP401"], found


def test_an_engine_without_port_tables_is_judged_and_adopts_with_one_init_baseline(tmp_path, capsys):
    from tests.test_init_infer import LAUNCH_TREE

    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    source = LAUNCH_TREE.format(open="#if defined(DEMO_ROCM) && DEMO_ROCM", close="#endif").replace(
        "out[0] = x[0] * 2;", "out[0] = __shfl_xor(x[0], 1);")
    (root / "src" / "scale.cpp").write_text(source)
    reg = tmp_path / "registry.yaml"
    assert kp(capsys, "init", "--root", root, "--output", reg)[0] == 0
    code, out, _ = kp(capsys, "check", "--registry", reg)
    # no port table anywhere: the convention rules (KP103 for a launch straight from its holder) wait for one
    assert code == 1 and "[KP201]" in out and "[KP103]" not in out, out
    assert "note: no port table in the tree: the port-table convention rules (KP101, KP102, KP103" in out
    assert "note: 1 of 1 launch(es) reach no port table" in out
    assert "1 HIP bod(ies) read, 1 with lane-level operations (first SCALE_HIP_SOURCE at src/scale.cpp:7: `__shfl_xor`)" in out
    reg.unlink()
    assert kp(capsys, "init", "--root", root, "--output", reg, "--baseline")[0] == 0
    exemptions = yaml.safe_load(reg.read_text())["exemptions"]
    assert {e["rule"] for e in exemptions} == {"KP201"}
    assert all(e["tracking"].startswith("baseline of ") for e in exemptions)
    assert kp(capsys, "check", "--registry", reg)[0] == 0


def test_unjudgeable_files_and_registry_findings_are_never_baselined(tmp_path):
    from types import SimpleNamespace

    from kernel_ports.commands.adopt import baseline_exemptions
    from kernel_ports.findings import Finding

    (tmp_path / "a.cpp").write_text("namespace n {\nstruct S {\n  void m() {\n    f();\n  }\n};\n}\n")
    registry = SimpleNamespace(root=tmp_path, exemptions=())
    found = [Finding("KP101", "a.cpp", 4, 5, "x"), Finding("KP101", "a.cpp", 4, 9, "y"),
             Finding("KP901", "a.cpp", 1, 1, "z"), Finding("KP902", "a.cpp", 4, 5, "w"),
             Finding("KP401", "registry.yaml", 3, 1, "v"), Finding("KP303", "registry.yaml", 9, 1, "u")]
    entries = baseline_exemptions(found, registry, {"a.cpp"}, "#7")
    assert entries == [{"rule": "KP101", "path": "a.cpp", "symbol": "n::S::m",
                        "reason": "present when the gate was adopted", "tracking": "#7"}]


def test_tracking_without_baseline_is_a_usage_error(tmp_path, capsys):
    code, _, err = kp(capsys, "init", "--root", tmp_path, "--tracking", "#1")
    assert code == 2 and err.count("\n") == 1 and "needs --baseline" in err
