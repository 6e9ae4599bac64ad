"""The bundled sample engine builds in every configuration and matches registry.yaml.

The engine is the clean baseline that every rule's mutations start from, so it
must stay real code: each C++ translation unit compiles against the stub
headers and against the real MLX and cxx headers (the ROCm shim only in the
ROCm configuration) in both build configurations, the Rust crate checks, and the registry
(read here as plain YAML; the registry loader has its own tests) names what is
in the files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kernel_ports.frontend import headers

REPO = Path(__file__).resolve().parents[1]
REGISTRY_PATH = REPO / "registry.yaml"
REGISTRY = yaml.safe_load(REGISTRY_PATH.read_text(encoding="utf-8"))
ENGINE = (REGISTRY_PATH.parent / REGISTRY["root"]).resolve()
STUBS = REPO / "kernel_ports" / "stubs"
CRATE = ENGINE / "src" / "lib" / "engine-core"
CONFIGURATIONS = REGISTRY["compile"]["configurations"]
TRANSLATION_UNITS = sorted(p.relative_to(ENGINE).as_posix() for p in ENGINE.rglob("*.cpp"))
STUB_HEADERS = sorted(p.relative_to(STUBS).as_posix() for p in STUBS.rglob("*.h"))
BUNDLED_HEADERS = [(d, p.relative_to(d).as_posix()) for d in (STUBS, headers.ROCM_SHIM_DIR, headers.CXX_STUB_DIR)
                   for p in sorted(d.rglob("*.h"))]
REAL = headers.resolve(ENGINE)
HEADER_SETS = {"stubs": headers.resolve(ENGINE, "stubs", "stubs"), "real": REAL}
needs_real = pytest.mark.skipif(
    not (REAL.mlx.real and REAL.cxx.real),
    reason="real headers not installed: pip install 'kernel-ports[mlx]' (mlx-cpu) and apt-get install librust-cxx-dev")
BACKENDS = ("metal", "cuda", "rocm")

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")


def _compile_flags(configuration: str, header_set: str = "stubs") -> list[str]:
    compile_ = REGISTRY["compile"]
    flags = [f"-std={compile_['std']}", "-fsyntax-only", "-Wall", "-Wextra", "-Werror"]
    set_flags = HEADER_SETS[header_set].args()
    if configuration == "default" and "-include" in set_flags:
        # the default configuration builds against upstream MLX as it is: no hip_kernel forced in
        i = set_flags.index("-include")
        set_flags = set_flags[:i] + set_flags[i + 2:]
    flags += set_flags
    flags += [f"-I{ENGINE / d}" for d in compile_["include_dirs"]]
    flags += [f"-D{d}" for d in compile_["defines"]]
    flags += [f"-D{d}" for d in CONFIGURATIONS[configuration]]
    return flags


def _read(rel: str) -> str:
    return (ENGINE / rel).read_text(encoding="utf-8")


def _function_body(text: str, signature: str) -> str:
    """The text from `signature` to the first line that closes a top-level body."""
    start = text.index(signature)
    end = text.index("\n}\n", start)
    return text[start:end]


# --- the engine builds ------------------------------------------------------


def test_engine_has_translation_units():
    assert len(TRANSLATION_UNITS) >= 6, TRANSLATION_UNITS


@needs_gxx
@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
@pytest.mark.parametrize("unit", TRANSLATION_UNITS)
def test_translation_unit_compiles(unit: str, configuration: str):
    cmd = ["g++", *_compile_flags(configuration), str(ENGINE / unit)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stderr}"


@needs_gxx
@needs_real
@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_engine_compiles_against_the_real_headers(configuration: str, tmp_path: Path):
    from concurrent.futures import ThreadPoolExecutor

    cmds = [["g++", *_compile_flags(configuration, "real"), str(ENGINE / unit)] for unit in TRANSLATION_UNITS]
    with ThreadPoolExecutor(max_workers=2) as pool:  # two compilers at a time: the units are independent
        results = list(pool.map(lambda c: subprocess.run(c, capture_output=True, text=True, check=False), cmds))
    failures = [f"{' '.join(c)}\n{r.stderr}" for c, r in zip(cmds, results) if r.returncode != 0]
    assert not failures, "\n".join(failures)


@needs_gxx
@pytest.mark.parametrize("base,header", BUNDLED_HEADERS, ids=[h for _, h in BUNDLED_HEADERS])
def test_stub_header_is_self_contained(base: Path, header: str, tmp_path: Path):
    source = tmp_path / "use.cpp"
    source.write_text(f'#include "{header}"\n', encoding="utf-8")
    cmd = ["g++", "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", f"-I{base}", f"-I{STUBS}", str(source)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@needs_cargo
@pytest.mark.parametrize("extra", [[], ["--tests"]], ids=["lib", "tests"])
def test_rust_crate_checks(extra: list[str], tmp_path: Path):
    env = dict(os.environ, CARGO_TARGET_DIR=str(tmp_path / "target"), RUSTFLAGS="-Dwarnings")
    cmd = ["cargo", "check", "--offline", "--quiet", *extra, "--manifest-path", str(CRATE / "Cargo.toml")]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    assert result.returncode == 0, result.stderr


# --- the registry describes the engine ---------------------------------------


def test_registry_has_enough_kernels_over_enough_files():
    kernels = REGISTRY["kernels"]
    assert len(kernels) >= 8
    assert len({k["file"] for k in kernels}) >= 5
    assert len({k["name"] for k in kernels}) == len(kernels)
    assert len({k["table"] for k in kernels}) == len(kernels)


def test_registry_paths_exist():
    conventions = REGISTRY["conventions"]
    paths = list(REGISTRY["launchers"]) + list(conventions["helper_files"])
    paths += [k["file"] for k in REGISTRY["kernels"]]
    for seam in conventions["test_seams"]:
        paths += seam["allowed"]
    missing = [p for p in paths if not (ENGINE / p).is_file()]
    assert not missing


def test_registry_covers_the_required_shapes():
    kernels = REGISTRY["kernels"]
    slots = [tuple(k["ports"][b] is not None for b in BACKENDS) for k in kernels]
    assert (True, False, False) in slots  # Metal only
    assert (True, True, False) in slots  # Metal + CUDA
    assert (True, True, True) in slots  # all three
    assert any(k["rocm_any_wave_size"] for k in kernels)
    assert any("<GpuKernelBackend::" in (k["ports"]["metal"] or "") for k in kernels)


@pytest.mark.parametrize("kernel", REGISTRY["kernels"], ids=lambda k: k["name"])
def test_registry_kernel_matches_its_file(kernel: dict):
    text = _read(kernel["file"])
    table = _function_body(text, f"const KernelPorts& {kernel['table']}() {{")
    for backend in BACKENDS:
        accessor = kernel["ports"][backend]
        slot = re.search(rf"^\s*\.{backend} = .*$", table, re.MULTILINE)
        if accessor is None:
            assert slot is None, f"{backend} slot present in code"
        else:
            assert slot is not None, f"{backend} slot missing in code"
            assert f"return {accessor}().get();" in slot.group(0)
    marked = ".rocm_any_wave_size = true," in table
    assert marked == kernel["rocm_any_wave_size"]
    if kernel["hip_source"] is not None:
        assert kernel["rocm_any_wave_size"]
        hip_headers = "".join(p.read_text(encoding="utf-8") for p in ENGINE.rglob("*_hip.h"))
        assert f"constexpr const char* {kernel['hip_source']} =" in hip_headers
        assert kernel["hip_source"] in text  # the launcher passes it to hip_kernel
    for predicate in kernel["predicates"]:
        body = _function_body(text, f"bool {predicate}() {{")
        assert f"has_kernel_port({kernel['table']}())" in body
    for site in kernel["dispatch"]:
        assert f'select_kernel_port("{site["entry_point"]}", "{site["fallback"]}",' in text


def test_every_port_table_in_code_is_registered():
    tables = set()
    for path in ENGINE.rglob("*.cpp"):
        tables |= set(re.findall(r"^const KernelPorts& (\w+)\(\) \{$", path.read_text(encoding="utf-8"), re.MULTILINE))
    assert tables == {k["table"] for k in REGISTRY["kernels"]}


def test_hip_factory_calls_sit_behind_the_rocm_define():
    for path in ENGINE.rglob("*.cpp"):
        guarded = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#ifdef MLXCEL_BRIDGE_ROCM_BACKEND"):
                guarded = True
            elif line.startswith("#endif"):
                guarded = False
            elif "hip_kernel(" in line or ".rocm = " in line:
                assert guarded, f"{path.name}: {line.strip()}"
