"""The Clang front end, the judge: facts from the Clang AST of each translation unit (libclang, ``clang.cindex``).

One call of :func:`parse_translation_unit` parses one file under one build
configuration and returns a picklable :class:`TUResult`: the facts whose
evidence is local to the unit, and per-function summaries that
:mod:`kernel_ports.index` joins across units.

- :mod:`.toolchain` libclang's bindings (loaded once, with the cursor speed-ups) and the compiler's headers
- :mod:`.prelude` the precompiled prelude: its text, path, build and the stub API written beside it
- :mod:`.args` the Clang command line of a file
- :mod:`.session` the parse, and the blanks it gives Clang
- :mod:`.model` the parse job, the registry names it carries, and the result dataclasses
- :mod:`.context` the state a walk shares, the function being read (``Frame``), cursor helpers, ``Extractor``
- :mod:`.walk` the single traversal, and the events it gives the extractors
- extractors, one per fact family: :mod:`.tables`, :mod:`.factories`, :mod:`.selectors`, :mod:`.launches`,
  :mod:`.backend_tests`, :mod:`.predicates`, :mod:`.refusals`, :mod:`.seams`
- value-flow queries over the context: :mod:`.values`, :mod:`.template_args`, :mod:`.dtype_flow`; the
  ``switch``/``if`` guards a statement sits under: :mod:`.guards`
"""

import importlib

# What the package offers, and the module each comes from. Imported on first use (PEP 562) so that the early
# prelude build, which needs only ``args``, ``prelude`` and ``toolchain``, does not wait for the walk and the
# extractors to be imported: a cold run waits for that build before any parse.
_HOMES = {
    "CallEdge": "model", "Conventions": "model", "FunctionInfo": "model", "ParseJob": "model", "TUResult": "model",
    "build_prelude": "prelude", "prelude_path": "prelude", "stubs_shadowed": "prelude",
    "GPU_SUFFIXES": "args", "build_args": "args",
    "parse_translation_unit": "session",
    "FrontEndError": "toolchain", "builtin_include_dir": "toolchain", "cindex": "toolchain",
    "system_cxx_headers": "toolchain", "libclang": "toolchain", "Libclang": "toolchain",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # looked up once
    return value
