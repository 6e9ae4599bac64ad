"""Small helpers shared by the front-end tests: a registry built from the
dataclasses directly, a file list like the scope resolver's, and a tiny
self-contained MLX/engine prelude for snippets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernel_ports.registry.model import (
    Backend,
    Compile,
    Configuration,
    Conventions,
    Kernel,
    Registry,
    Sources,
    TestSeam,
    Where,
)


@dataclass(frozen=True)
class SourceFile:
    path: str
    abspath: Path
    data: bytes


def make_registry(root: Path, *, configurations=(("default", ()),), kernels=(), include_dirs=(), defines=(),
                  seams=("set_rocm_port_warp_size_for_tests",), helper_files=()) -> Registry:
    root = Path(root).resolve()
    return Registry(
        path=root / "registry.yaml",
        root=root,
        sources=Sources(include=("**",), exclude=()),
        compile=Compile(
            compile_commands=None,
            std="c++20",
            defines=tuple(defines),
            include_dirs=tuple((root / d).resolve() for d in include_dirs),
            configurations=tuple(Configuration(n, tuple(d)) for n, d in configurations),
        ),
        backends={
            "metal": Backend("metal", "mlx::core::fast::metal_kernel", True),
            "cuda": Backend("cuda", "mlx::core::fast::cuda_kernel", False),
            "rocm": Backend("rocm", "mlx::core::fast::hip_kernel", False),
        },
        conventions=Conventions(
            helper_files=tuple(helper_files),
            test_seams=tuple(TestSeam(s, ("tests/**",), ()) for s in seams),
        ),
        launchers=(),
        severity={},
        kernels=tuple(
            Kernel(name=k["name"], table=k["table"], file=k.get("file", ""), dispatch=(), ports=k.get("ports", {}),
                   rocm_any_wave_size=k.get("rocm_any_wave_size", False), hip_source=None,
                   predicates=tuple(k.get("predicates", ())), severity={}, where=Where("registry.yaml", 1))
            for k in kernels
        ),
        exemptions=(),
    )


def files_under(root: Path, suffixes=(".cpp", ".h", ".cc", ".hpp", ".cu", ".hip", ".rs", ".cuh")) -> list:
    root = Path(root).resolve()
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in suffixes:
            out.append(SourceFile(p.relative_to(root).as_posix(), p, p.read_bytes()))
    return out


def write_tree(root: Path, files: dict) -> None:
    for rel, text in files.items():
        p = Path(root) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def marker_line(text: str, marker: str) -> int:
    """The line of ``text`` that carries ``// @marker``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if f"@{marker}" in line)


def index_tree(root: Path, tree: dict, **registry_options):
    """The project index of ``tree`` written under ``root`` (its ``src`` an include directory), parsed uncached."""
    from kernel_ports.index import build_index

    write_tree(root, tree)
    reg = make_registry(root, include_dirs=("src",), **registry_options)
    return build_index(reg, files_under(reg.root), jobs=1, use_cache=False)


def walked_digest(d: str, top: str = "") -> str:
    """The digest of the folder ``d/top`` as a plain walk of every file under it makes it (names relative to
    ``d``, in sorted walk order): what the cache keys take a header folder's content as."""
    import hashlib
    import os

    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(os.path.join(d, top) if top else d):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            h.update(os.path.relpath(p, d).encode() + b"\0")
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()
