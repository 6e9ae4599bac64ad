"""The Clang front end, the judge: facts from the Clang AST of each translation unit (libclang, ``clang.cindex``).

One call of :func:`parse_translation_unit` parses one file under one build
configuration and returns a picklable :class:`TUResult`: the facts whose
evidence is local to the unit, and per-function summaries that
:mod:`kernel_ports.index` joins across units.

- :mod:`.toolchain` libclang's bindings (loaded once, with the cursor speed-ups) and the compiler's headers
- :mod:`.prelude` the precompiled prelude: its text, path, build and the stub API written beside it
- :mod:`.session` the Clang command line of a file, and the parse
- :mod:`.model` the parse job, the registry names it carries, and the result dataclasses
- :mod:`.context` the state a walk shares, the function being read (``Frame``), cursor helpers, ``Extractor``
- :mod:`.walk` the single traversal, and the events it gives the extractors
- extractors, one per fact family: :mod:`.tables`, :mod:`.factories`, :mod:`.selectors`, :mod:`.launches`,
  :mod:`.backend_tests`, :mod:`.predicates`, :mod:`.refusals`, :mod:`.seams`
- value-flow queries over the context: :mod:`.values`, :mod:`.template_args`, :mod:`.dtype_flow`; the
  ``switch``/``if`` guards a statement sits under: :mod:`.guards`
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
