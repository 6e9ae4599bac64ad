"""The Clang front end, the judge: facts from the Clang AST of each translation unit (libclang, ``clang.cindex``).

One call of :func:`parse_translation_unit` parses one file under one build
configuration (:mod:`.session`) and returns a picklable :class:`TUResult`
(:mod:`.model`): the facts whose evidence is local to the unit, and per-function
summaries that :mod:`kernel_ports.index` joins across units. The precompiled
prelude is :mod:`.prelude`; libclang and the compiler's headers are
:mod:`.toolchain`; the walk is :mod:`.walk`.
"""

from kernel_ports.frontend.clang.model import CallEdge, Conventions, FunctionInfo, ParseJob, TUResult
from kernel_ports.frontend.clang.prelude import build_prelude, prelude_path, stubs_shadowed
from kernel_ports.frontend.clang.session import GPU_SUFFIXES, build_args, parse_translation_unit
from kernel_ports.frontend.clang.toolchain import FrontEndError, builtin_include_dir, cindex, system_cxx_headers

__all__ = [
    "CallEdge", "Conventions", "FunctionInfo", "ParseJob", "TUResult",
    "build_prelude", "prelude_path", "stubs_shadowed",
    "GPU_SUFFIXES", "build_args", "parse_translation_unit",
    "FrontEndError", "builtin_include_dir", "cindex", "system_cxx_headers",
]
