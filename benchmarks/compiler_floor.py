"""The compiler's own pass over the units a check parses: `g++ -fsyntax-only` command lines, one per parse.

Reads the facts JSON of a check (``kernel-ports facts --format json``): every translation unit Clang parsed, with
its configuration. Each gets the command line the Clang front end builds for it (the same ``-std``, defines,
include directories, header set and forced includes), with what only Clang reads taken out (``-ferror-limit``,
the compiler's built-in header directory, which g++ finds itself), ``-fsyntax-only`` added. Prints a JSON list
of command lines. Run with the ``kernel_ports`` package being timed on the path (run.py does).

    python benchmarks/compiler_floor.py REGISTRY FACTS_JSON [--root ROOT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def commands(registry_path: str, facts: dict, root: str | None = None) -> list:
    from kernel_ports.frontend import clang
    from kernel_ports.registry.load import load_registry

    registry = load_registry(registry_path, root)
    configurations = {c.name: c for c in registry.compile.configurations}
    builtin = clang.builtin_include_dir()
    out = []
    for f in facts["files"]:
        if not f["parsed"] or f.get("translation_unit"):
            continue  # a header read through a unit is the unit's parse
        args = clang.build_args(registry, configurations[f["configuration"]], f["path"])
        kept, skip = [], False
        for i, a in enumerate(args):
            if skip:
                skip = False
            elif a.startswith("-ferror-limit"):
                continue
            elif a == "-isystem" and i + 1 < len(args) and args[i + 1] == builtin:
                skip = True
            else:
                kept.append(a)
        out.append(["g++", "-fsyntax-only", *kept, str(Path(registry.root) / f["path"])])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("registry")
    parser.add_argument("facts")
    parser.add_argument("--root", default=None)
    args = parser.parse_args(argv)
    print(json.dumps(commands(args.registry, json.loads(Path(args.facts).read_text(encoding="utf-8")), args.root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
