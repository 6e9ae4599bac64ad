"""The Clang command line of one file under one build configuration: parsing without a build.

``-x c++ -std=<registry std>``, registry defines and include dirs, the MLX and
cxx headers resolved in :mod:`kernel_ports.frontend.headers` (real ones when
installed, else the package's stubs through ``-idirafter``; the ROCm shim),
GCC's own include directory for ``stddef.h`` and friends (the libclang
wheel ships no resource headers), keep-going and no error limit.  CUDA/HIP
sources are parsed as C++ with their keywords defined away.  With
``compile_commands.json`` the recorded flags of the file are used instead
(its include and define flags only; the resolved headers still come last).

A precompiled prelude (:mod:`.prelude`) is passed with ``-include-pch``.

A module of its own, so that the early prelude build (:mod:`kernel_ports.index.prelude`) computes a command
line without importing the walk.
"""

from __future__ import annotations

from typing import Optional

from kernel_ports.frontend import headers
from kernel_ports.frontend.clang.toolchain import builtin_include_dir

# CUDA / HIP spellings that plain C++ does not know; defined away so that the
# host code around them parses.
GPU_KEYWORD_DEFINES = (
    "__global__=",
    "__device__=",
    "__host__=",
    "__shared__=",
    "__constant__=",
    "__managed__=",
    "__forceinline__=inline",
    "__noinline__=",
    "__launch_bounds__(...)=",
    "__restrict__=",
    "__align__(x)=",
)
GPU_SUFFIXES = (".cu", ".cuh", ".hip")


def build_args(registry, configuration, relpath: str, *, compile_commands: Optional[dict] = None,
               pch: Optional[str] = None) -> list:
    """The Clang command line for one file under one configuration (without the file)."""
    comp = registry.compile
    args = ["-x", "c++", f"-std={comp.std}", "-ferror-limit=0", "-w"]
    # -w: warnings are not ours to count; errors still are.
    if relpath.lower().endswith(GPU_SUFFIXES):
        args += [f"-D{d}" for d in GPU_KEYWORD_DEFINES]
    cc_flags = (compile_commands or {}).get(relpath)
    if cc_flags:
        args += cc_flags
    for d in comp.defines:
        args.append(f"-D{d}")
    for d in configuration.defines:
        args.append(f"-D{d}")
    args.append(f"-I{registry.root}")
    for inc in comp.include_dirs:
        args.append(f"-I{inc}")
    # the MLX and cxx headers that judge the tree (real ones, or the stubs; frontend/headers.py)
    args += headers.resolve_for(registry).args(fallback_only=bool(cc_flags))
    args += ["-isystem", builtin_include_dir()]
    if pch and not cc_flags:
        args += ["-include-pch", pch]
    return args
