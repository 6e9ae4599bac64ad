"""An edit loop answers what a check from scratch answers, byte for byte.

One copy of the sample engine is edited step by step -- a launcher added, changed and deleted, a header every
launcher includes changed, the registry changed, an edit taken back -- and after each step `check --format json`
and `facts` run on it through the command line with the cache the earlier steps filled (the whole-check entry,
the per-unit parses, their header records). Each step's two reports are compared with those of a build of the
same tree with no cache at all. A step that changes nothing a report shows would let a stale answer pass, so
each step must also change the cold report it is compared with (the controls).
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from kernel_ports.cli import main
from kernel_ports.findings import Policy
from kernel_ports.project import Options, analyze
from kernel_ports.registry.load import load_registry
from kernel_ports.reporters import FORMATS
from tests.mutate import REGISTRY_KEY, Mutation, engine_copy

TURBO = "src/lib/mlx-cpp/turbo"

# A launcher the first step adds (new text, not in the sample engine): a Metal kernel built and launched by hand
ADDED = f"{TURBO}/scale_by_hand.cpp"
ADDED_TEXT = """\
// Scales a vector with a kernel built where it is launched.
#include "mlx/mlx.h"
#include "turbo/kernel_port.h"

namespace mlxcel {

mlx::core::array scale_by_hand(const mlx::core::array& x) {
  auto kernel = mlx::core::fast::metal_kernel("mlxcel_scale_by_hand", {"x"}, {"out"}, "out[0] = x[0] * 2;");
  KernelTemplateArgs template_args;
  template_args.push_back({"N", 1});
  return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, template_args, std::nullopt, false, {})[0];
}

}  // namespace mlxcel
"""

DTYPE_KEY = Mutation(f"{TURBO}/fused_norm.cpp", '{{"T", x.dtype()}, {"N", n}}', '{{"N", n}}')

# (name, what the step does to the copy); each is applied to the tree the step before left
STEPS = (
    ("a launcher added", lambda copy: copy.apply(Mutation(ADDED, "", ADDED_TEXT))),
    ("a launcher changed", lambda copy: copy.apply(DTYPE_KEY)),
    ("a launcher deleted", lambda copy: (copy.root / f"{TURBO}/rope.cpp").unlink()),
    ("a header every launcher includes changed", lambda copy: copy.apply(Mutation(
        f"{TURBO}/kernel_port.h", '#include "turbo/gpu_backend.h"\n',
        '#include "turbo/gpu_backend.h"\n#include "turbo/turbo_kernels.h"\n'))),
    ("the registry changed", lambda copy: copy.apply(Mutation(
        REGISTRY_KEY, "severity: {KP202: warning}", "severity: {KP202: warning, KP201: warning}"))),
    ("the launcher change taken back", lambda copy: copy.apply(Mutation(DTYPE_KEY.path, DTYPE_KEY.new, DTYPE_KEY.old))),
)


def _normalised(text: str) -> str:
    # the two fields of a unit's parse record that say how this build got it, not what the tree holds: its parse
    # time, and whether it came from the cache
    text = re.sub(r'"seconds": [0-9.e-]+', '"seconds": "<time>"', text)
    return re.sub(r'"cached": (?:true|false)', '"cached": "<cached>"', text)


def _incremental(copy, out_dir, step: int) -> tuple:
    """`check --format json` and `facts` of the copy through the CLI, on the cache of the steps before."""
    check_out, facts_out = out_dir / f"{step}-check.json", out_dir / f"{step}-facts.json"
    common = ["--registry", str(copy.registry_path), "--root", str(copy.root), "--jobs", "2"]
    assert main(["check", *common, "--format", "json", "--output", str(check_out)]) in (0, 1)
    assert main(["facts", *common, "--output", str(facts_out)]) == 0
    return check_out.read_text(encoding="utf-8"), _normalised(facts_out.read_text(encoding="utf-8"))


def _from_scratch(copy) -> tuple:
    """The same two reports from one build with no cache (what `check --no-cache` and `facts --no-cache` give)."""
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    kernel_severity = {k.name: k.severity for k in registry.kernels if k.severity}
    policy = Policy(severity=registry.severity, kernel_severity=kernel_severity)
    result = analyze(registry, Options(policy=policy, jobs=2, use_cache=False))
    check = FORMATS["json"](result.findings, result.summary)
    return check, _normalised(json.dumps(result.index.to_json(), indent=2) + "\n")


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """[(step name, incremental (check, facts), from scratch (check, facts))], the untouched copy first."""
    base = tmp_path_factory.mktemp("replay")
    copy = engine_copy(base)
    out_dir = base / "out"
    out_dir.mkdir()
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    patch.delenv("KERNEL_PORTS_CACHE_DIR", raising=False)
    steps = []
    try:
        for i, (name, edit) in enumerate((("untouched", lambda copy: None),) + STEPS):
            edit(copy)
            steps.append((name, _incremental(copy, out_dir, i), _from_scratch(copy)))
    finally:
        patch.undo()
        shutil.rmtree(base / "cache", ignore_errors=True)
    return steps


@pytest.mark.parametrize("report", ["check", "facts"])
def test_every_step_of_an_edit_loop_equals_a_build_from_scratch(replay, report):
    at = 0 if report == "check" else 1
    for name, incremental, scratch in replay:
        assert incremental[at] == scratch[at], f"after {name}: the incremental `{report}` differs from a cold build's"


@pytest.mark.parametrize("report", ["check", "facts"])
def test_every_step_changes_what_a_build_from_scratch_reports(replay, report):
    """The controls: a step that changed neither report could not catch a stale answer."""
    at = 0 if report == "check" else 1
    changed = {name for (_, _, before), (name, _, after) in zip(replay, replay[1:]) if before[at] != after[at]}
    # the registry's severity is not a fact, and a header's new include is not a finding
    unchanged_ok = {"facts": {"the registry changed"}, "check": {"a header every launcher includes changed"}}[report]
    assert changed | unchanged_ok == {name for name, _ in STEPS}, sorted({name for name, _ in STEPS} - changed)


def test_the_steps_move_findings_where_they_should(replay):
    """What each step should do to the verdict, read from the cold reports (so the replay edits what it means to)."""
    def findings(step):
        return {(f["rule"], f["path"]) for f in json.loads(replay[step][2][0])["findings"]}

    assert ("KP201", f"{TURBO}/fused_norm.cpp") not in findings(1)
    assert ("KP201", f"{TURBO}/fused_norm.cpp") in findings(2)  # the dtype key removed
    assert any(path == ADDED for _, path in findings(1))  # the added launcher builds its kernel by hand
    def naming_rope(step):
        return [f for f in json.loads(replay[step][2][0])["findings"] if "rope" in json.dumps(f)]

    assert not naming_rope(2) and naming_rope(3)  # the registry's rope kernel lost its launcher
    severities = {f["rule"]: f["severity"] for f in json.loads(replay[5][2][0])["findings"]}
    assert severities.get("KP201") == "warning"
    assert ("KP201", f"{TURBO}/fused_norm.cpp") not in findings(6)  # taken back
