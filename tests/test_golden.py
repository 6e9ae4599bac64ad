"""Golden outputs: the facts JSON and `check --format json` of the sample engine, of a copy with findings of
several rules, and of the generated benchmark tree, byte for byte.

They hold the front end and the index to what they produced when the goldens were written, so a change that
only moves code (a refactor) cannot change a fact or a verdict unnoticed. Every run uses the bundled stub
headers, so the bytes do not depend on which MLX or cxx headers the machine has; the only thing replaced
before comparing are the absolute paths of the tree, its registry and the bundled stubs, which differ per checkout,
each file's parse time in the facts, and the name of the libclang that parsed.

Each tree is judged twice, by the libclang wheel and by the newest system libclang of a verified major
(``toolchain.VERIFIED_SYSTEM_MAJORS``; skipped, naming the Debian package, where the machine has none), each in a
process of its own (a process loads one libclang), against the same goldens: a system libclang is chosen on its
own only while its facts and verdicts are the wheel's, byte for byte.

A deliberate change of output rewrites them: `KERNEL_PORTS_UPDATE_GOLDEN=1 pytest tests/test_golden.py`,
and the diff of `tests/golden/` is then part of the review.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_ports.frontend.clang import toolchain
from tests.mutate import Mutation, engine_copy

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("KERNEL_PORTS_UPDATE_GOLDEN") == "1"
STUB_HEADERS = "  mlx_headers: stubs\n  cxx_headers: stubs\n"
LAUNCHER = "src/lib/mlx-cpp/turbo/fused_norm.cpp"


def _stub_registry(registry: Path, out: Path) -> Path:
    """The registry with its header settings pinned to the bundled stubs."""
    text = registry.read_text(encoding="utf-8")
    if "\ncompile:\n" not in text or "  mlx_headers:" in text:
        raise AssertionError(f"{registry}: expected a compile section without header settings")
    text = text.replace("\ncompile:\n", "\ncompile:\n" + STUB_HEADERS, 1)
    out.write_text(text, encoding="utf-8")
    return out


def _generated_tree(base: Path) -> tuple:
    spec = importlib.util.spec_from_file_location("kp_bench_generate", REPO / "benchmarks" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    registry = Path(generate.generate(base / "tree", 40, 600, 300_000, 170_000))
    return registry, registry.parent / "engine"


def _findings_tree(base: Path) -> tuple:
    copy = engine_copy(base / "findings",
                       Mutation(LAUNCHER, '{{"T", x.dtype()}, {"N", n}}', '{{"N", n}}'),
                       Mutation("src/lib/mlx-cpp/turbo/rope.cpp", "  return has_kernel_port(rope_ports());\n",
                                "  return mlx::core::metal::is_available();\n"))
    (copy.root / "src/lib/mlx-cpp/turbo/legacy.cpp").write_bytes(b"// caf\xe9\nint legacy;\n")
    return copy.registry_path, copy.root


TREES = {
    "sample": lambda base: (REPO / "registry.yaml", REPO / "cpp_fixtures" / "engine"),
    "findings": _findings_tree,
    "bench": _generated_tree,
}


def _normalised(text: str, root: Path, base: Path) -> str:
    text = text.replace(root.resolve().as_uri() + "/", "<ROOT_URI>/").replace(str(root.resolve()), "<ROOT>")
    text = text.replace(str(base.resolve()), "<BASE>").replace(str(base), "<BASE>")
    text = re.sub(r'"[^"]*?/kernel_ports/headers/', '"<STUBS>/', text.replace(str(REPO), "<REPO>"))
    text = re.sub(r'"seconds": [0-9.e-]+', '"seconds": "<time>"', text)  # a file's parse time (facts only)
    text = re.sub(r'"libclang": "[^"]*"', '"libclang": "<libclang>"', text)
    text = re.sub(r"parsed by libclang [^\"]*?\((?:the libclang wheel|system: [^)]*)\)", "parsed by <libclang>", text)
    return _without_header_digest(text)


def _without_header_digest(text: str) -> str:
    """The header set's digest hashes the stub directories' absolute paths, so it differs per checkout."""
    return re.sub(r'"digest": "[0-9a-f]{16}"', '"digest": "<digest>"', text)


def _system_libclang() -> str:
    verified = [path for major, path in toolchain.system_libclangs() if major in toolchain.VERIFIED_SYSTEM_MAJORS]
    if not verified:
        pytest.skip(f"no system libclang of a verified major (Debian 12: apt-get install {toolchain.SYSTEM_PACKAGE})")
    return verified[0]


LIBCLANGS = {"wheel": lambda: "wheel", "system": _system_libclang}


@pytest.fixture(scope="module", params=[(t, lib) for t in sorted(TREES) for lib in LIBCLANGS], ids="-".join)
def outputs(request, tmp_path_factory):
    """{command: normalised bytes} for one tree and one libclang, cold and into a cache of its own."""
    tree, lib = request.param
    setting = LIBCLANGS[lib]()
    base = tmp_path_factory.mktemp(f"golden-{tree}-{lib}")
    registry, root = TREES[tree](base)
    pinned = _stub_registry(registry, base / "registry.yaml")
    env = dict(os.environ, KERNEL_PORTS_CACHE_DIR=str(base / "cache"), KERNEL_PORTS_LIBCLANG=setting,
               PYTHONPATH=str(REPO))
    got = {}
    for command in ("facts", "check"):
        target = base / f"{command}.json"
        argv = [command, "--registry", str(pinned), "--root", str(root), "--format", "json", "--output", str(target)]
        done = subprocess.run([sys.executable, "-m", "kernel_ports", *argv], env=env, cwd=REPO, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode in (0, 1), (command, done.returncode, done.stderr[-2000:])
        text = target.read_text(encoding="utf-8")
        assert (f"libclang {toolchain.wheel_libclang().version} (the libclang wheel)" if lib == "wheel" else f"system: {setting}") in text, \
            f"{command} does not name the libclang that parsed"
        got[command] = _normalised(text, root, base)
    return tree, lib, got


@pytest.mark.parametrize("command", ["facts", "check"])
def test_output_matches_the_golden_file(outputs, command):
    tree, lib, got = outputs
    golden = GOLDEN / f"{tree}.{command}.json"
    if UPDATE and lib == "wheel":  # the goldens are the wheel's; the system libclang is held to them
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(got[command], encoding="utf-8")
    assert golden.exists(), f"{golden} missing: write it with KERNEL_PORTS_UPDATE_GOLDEN=1"
    want = _without_header_digest(golden.read_text(encoding="utf-8"))
    assert got[command] == want, f"{tree} {command} by the {lib} libclang differs from {golden.name}"


def test_the_goldens_hold_something_to_get_wrong():
    """The control: the goldens are not empty shells — tables, launches and findings are in them."""
    import json
    sample = json.loads((GOLDEN / "sample.facts.json").read_text(encoding="utf-8"))
    bench = json.loads((GOLDEN / "bench.facts.json").read_text(encoding="utf-8"))
    findings = json.loads((GOLDEN / "findings.check.json").read_text(encoding="utf-8"))
    assert len(sample["port_tables"]) == 8
    assert len(bench["port_tables"]) > 40
    assert {"KP107", "KP201", "KP901"} <= {f["rule"] for f in findings["findings"]}
