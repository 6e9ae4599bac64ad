"""How the tree builds, inferred before a registry exists (`kernel-ports init`).

One tree-sitter read of every C-family file in scope gives three things the
Clang front end needs and a tree without its build does not say:

* include directories (:mod:`.includes`), plus those of a
  `compile_commands.json` found in the tree;
* build configurations (:mod:`.guards`): the defines that open the branches
  target constructs sit in;
* parse defines (:mod:`.defines`): empty definitions for export attributes.

Each inferred value carries the reason it was chosen; `init` prints them and
writes them into the registry as comments. `--config` and `--define` replace
the inference of their kind; `--include-dir` folders are kept first, and only
includes they do not resolve make init add folders of the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernel_ports.infer.defines import scan_specifiers
from kernel_ports.infer.guards import guarded_constructs, required_defines
from kernel_ports.infer.includes import infer_include_dirs

_COMPILE_COMMANDS_PLACES = ("compile_commands.json", "build/compile_commands.json")


@dataclass
class Inferred:
    include_dirs: list = field(default_factory=list)  # (relative or absolute path, reason)
    configurations: list = field(default_factory=list)  # (name, defines tuple, reason)
    defines: list = field(default_factory=list)  # (define, reason)
    compile_commands: Path | None = None
    notes: list = field(default_factory=list)  # what could not be inferred, for stderr and the registry

    def lines(self) -> list:
        """One line per inferred value and why, as init reports them."""
        out = []
        if self.compile_commands is not None:
            out.append(f"compile_commands: {self.compile_commands} (found in the tree)")
        out += [f"include dir {d or '.'}: {why}" for d, why in self.include_dirs]
        out += [f"configuration {name} {list(defs)}: {why}" for name, defs, why in self.configurations]
        out += [f"define {d}: {why}" for d, why in self.defines]
        return out + list(self.notes)


def find_compile_commands(root: Path) -> Path | None:
    for rel in _COMPILE_COMMANDS_PLACES:
        p = root / rel
        if p.is_file():
            return p
    return None


def _compile_commands_dirs(path: Path, root: Path) -> list:
    """The -I/-iquote/-isystem folders of a compile_commands.json (read as data, never run)."""
    from kernel_ports.index.plan import load_compile_commands

    dirs: dict = {}
    for rel, flags in load_compile_commands(path, root).items():
        i = 0
        while i < len(flags):
            f = flags[i]
            for pre in ("-isystem", "-iquote", "-I"):
                if f == pre and i + 1 < len(flags):
                    dirs.setdefault(flags[i + 1], rel)
                    i += 1
                    break
                if f.startswith(pre) and len(f) > len(pre):
                    dirs.setdefault(f[len(pre):], rel)
                    break
            i += 1
    out = []
    for d, first in dirs.items():
        try:
            shown = Path(d).resolve().relative_to(root).as_posix()
        except ValueError:
            shown = d
        out.append((shown, f"from {path.name} (first for {first})"))
    return out


def infer_build(root: Path, files, names, *, given_include_dirs=(), given_configs=False, given_defines=False,
                compile_commands: Path | None = None) -> Inferred:
    """What init infers for the tree; ``files`` are scope SourceFiles, ``names`` a WitnessNames."""
    from kernel_ports.frontend.witness import cpp_parser
    from kernel_ports.scope import is_cpp_file

    out = Inferred()
    parser = cpp_parser()
    includes_of: dict = {}
    constructs: list = []
    used: dict = {}
    declared: set = set()
    for f in files:
        if not is_cpp_file(f.path):
            continue
        tree = parser.parse(f.data)
        includes_of[f.path] = _includes(tree.root_node)
        constructs += guarded_constructs(f.path, tree.root_node, names)
        u, d = scan_specifiers(tree.root_node)
        for name, (line, uses) in u.items():
            used.setdefault(name, []).append((f.path, line, uses))
        declared |= d
    if compile_commands is None:
        out.compile_commands = find_compile_commands(root)
        compile_commands = out.compile_commands
    _include_dirs(out, root, includes_of, {f.path for f in files}, compile_commands, given_include_dirs)
    if not given_configs:
        _configurations(out, constructs)
    if not given_defines:
        for name in sorted(set(used) - declared):
            where = used[name]
            out.defines.append((f"{name}=", f"used as a declaration specifier {sum(w[2] for w in where)} time(s) in {len(where)} file(s) "
                                            f"(first {where[0][0]}:{where[0][1]}) and defined nowhere in the tree"))
    return out


def _includes(root) -> list:
    out = []
    for node in _walk_includes(root):
        p = node.child_by_field_name("path")
        if p is not None:
            text = p.text.decode("utf-8", "replace")
            out.append((text.strip('<>"'), p.type == "system_lib_string"))
    return out


def _walk_includes(root):
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "preproc_include":
            yield node
            continue
        if node.type in ("function_definition", "compound_statement", "comment"):
            continue
        stack.extend(node.children)


def _relative_dirs(root: Path, dirs) -> list:
    out = []
    for d in dirs:
        p = Path(d) if Path(d).is_absolute() else root / d
        try:
            out.append(p.resolve().relative_to(root.resolve()).as_posix())
        except ValueError:
            continue  # outside the tree: it cannot hold a project header
    return out


def _include_dirs(out: Inferred, root: Path, includes_of: dict, known: set, compile_commands, given_dirs) -> None:
    given = [("" if g == "." else g) for g in _relative_dirs(root, given_dirs)]
    outside = [Path(d) for d in given_dirs if Path(d).is_absolute()]
    if compile_commands is not None:
        for d, why in _compile_commands_dirs(Path(compile_commands), root):
            out.include_dirs.append((d, why))
            if Path(d).is_absolute():
                outside.append(Path(d))
            else:
                given.append(d)
    chosen, missing = infer_include_dirs(includes_of, known, tuple(given))
    out.include_dirs += [(c.path, c.reason()) for c in chosen]
    missing = {(i, s) for i, s in missing if not any((d / s).is_file() for d in outside)}
    if missing:
        spelled = sorted({s for _, s in missing})
        out.notes.append(f"{len(missing)} quoted include(s) of {len(spelled)} header(s) are in no folder of the tree "
                         f"(MLX's or other headers from outside it, or generated ones): "
                         + ", ".join(spelled[:6]) + (" ..." if len(spelled) > 6 else ""))


def _configurations(out: Inferred, constructs: list) -> None:
    groups: dict = {}  # defines -> [constructs]
    unread = []
    for c in constructs:
        if c.unreadable:
            unread.append(c)
            continue
        defs = required_defines(c.needs)
        if defs:
            groups.setdefault(defs, []).append(c)
    taken = {"default"}
    for defs in [d for d in groups if any(_reserved(x) for x in d)]:
        # `__APPLE__`, `__CUDACC__`, `_WIN32`: the compiler's to define; defining one on this machine would read
        # another platform's system headers
        c = groups.pop(defs)[0]
        out.notes.append(f"{', '.join(defs)} (reserved for the compiler) guards a target construct at {c.path}:{c.line}; "
                         "no configuration inferred for it")
    for defs, members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        backends = sorted({c.backend for c in members if c.backend and c.kind == "factory_call"}) \
            or sorted({c.backend for c in members if c.backend})
        base = backends[0] if len(backends) == 1 else "_".join(backends) if backends else \
            defs[0].split("=")[0].lower()
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        kinds: dict = {}
        for c in members:
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
        first = members[0]
        said = ", ".join(f"{v} {k.replace('_', ' ')}(s)" for k, v in sorted(kinds.items()))
        why = f"guards {said} (first {first.path}:{first.line})"
        if backends and base in backends:
            why += f"; named after the {base} factory it enables" if any(c.kind == "factory_call" for c in members) \
                else f"; named after the .{base} slot it enables"
        out.configurations.append((name, defs, why))
    if unread:
        c = unread[0]
        out.notes.append(f"{len(unread)} target construct(s) sit behind a condition init does not read "
                         f"(first {c.path}:{c.line}: `#if {c.unreadable}`); add a --config for it if a build enables it")


def _reserved(define: str) -> bool:
    name = define.split("=", 1)[0]
    return name.startswith("__") or (len(name) > 1 and name[0] == "_" and name[1].isupper())


def with_inferred(registry, inferred: Inferred):
    """The registry with the inferred compile settings added to what the flags gave."""
    import dataclasses

    from kernel_ports.registry.model import Configuration

    comp = registry.compile
    dirs = tuple(comp.include_dirs) + tuple(Path(d) if Path(d).is_absolute() else registry.root / d
                                            for d, _ in inferred.include_dirs)
    confs = tuple(comp.configurations) + tuple(Configuration(name, defs) for name, defs, _ in inferred.configurations)
    new = dataclasses.replace(
        comp,
        include_dirs=tuple(dict.fromkeys(dirs)),
        defines=tuple(comp.defines) + tuple(d for d, _ in inferred.defines),
        configurations=confs,
        compile_commands=comp.compile_commands or (inferred.compile_commands.resolve()
                                                   if inferred.compile_commands else None),
    )
    return dataclasses.replace(registry, compile=new)


def registry_comments(registry, inferred: Inferred) -> dict:
    """Reasons keyed as the registry renders the values: for comments next to them."""
    def shown(d):
        p = Path(d) if Path(d).is_absolute() else registry.root / d
        try:
            return p.relative_to(registry.root).as_posix() or "."
        except ValueError:
            return str(p)

    return {
        "include_dirs": {shown(d): why for d, why in inferred.include_dirs},
        "configurations": {name: why for name, _, why in inferred.configurations},
        "defines": {d: why for d, why in inferred.defines},
        "notes": list(inferred.notes),
    }
