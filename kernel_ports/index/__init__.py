"""The project index: every fact of the tree, the include graph and the call graph.

``build_index(registry, files)`` (:mod:`.build`) runs the front ends and joins their results:

1. the witness (tree-sitter) reads every C-family file, Rust files go to the
   Rust front end (:mod:`.scan`);
2. the files Clang must parse are chosen from the witness's candidates and its
   include graph (a header with candidates brings in the translation units
   that include it; a header nobody includes is parsed on its own), once per
   build configuration whose defines the file or a project header it includes
   mentions (the default configuration always) (:mod:`.plan`);
3. the parses run in a worker pool, each with a timeout, so a crash or a hang
   is a KP901 record (``unanalyzable``) rather than the end of the run
   (:mod:`.pool`, with the precompiled prelude of :mod:`.prelude`); the
   walk leaves unread the bodies of free functions that nothing the checker
   follows can reach or be reached from by name (:mod:`kernel_ports.frontend.focus`);
4. the per-translation-unit results are merged (:mod:`.merge`): a fact seen in several
   translation units or configurations is kept once with the union of its
   configurations; the joins (:mod:`.join`: slot -> accessor -> holder -> helpers -> factory
   calls with constant propagation; invocation -> selector call -> tables;
   predicate -> tables), what each factory call compiles (:mod:`.compiled`) and the graphs
   are rebuilt on every run;
5. witness candidates Clang did not confirm become ``Unconfirmed`` records
   (KP902).

Per-file results are cached (:mod:`kernel_ports.cache.units`); the joins never are. Rules read the
:class:`~.project_index.ProjectIndex`.
"""

__all__ = ["ProjectIndex", "build_index", "load_compile_commands"]

_WHERE = {"build_index": "build", "load_compile_commands": "plan", "ProjectIndex": "project_index"}


def __getattr__(name):
    # imported on first use (PEP 562), so that the CLI can start the prelude build (:mod:`.prelude`) before the
    # rest of the index, networkx among it, is imported: a cold run waits for that build first
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
