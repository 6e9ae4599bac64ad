"""The hosted workflow runs the check once and takes both reports from that run; the CLI gives both from one run."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import yaml

from kernel_ports import cli, project
from tests.conftest import REGISTRY, REPO

WORKFLOW = REPO / "ci" / "kernel-ports.yml"


@pytest.fixture(scope="module")
def steps():
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    (job,) = doc["jobs"].values()
    return job, job["steps"]


def _runs(steps):
    return [(s, line) for s in steps for line in s.get("run", "").splitlines() if line.strip()]


def test_one_check_run_gives_annotations_and_sarif(steps):
    _, steps = steps
    checks = [(s, line) for s, line in _runs(steps) if re.search(r"\bkernel-ports\s+check\b", line)]
    assert len(checks) == 1, [line for _, line in checks]
    argv = shlex.split(checks[0][1])
    assert argv[argv.index("--format") + 1] == "github"
    also = [argv[i + 1] for i, a in enumerate(argv) if a == "--also"]
    assert len(also) == 1 and also[0].startswith("sarif=")
    sarif = also[0].split("=", 1)[1]
    (upload,) = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif")]
    assert upload["with"]["sarif_file"] == sarif and "always()" in upload["if"]
    assert not any(re.search(r"\bkernel-ports\s+(facts|sync|matrix|status)\b", line) for _, line in _runs(steps))


def test_cache_restored_and_saved_by_tool_registry_and_headers(steps):
    job, steps = steps
    cache_dir = job["env"]["KERNEL_PORTS_CACHE_DIR"]
    restore = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/restore@")]
    save = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/save@")]
    assert len(restore) == 1 and len(save) == 1 and "always()" in save[0]["if"]
    names = [s.get("name", s.get("uses")) for s in steps]
    check_at = next(i for i, s in enumerate(steps) if "kernel-ports check" in s.get("run", ""))
    assert steps.index(restore[0]) < check_at < steps.index(save[0]), names
    for s in restore + save:
        paths = [p.strip() for p in s["with"]["path"].splitlines() if p.strip()]
        assert "${{ env.KERNEL_PORTS_CACHE_DIR }}" in paths and cache_dir
        assert any(p.startswith("!") and p.endswith("/pch") for p in paths)  # Clang's binary preludes are not shared
        key = s["with"]["key"]
        assert "steps.key.outputs.tool" in key and "hashFiles('registry.yaml')" in key and "steps.key.outputs.headers" in key
    assert restore[0]["with"]["key"] == save[0]["with"]["key"]


def test_installs_the_pinned_copy_with_the_mlx_extra_and_the_hip_toolchain(steps):
    job, steps = steps
    # kernel-ports is not on PyPI: the engine pins its copy in a repository variable, and the header says so
    assert job["env"]["KERNEL_PORTS_PACKAGE"] == "${{ vars.KERNEL_PORTS_PACKAGE }}"
    assert "KERNEL_PORTS_PACKAGE" in WORKFLOW.read_text(encoding="utf-8").split("name:", 1)[0]
    lines = [line for _, line in _runs(steps)]
    assert any('pip install -q "$KERNEL_PORTS_PACKAGE"' in line for line in lines)
    assert not any("pip install" in line and "kernel-ports[mlx]" in line for line in lines)
    assert any('test -n "$KERNEL_PORTS_PACKAGE"' in line for line in lines)  # unset: the job fails, and says why
    apt = " ".join(s.get("run", "") for s in steps if "apt-get install" in s.get("run", ""))
    for package in ("g++", "librust-cxx-dev", "hipcc", "libamdhip64-dev", "rocm-device-libs"):
        assert re.search(rf"(?<![\w-]){re.escape(package)}(?![\w-])", apt), package
    assert job["container"].startswith("debian:bookworm") and job["env"]["HIP_PLATFORM"] == "amd"


def test_the_check_builds_the_hip_bodies(steps):
    _, steps = steps
    (line,) = [line for _, line in _runs(steps) if re.search(r"\bkernel-ports\s+check\b", line)]
    argv = shlex.split(line)
    assert argv[argv.index("--device-compile") + 1] == "rocm"


def test_verify_rocm_builds_the_hip_bodies(tmp_path):
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("needs GNU make (apt-get install make)")
    mk = REPO / "ci" / "kernel-ports.mk"
    (tmp_path / "Makefile").write_text(f"include {mk}\n")
    out = subprocess.run(["make", "-n", "verify-rocm"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    checks = [shlex.split(line) for line in out.splitlines() if " check " in f" {line} "]
    assert any(a[a.index("--device-compile") + 1] == "rocm" for a in checks if "--device-compile" in a), out
    assert "sync --check" in out and "status rocm" in out
    plain = subprocess.run(["make", "-n", "verify"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert "--device-compile" not in plain  # `make verify` needs no HIP compiler


def test_cli_writes_both_reports_from_one_analysis(tmp_path, capsys, monkeypatch):
    calls = []
    real = project.analyze
    monkeypatch.setattr(project, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
    sarif, js = tmp_path / "out.sarif", tmp_path / "out.json"
    code = cli.main(["check", "--registry", str(REGISTRY), "--format", "github", "--also", f"sarif={sarif}",
                     "--also", f"json={js}", "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0 and len(calls) == 1
    assert "0 error(s), 0 warning(s) in total" in out
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert json.loads(js.read_text())["summary"]["counts"] == {"error": 0, "warning": 0}


@pytest.mark.parametrize("value", ["sarif", "xml=out.x", "sarif="])
def test_bad_also_is_a_usage_error(value, capsys):
    assert cli.main(["check", "--registry", str(REGISTRY), "--also", value]) == 2
    assert "--also" in capsys.readouterr().err
