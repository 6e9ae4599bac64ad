"""`kernel-ports init` and `kernel-ports sync`.

init on the sample engine must reproduce the committed registry (compared as
parsed data), and `check` must accept what it wrote; sync --check must be
quiet on the clean engine and print a diff (exit 1) on a mutated one; sync
--write must refresh only what mirrors code, keep every comment and human
section, and write atomically.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from kernel_ports import cli
from tests.mutate import ENGINE, REGISTRY, REGISTRY_KEY, REPO, Mutation, check, describe, engine_copy

TURBO = "src/lib/mlx-cpp/turbo"
SAMPLING = f"{TURBO}/sampling.cpp"
KV = f"{TURBO}/kv_cache.cpp"
COMMITTED = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
INIT_FLAGS = ["--include", "src/**", "--define", "MLXCEL_API=", "--include-dir", "src/lib/mlx-cpp",
              "--config", "rocm=MLXCEL_BRIDGE_ROCM_BACKEND"]
DRIFT = ("KP301", "KP302", "KP303", "KP304", "KP305", "KP306")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """(copy directory, XDG cache home): one fixed copy path so parses are cached across tests."""
    base = tmp_path_factory.getbasetemp()
    return base / "drift-engine", base / "drift-cache"


@pytest.fixture
def make(shared, monkeypatch):
    target, xdg = shared
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))

    def make(*mutations):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        return engine_copy(target, *mutations)

    return make


@pytest.fixture
def kp(capsys):
    """kp(*argv) -> (exit code, stdout, stderr) of the in-process CLI."""

    def kp(*argv):
        code = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return kp


def sync_args(copy):
    return ["--registry", copy.registry_path, "--root", copy.root]


def _kernels(data) -> dict:
    return {k["name"]: k for k in data["kernels"]}


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------
# init
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def initialized(shared, tmp_path_factory):
    """init run once, as a user runs it, on a clean copy of the sample engine (it must not write into it)."""
    import os
    import subprocess
    import sys

    target, xdg = shared
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    copy = engine_copy(target)
    before = _snapshot(copy.root)
    out_dir = tmp_path_factory.mktemp("init-out")
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg), "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "kernel_ports", "init", "--root", str(copy.root), "--output", "-",
                           *INIT_FLAGS],
                          capture_output=True, text=True, env=env, cwd=str(out_dir))
    after = _snapshot(copy.root)
    return proc, before, after, out_dir, copy.root


def test_init_reproduces_the_committed_registry(initialized):
    proc, _, _, _, root = initialized
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)
    assert Path(data["root"]) == root
    made, committed = _kernels(data), _kernels(COMMITTED)
    assert sorted(made) == sorted(committed)
    for name, want in committed.items():
        got = made[name]
        for key in ("table", "file", "ports", "dispatch", "rocm_any_wave_size", "hip_source", "predicates"):
            assert got[key] == want[key], (name, key)
    assert data["launchers"] == COMMITTED["launchers"]
    conv, want_conv = data["conventions"], COMMITTED["conventions"]
    assert sorted(conv["helper_files"]) == sorted(want_conv["helper_files"])
    assert [s["name"] for s in conv["test_seams"]] == [s["name"] for s in want_conv["test_seams"]]
    assert sorted(conv["test_seams"][0]["allowed"]) == sorted(want_conv["test_seams"][0]["allowed"])
    for key in ("table_type", "selector", "has_port", "backend_queries", "rust_backend_gates", "rule_scope"):
        assert conv[key] == want_conv[key], key
    assert data["backends"] == COMMITTED["backends"]
    for key in ("std", "defines", "include_dirs", "configurations"):
        assert data["compile"][key] == COMMITTED["compile"][key], key
    assert data["sources"]["include"] == COMMITTED["sources"]["include"]
    assert data["exemptions"] == []


def test_init_prints_to_stdout_and_writes_nothing(initialized):
    proc, before, after, out_dir, _ = initialized
    assert proc.stdout.startswith("# Written by `kernel-ports init`")
    assert before == after
    assert list(out_dir.iterdir()) == []


def test_check_and_sync_accept_what_init_wrote(initialized, make, kp, tmp_path):
    proc = initialized[0]
    copy = make()
    written = tmp_path / "from-init.yaml"
    written.write_text(proc.stdout, encoding="utf-8")
    code, out, err = kp("check", "--registry", written, "--root", copy.root, "--select", "KP3")
    assert code == 0, out + err
    assert "0 error(s)" in out
    code, out, err = kp("sync", "--registry", written, "--root", copy.root)
    assert (code, out) == (0, ""), err


def test_init_output_file_has_a_relative_root_and_refuses_to_overwrite(make, kp, tmp_path):
    copy = make()
    out = copy.root.parent / "generated.yaml"
    code, stdout, err = kp("init", "--root", copy.root, "--output", out, *INIT_FLAGS)
    assert code == 0 and stdout == "", err
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["root"] == "engine"
    assert len(data["kernels"]) == 8
    code, _, err = kp("init", "--root", copy.root, "--output", out)
    assert code == 2 and "exists" in err and len(err.strip().splitlines()) == 1


def test_init_with_no_flags_writes_the_registry_check_reads(make, kp, monkeypatch):
    """A new user's first two commands, in the engine's folder: `init`, then `check`."""
    copy = make()
    monkeypatch.chdir(copy.root)
    assert not (copy.root / "registry.yaml").exists()
    code, stdout, err = kp("init")
    assert code == 0 and stdout == "", err
    assert f"wrote registry.yaml (root: {copy.root.resolve()})" in err
    written = (copy.root / "registry.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(written)
    assert data["root"] == "." and len(data["kernels"]) == 8
    code, out, err = kp("check")
    assert code in (0, 1) and "checked" in out + err, err
    assert "unanalyzable" not in out + err or " 0 files unanalyzable" in out + err
    # a second `init` keeps the first one's file
    code, _, err = kp("init")
    assert code == 2 and "registry.yaml exists" in err and len(err.strip().splitlines()) == 1
    assert (copy.root / "registry.yaml").read_text(encoding="utf-8") == written


@pytest.mark.parametrize(
    "argv, words",
    [
        (["init", "--root", "/nonexistent/engine", "--output", "-"], "not a directory"),
        (["init", "--root", str(ENGINE), "--config", "rocm", "--output", "-"], "NAME=DEFINE"),
        (["init", "--root", str(ENGINE), "--config", "rocm=1BAD", "--output", "-"], "not a macro definition"),
        (["init", "--root", str(ENGINE), "--include", "../outside/**", "--output", "-"], "escapes the root"),
        (["init", "--root", str(ENGINE), "--std", "c++2023x", "--output", "-"], "--std"),
        (["init", "--root", str(ENGINE)], "registry.yaml exists"),  # (the tests run in the repository)
        (["sync", "--check", "--write"], "not allowed"),
    ],
)
def test_init_and_sync_bad_input_is_one_line_exit_2(kp, argv, words):
    code, out, err = kp(*argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err, err


# --------------------------------------------------------------------------
# sync --check
# --------------------------------------------------------------------------


def test_sync_check_is_quiet_on_the_clean_engine(make, kp):
    copy = make()
    code, out, err = kp("sync", *sync_args(copy))
    assert (code, out) == (0, ""), err
    assert "matches the code" in err


def test_sync_check_prints_a_diff_and_exits_1_on_drift(make, kp):
    copy = make(Mutation(KV, '"mlx::core::slice_update", kv_write_ports()', '"mlx::core::scatter", kv_write_ports()'))
    before = copy.registry_path.read_bytes()
    code, out, err = kp("sync", "--check", *sync_args(copy))
    assert code == 1, err
    assert '-      - {entry_point: "kv_cache_write", fallback: "mlx::core::slice_update"}' in out
    assert '+      - {entry_point: "kv_cache_write", fallback: "mlx::core::scatter"}' in out
    assert out.startswith("--- ")
    assert copy.registry_path.read_bytes() == before  # --check never writes


@pytest.mark.parametrize(
    "function, listed",
    [
        ("bool top_k_ready() {\n  return has_kernel_port(top_k_ports());\n}\n", True),
        ("int top_k_port_count() {\n  return has_kernel_port(top_k_ports()) ? 1 : 0;\n}\n", False),
    ],
    ids=["bool-predicate", "non-bool-function"],
)
def test_sync_lists_only_bool_predicates(make, kp, function, listed):
    copy = make(Mutation(SAMPLING, "array top_k_indices(", function + "\narray top_k_indices("))
    code, out, err = kp("sync", "--check", *sync_args(copy))
    if listed:
        assert code == 1 and '+    predicates: ["top_k_available", "top_k_ready"]' in out, out + err
    else:
        assert (code, out) == (0, ""), out + err


# --------------------------------------------------------------------------
# sync --write
# --------------------------------------------------------------------------

NEW_TABLE = """const KernelPorts& top_k_wide_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_top_k_kernel().get(); },
  };
  return ports;
}

mlx::core::fast::CustomKernelFunction& top_k_wide_kernel() {
  return select_kernel_port("top_k_wide", "mlx::core::argpartition", top_k_wide_ports());
}

// No device pre-check: top_k_indices also serves GPU-resident logits when"""

PROBE = """#include "mlx/fast.h"

namespace mlxcel {

mlx::core::fast::CustomKernelFunction make_probe_kernel() {
  return mlx::core::fast::metal_kernel("mlxcel_probe", {"x"}, {"out"}, "out[0] = x[0];");
}

}  // namespace mlxcel
"""

ROUND_TRIP = (
    # dispatch: another fallback
    Mutation(KV, '"mlx::core::slice_update", kv_write_ports()', '"mlx::core::scatter", kv_write_ports()'),
    # mark dropped (and so the pin)
    Mutation(KV, "      .rocm_any_wave_size = true,", "      .rocm_any_wave_size = false,"),
    # a slot removed
    Mutation(SAMPLING, "      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_gumbel_kernel_cuda().get(); },\n", ""),
    # a new table with its own dispatch
    Mutation(SAMPLING, "// No device pre-check: top_k_indices also serves GPU-resident logits when", NEW_TABLE),
    # a predicate now reads two tables
    Mutation(SAMPLING, "  return has_kernel_port(top_k_ports());", "  return has_kernel_port(top_k_ports()) || has_kernel_port(gumbel_ports());"),
    # a new launcher file, and one the registry forgot
    Mutation(f"{TURBO}/probe.cpp", "", PROBE),
    Mutation(REGISTRY_KEY, '  - "src/lib/mlx-cpp/turbo/attention_launch.h"\n', ""),
    # human-only data that must survive
    Mutation(REGISTRY_KEY, "exemptions: []", 'exemptions:\n  # kept by sync\n  - {rule: KP304, path: "src/lib/mlx-cpp/turbo/rope.cpp", reason: "r", tracking: "#1"}'),
)


def _comments(text: str) -> list:
    return [m.group(0).strip() for m in re.finditer(r"#.*$", text, re.MULTILINE)]


def test_sync_write_round_trip_keeps_comments_and_follows_the_code(make, kp, shared):
    copy = make(*ROUND_TRIP)
    old_text = copy.registry_path.read_text(encoding="utf-8")
    old = yaml.safe_load(old_text)
    code, out, err = kp("sync", "--write", *sync_args(copy))
    assert code == 0 and out == "", err
    new_text = copy.registry_path.read_text(encoding="utf-8")
    new = yaml.safe_load(new_text)

    # every comment survives, in the same order
    assert _comments(new_text) == _comments(old_text)
    # values that mirror code follow it
    kernels = _kernels(new)
    assert kernels["kv_write"]["dispatch"] == [{"entry_point": "kv_cache_write", "fallback": "mlx::core::scatter"}]
    assert kernels["kv_write"]["rocm_any_wave_size"] is False and kernels["kv_write"]["hip_source"] is None
    assert kernels["gumbel"]["ports"] == {"metal": "get_gumbel_kernel", "cuda": None, "rocm": None}
    assert kernels["top_k_wide"]["ports"] == {"metal": "get_top_k_kernel", "cuda": None, "rocm": None}
    assert kernels["top_k_wide"]["dispatch"] == [{"entry_point": "top_k_wide", "fallback": "mlx::core::argpartition"}]
    assert kernels["top_k_wide"]["file"] == SAMPLING
    assert kernels["gumbel"]["predicates"] == ["gumbel_sample_available", "top_k_available"]
    assert f"{TURBO}/probe.cpp" in new["launchers"] and f"{TURBO}/attention_launch.h" in new["launchers"]
    assert new["launchers"] == sorted(new["launchers"])
    # human-only data is kept, and key order with it
    for key in ("compile", "conventions", "backends", "severity", "sources", "exemptions", "root", "version"):
        assert new[key] == old[key], key
    assert list(new) == list(old)
    assert [list(k) for k in new["kernels"] if k["name"] != "top_k_wide"] == [list(k) for k in old["kernels"]]
    # the new kernel sits with the other kernels of its file
    names = [k["name"] for k in new["kernels"]]
    assert names.index("top_k_wide") == names.index("gumbel") + 1
    # a refreshed registry is one the drift rules accept, and sync has nothing more to say
    result = check(copy, cache_dir=shared[1] / "kernel-ports")
    assert [f for f in result.findings if f.rule in DRIFT] == [], describe(result)
    code, out, err = kp("sync", "--check", *sync_args(copy))
    assert (code, out) == (0, ""), out + err
    # atomic write: no temporary file left beside the registry
    assert sorted(p.name for p in copy.registry_path.parent.iterdir()) == ["engine", "registry.yaml"]


def test_sync_write_on_a_clean_registry_changes_no_byte(make, kp):
    copy = make()
    before = copy.registry_path.read_bytes()
    code, out, err = kp("sync", "--write", *sync_args(copy))
    assert code == 0 and "already matches" in err
    assert copy.registry_path.read_bytes() == before


def test_sync_write_fills_an_empty_registry_to_the_committed_one(make, kp):
    copy = make()
    text = copy.registry_path.read_text(encoding="utf-8")
    launchers, severity = text.index("launchers:\n"), text.index("severity:")
    kernels, exemptions = text.index("kernels:\n"), text.index("exemptions: []")
    copy.registry_path.write_text(text[:launchers] + "launchers: []\n\n" + text[severity:kernels] + "kernels: []\n\n"
                                  + text[exemptions:], encoding="utf-8")
    code, _, err = kp("sync", "--write", *sync_args(copy))
    assert code == 0, err
    new = yaml.safe_load(copy.registry_path.read_text(encoding="utf-8"))
    assert new["launchers"] == COMMITTED["launchers"]
    made, committed = _kernels(new), _kernels(COMMITTED)
    assert made == committed
    assert '  - "src/lib/mlx-cpp/turbo/activations.cpp"' in copy.registry_path.read_text(encoding="utf-8")


def test_sync_write_removes_a_kernel_whose_table_is_gone(make, kp):
    copy = make(Mutation(SAMPLING, "top_k_ports()", "top_k_table()", count=0))
    code, _, err = kp("sync", "--write", *sync_args(copy))
    assert code == 0, err
    new_text = copy.registry_path.read_text(encoding="utf-8")
    names = [k["name"] for k in yaml.safe_load(new_text)["kernels"]]
    assert "top_k" not in names and "top_k_table" in names
    assert "# both holders call make_gumbel_kernel(<constant>)" in new_text


def test_sync_refuses_to_drop_a_kernel_an_exemption_names(make, kp):
    copy = make(
        Mutation(SAMPLING, "top_k_ports()", "top_k_table()", count=0),
        Mutation(REGISTRY_KEY, "exemptions: []", 'exemptions:\n  - {rule: KP304, path: "src/**", kernel: top_k, reason: "r", tracking: "#2"}'),
    )
    before = copy.registry_path.read_bytes()
    code, out, err = kp("sync", "--write", *sync_args(copy))
    assert code == 2 and "exemptions[0]" in err and len(err.strip().splitlines()) == 1
    assert copy.registry_path.read_bytes() == before


def test_sync_write_is_atomic_when_the_replace_fails(make, kp, monkeypatch):
    copy = make(Mutation(KV, '"mlx::core::slice_update", kv_write_ports()', '"mlx::core::scatter", kv_write_ports()'))
    before = copy.registry_path.read_bytes()

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("kernel_ports.commands.sync.os.replace", refuse)
    code, _, err = kp("sync", "--write", *sync_args(copy))
    assert code == 2 and "cannot write" in err
    assert copy.registry_path.read_bytes() == before
    assert sorted(p.name for p in copy.registry_path.parent.iterdir()) == ["engine", "registry.yaml"]
