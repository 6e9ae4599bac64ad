"""check --device-compile rocm (KP501/KP502) on the sample engine and mutated copies of it.

Every copy is built once (module-scoped fixtures) and several controls read it, so the HIP compiles cost a few
seconds each. The tests skip, naming the Debian packages, where hipcc is not installed."""

from __future__ import annotations

import pytest

from kernel_ports.findings import Policy
from kernel_ports.frontend.device.compiler import DEBIAN_PACKAGES, CompilerMissing, find_compiler
from kernel_ports.project import Options, analyze
from kernel_ports.registry.load import load_registry
from tests.mutate import REGISTRY_KEY, Mutation, describe, engine_copy

try:
    find_compiler()
    HIPCC = True
except CompilerMissing:
    HIPCC = False

needs_hipcc = pytest.mark.skipif(not HIPCC, reason=f"no hipcc: apt install {DEBIAN_PACKAGES}")

TURBO = "src/lib/mlx-cpp/turbo/"
SWIGLU_HIP, NORM_HIP, KV_HIP, ROPE_HIP = (TURBO + n for n in ("activations_hip.h", "fused_norm_hip.h", "kv_cache_hip.h", "rope_hip.h"))
WAVE_GUARD = ("#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 32\n"
              "#error this body assumes 32-lane wavefronts\n#endif\n")


def device_check(tmp_path_factory, kp_cache, name, mutations):
    copy = engine_copy(tmp_path_factory.mktemp(name), *mutations)
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    options = Options(policy=Policy(), jobs=2, use_cache=True, cache_dir=str(kp_cache), device_compile="rocm")
    return copy, analyze(registry, options)


def at(result, code, path, line=None):
    return [f for f in result.findings if f.rule == code and f.path == path and (line is None or f.line == line)]


def caught(copy, result, code, path, tag, *words):
    """The finding of ``code`` on the line holding ``tag`` (anywhere in ``path`` when tag is None), its message
    naming every word."""
    found = at(result, code, path, copy.line_of(path, tag) if tag else None)
    assert found and all(w in found[0].message for w in words), describe(result)
    return found[0]


def caught_from_ir(result, path, intrinsic):
    """KP502 from the device IR where the text scan (KP105) saw nothing."""
    assert not at(result, "KP105", path), describe(result)
    found = at(result, "KP502", path)
    assert found and intrinsic in found[0].message and "KP105 is quiet" in found[0].message, describe(result)


def builds(result, body_file):
    return [b for b in result.index.device_builds if b.loc.path == body_file]


@pytest.fixture(scope="module")
def clean(tmp_path_factory, kp_cache):
    return device_check(tmp_path_factory, kp_cache, "device-clean", ())


@needs_hipcc
def test_sample_bodies_build_for_both_targets_in_every_dtype(clean):
    _, result = clean
    got = result.index.device_builds
    assert {b.loc.path for b in got} == {SWIGLU_HIP, NORM_HIP, KV_HIP, ROPE_HIP}
    for body in {b.body for b in got}:
        for target in ("gfx1030", "gfx90a"):
            mine = [b for b in got if b.body == body and b.target == target]
            assert mine and all(b.result == "built" for b in mine), describe(result)
            for dtype in ("float32", "float16", "bfloat16"):
                assert any(f"={dtype}" in b.assignment for b in mine), (body, target, dtype)
            assert all(b.vgprs and b.sgprs and b.occupancy for b in mine)
    assert not [f for f in result.findings if f.rule in ("KP501", "KP502")], describe(result)
    assert "KP501" in result.summary["rules_run"] and result.summary["device"]["targets"] == ["gfx1030", "gfx90a"]
    assert any("device builds: 4 HIP bodies" in n and "HIP version" in n for n in result.summary["notes"])


@needs_hipcc
def test_shuffle_body_shows_its_lane_intrinsics_and_the_others_none(clean):
    _, result = clean
    norm = {x for b in builds(result, NORM_HIP) for x in b.lane_intrinsics}
    assert {"ds.bpermute", "mbcnt (lane id)"} <= norm
    for path in (SWIGLU_HIP, KV_HIP, ROPE_HIP):
        assert not [x for b in builds(result, path) for x in b.lane_intrinsics], path


@needs_hipcc
def test_launch_constants_are_taken_and_missing_ones_named_as_guesses(clean):
    _, result = clean
    kv = builds(result, KV_HIP)
    assert any("CONTIGUOUS=true" in b.assignment for b in kv)
    assert all(b.assignment.endswith("guessed)") for b in kv)
    assert all("offset:int32" in b.assignment for b in kv)  # the launch's int32 array


BROKEN = (
    # a typo in the swiglu body (unmarked: judged on gfx1030)
    Mutation(SWIGLU_HIP, "  const float silu = g / (1.0f + expf(-g));\n",
             "  const float silu = g / (1.0f + expff(-g));  // t:typo\n"),
    # a CUDA-only type left in the fused-norm port
    Mutation(NORM_HIP, "  const float inv = rsqrtf(sum / N + eps[0]);\n",
             "  const __nv_bfloat16 inv = rsqrtf(sum / N + eps[0]);  // t:nv\n"),
    # a wavefront guard in a body whose table is marked any-wave
    Mutation(KV_HIP, "  const int col = blockIdx.x * blockDim.x + threadIdx.x;\n",
             WAVE_GUARD + "  const int col = blockIdx.x * blockDim.x + threadIdx.x;\n"),
    # a lane operation through a helper in the header argument, spelt so the text scan cannot see it
    Mutation(ROPE_HIP, "  return position * powf(base, -2.0f * pair / dims);\n",
             "  return __hip_ds_swizzlef(position, 0x041f) * powf(base, -2.0f * pair / dims);\n"),
)


@pytest.fixture(scope="module")
def broken(tmp_path_factory, kp_cache):
    return device_check(tmp_path_factory, kp_cache, "device-broken", BROKEN)


@needs_hipcc
def test_kp501_typo_at_the_body_line_with_the_compiler_message(broken):
    copy, result = broken
    line = copy.line_of(SWIGLU_HIP, "t:typo")
    (f, *_) = at(result, "KP501", SWIGLU_HIP, line) or [None]
    assert f is not None, describe(result)
    assert "expff" in f.message and "gfx1030" in f.message and "T=" in f.message and f.column > 1
    assert not at(result, "KP501", SWIGLU_HIP, None)[1:], "one finding: the unmarked table is not judged on gfx90a"


@needs_hipcc
def test_kp502_wavefront_guard_in_an_any_wave_body(broken):
    copy, result = broken
    caught(copy, result, "KP502", KV_HIP, "#error this body", "wavefront guard", "gfx90a")
    assert not at(result, "KP501", KV_HIP), "it builds for 32 lanes"


# (copy, code, file, text on the finding's line, words its message names)
AT_THEIR_LINE = [
    ("broken", "KP501", NORM_HIP, "t:nv", ("__nv_bfloat16",)),
    ("launches", "KP501", SWIGLU_HIP, "if (i >= SIZE)", ("SIZE",)),
    ("launches", "KP501", KV_HIP, "t:shape", ("offset_shape",)),
]
FROM_THE_IR = [("broken", ROPE_HIP, "ds.swizzle"), ("launches", ROPE_HIP, "ds.bpermute")]


@needs_hipcc
@pytest.mark.parametrize("copy_name, code, path, tag, words", AT_THEIR_LINE, ids=lambda v: str(v))
def test_negative_control_at_its_line(request, copy_name, code, path, tag, words):
    copy, result = request.getfixturevalue(copy_name)
    caught(copy, result, code, path, tag, *words)


@needs_hipcc
@pytest.mark.parametrize("copy_name, path, intrinsic", FROM_THE_IR, ids=("header-helper", "token-pasting"))
def test_lane_op_hidden_from_the_text_is_kp502_from_the_ir(request, copy_name, path, intrinsic):
    _, result = request.getfixturevalue(copy_name)
    caught_from_ir(result, path, intrinsic)


LAUNCHES = (
    # the launch stops passing a constant the body reads
    Mutation(TURBO + "activations.cpp", '{{"T", gate.dtype()}, {"SIZE", size}}', '{{"T", gate.dtype()}}'),
    # an input renamed at the call while the body still reads its shape under the old name
    Mutation(TURBO + "kv_cache.cpp", '{"cache", "values", "offset"}, {"out"}, KV_WRITE_HIP_SOURCE',
             '{"cache", "values", "start_offset"}, {"out"}, KV_WRITE_HIP_SOURCE'),
    Mutation(KV_HIP, "  const int start = offset[0];\n",
             "  const int start = start_offset[0] + 0 * offset_shape[0];  // t:shape\n"),
    # a shuffle spelt through token pasting in an any-wave body: no token the text scan knows
    Mutation(ROPE_HIP, "  const float c = cosf(theta);\n",
             "#define KP_PASTE(a, b) a##b\n  const float c = KP_PASTE(__sh, fl_xor)(cosf(theta), 1);\n"),
    # quiet: a guarded body in an unmarked table stops at its guard on gfx90a, as intended
    Mutation(NORM_HIP, "  const int row = blockIdx.x;\n", WAVE_GUARD + "  const int row = blockIdx.x;\n"),
)


@pytest.fixture(scope="module")
def launches(tmp_path_factory, kp_cache):
    return device_check(tmp_path_factory, kp_cache, "device-launches", LAUNCHES)


@needs_hipcc
def test_guarded_body_of_an_unmarked_table_is_quiet(launches):
    _, result = launches
    norm = builds(result, NORM_HIP)
    assert {b.result for b in norm if b.target == "gfx90a"} == {"failed"} and all(b.at_guard for b in norm if b.target == "gfx90a")
    assert all(b.result == "built" for b in norm if b.target == "gfx1030")
    assert not at(result, "KP501", NORM_HIP) and not at(result, "KP502", NORM_HIP), describe(result)


QUIET = (
    Mutation(ROPE_HIP, "  const float c = cosf(theta);\n",
             "  // no __shfl_xor(c, 1) or __ballot here: a comment\n  const float c = cosf(theta);\n"),
    Mutation(KV_HIP, "  const int index = row * W + col;\n", "  const int lane_sum = row * W + col;\n  const int index = lane_sum;\n"),
)


@needs_hipcc
def test_comment_and_renamed_local_are_quiet(tmp_path_factory, kp_cache):
    _, result = device_check(tmp_path_factory, kp_cache, "device-quiet", QUIET)
    assert all(b.result == "built" and not b.lane_intrinsics for b in builds(result, ROPE_HIP) + builds(result, KV_HIP))
    assert not [f for f in result.findings if f.rule in ("KP105", "KP501", "KP502")], describe(result)


def test_flag_without_a_compiler_exits_2_naming_the_packages(tmp_path, capsys):
    from kernel_ports import cli

    copy = engine_copy(tmp_path)
    text = copy.registry_path.read_text()
    copy.registry_path.write_text(text.replace("compile:\n", f"compile:\n  device:\n    rocm: {{compiler: {tmp_path}/no/hipcc}}\n", 1))
    code = cli.main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--device-compile", "rocm", "--no-cache"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and DEBIAN_PACKAGES in err[0], err


def test_registry_asking_without_a_compiler_is_a_note_not_a_silent_pass(tmp_path):
    copy = engine_copy(tmp_path)
    text = copy.registry_path.read_text()
    assert "compile:\n" in text
    copy.registry_path.write_text(text.replace("compile:\n", f"compile:\n  device:\n    rocm: {{compiler: {tmp_path}/no/hipcc}}\n", 1))
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    result = analyze(registry, Options(use_cache=False))
    assert any("did not run" in n and DEBIAN_PACKAGES in n for n in result.summary["notes"])
    assert "KP501" not in result.summary["rules_run"]


@needs_hipcc
def test_second_check_reads_every_build_from_the_cache(clean, kp_cache):
    copy, first = clean
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    again = analyze(registry, Options(jobs=2, use_cache=True, cache_dir=str(kp_cache), device_compile="rocm"))
    assert again.summary["device"]["compiles"] == 0
    assert again.summary["device"]["cached"] == first.summary["device"]["compiles"] + first.summary["device"]["cached"]
    assert [b.sgprs for b in again.index.device_builds] == [b.sgprs for b in first.index.device_builds]


# -- what a developer adding ports sees: the ROCm checklist and the dashboard --------------------------------------

def _checklist(copy, result):
    from kernel_ports.commands.coverage import rocm_checklist

    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    return {k: {i.name: i for i in items} for k, items in rocm_checklist(registry, result.index, result.findings).items()}


@needs_hipcc
def test_checklist_shows_each_target_build_and_occupancy(clean):
    items = _checklist(*clean)
    swiglu = items["swiglu"]["device build"]
    assert swiglu.done and "gfx1030: built" in swiglu.detail and "gfx90a: built" in swiglu.detail
    assert "occupancy 16" in swiglu.detail  # gfx1030's figure for this body, from the resource remarks
    assert items["sdpa_exact"]["device build"].detail == "no .rocm port to build"
    assert not items["sdpa_exact"]["device build"].done


@needs_hipcc
def test_checklist_device_item_not_done_where_a_body_breaks(broken):
    copy, result = broken
    item = _checklist(copy, result)["swiglu"]["device build"]
    assert not item.done and "KP501" in item.detail
    assert item.where == f"{SWIGLU_HIP}:{copy.line_of(SWIGLU_HIP, 't:typo')}"


def test_checklist_without_device_builds_has_no_device_item_and_says_so(tmp_path, capsys):
    from kernel_ports import cli

    copy = engine_copy(tmp_path)
    code = cli.main(["status", "rocm", "--registry", str(copy.registry_path), "--root", str(copy.root)])
    out = capsys.readouterr().out
    assert code == 0 and "device build" not in out
    assert out.rstrip().endswith("HIP bodies not built: add --device-compile rocm (or compile.device.rocm in the "
                                 "registry) for each target's build")


@needs_hipcc
def test_dashboard_has_a_build_column_per_target(clean):
    from kernel_ports.commands.coverage import matrix_rows, rocm_checklist
    from kernel_ports.commands.dashboard import render_dashboard

    copy, result = clean
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    page = render_dashboard(matrix_rows(registry, result.index), rocm_checklist(registry, result.index, result.findings),
                            result.findings, result.summary)
    assert "<th>ROCm build (per target)</th>" in page and "HIP bodies built for gfx1030, gfx90a" in page
    assert page.count('data-col="rocm-build"') == len(matrix_rows(registry, result.index))
    assert 'data-col="rocm-build" class="cell state-port"' in page


# -- the device stage's entry (index/device_entry.py) on a whole check --------------------------------------------

@needs_hipcc
def test_launcher_edited_by_a_comment_takes_the_builds_from_the_device_entry(tmp_path_factory, kp_cache, monkeypatch):
    from kernel_ports.index import device_plan

    copy, first = device_check(tmp_path_factory, kp_cache, "device-entry", ())
    launcher = copy.root / TURBO / "activations.cpp"
    launcher.write_text(launcher.read_text() + "\n// an edit that changes no fact\n")

    def no_plan(*args, **kwargs):
        raise AssertionError("the device plan ran: the entry was not used")

    with monkeypatch.context() as m:
        m.setattr(device_plan, "plan_bodies", no_plan)  # quiet control: nothing the plan reads changed
        registry = load_registry(copy.registry_path, root_override=str(copy.root))
        again = analyze(registry, Options(jobs=2, use_cache=True, cache_dir=str(kp_cache), device_compile="rocm"))
    assert again.index.device_builds == first.index.device_builds
    assert again.summary["device"]["compiles"] == 0
    assert again.summary["device"]["cached"] == first.summary["device"]["compiles"] + first.summary["device"]["cached"]
    assert [n for n in again.summary["notes"] if not n.startswith("device builds:")] == \
        [n for n in first.summary["notes"] if not n.startswith("device builds:")]
    # negative control: a launch stops passing a constant the body reads; the plan runs and the builds follow it
    copy.apply(LAUNCHES[0])
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    changed = analyze(registry, Options(jobs=2, use_cache=True, cache_dir=str(kp_cache), device_compile="rocm"))
    assert changed.index.device_builds != first.index.device_builds
    caught(copy, changed, "KP501", SWIGLU_HIP, "if (i >= SIZE)", "SIZE")
