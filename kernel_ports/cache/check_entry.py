"""The whole-check entry: a check whose every input is unchanged answers from one cache read.

A ``check`` depends on the tool (its own source), the registry's text, the
command line (``--root``, ``--select``, ``--ignore``, ``--compile-commands``
and that file's text), the environment variables that move headers, the
in-scope files' contents, and the headers outside the tree that Clang reads.
The entry's file name is a hash of the first four; the entry records the rest:
the scope settings the registry gave (root, include and exclude globs, the
limits, ``--limit`` overrides applied), each in-scope file's content hash, and a signature (size, modification time, inode)
of each outside include directory and of libclang. A lookup lists the scope
again exactly as :func:`kernel_ports.scope.resolve_scope` does, hashes the
files and compares; if anything differs, or the entry is missing or damaged
(:mod:`kernel_ports.cache.format`), it is a miss and the check runs in full, every
per-file entry still serving. The scope a miss listed is the one the check then
judges (:func:`scope_for`): the registry is unchanged (its text is in the key),
so its settings are the entry's, and the tree is listed and read once.

This module imports only the scope listing, the findings and the cache format:
what a warm run with nothing changed needs, and nothing it does not (no
registry loader, no front end, no graphs).
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path
from types import SimpleNamespace

from kernel_ports.cache import format as cachefmt

ENTRY_DIR = "check"
# variables that change which headers a parse reads, or make a parse fail on purpose (a test hook)
ENV_INPUTS = ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH", "MLX_INCLUDE_DIR", "CXX_INCLUDE_DIR", "CXXBRIDGE_DIR",
              "KERNEL_PORTS_LIBCLANG")
NO_ENTRY_ENV = ("KERNEL_PORTS_FE_FAULT",)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=1)
def tool_digest() -> str:
    """The package's own files (code, schema, stub headers, rule texts): another build of the tool is another key.
    Taken once a process (the check entry's lookup and store and the device entry all key by it): the code that
    runs is the code imported when the run began."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package, not this folder of it
    h = hashlib.sha256(sys.version.encode())
    for d, dirs, files in sorted(os.walk(here)):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for name in sorted(files):
            if name.endswith((".py", ".json", ".h", ".md", ".hpp")):
                p = os.path.join(d, name)
                h.update(os.path.relpath(p, here).encode())
                with open(p, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


def _key(args) -> str | None:
    """The entry's key from the command line and what it names, or None when no entry may answer."""
    if getattr(args, "no_cache", False) or any(os.environ.get(v) for v in NO_ENTRY_ENV):
        return None
    try:
        registry = Path(args.registry or "registry.yaml").resolve()
        parts = [cachefmt.FORMAT, tool_digest(), str(registry), _sha(registry.read_bytes()),
                 str(Path(args.root).resolve()) if args.root else "", repr(args.select), repr(args.ignore),
                 repr(getattr(args, "limit", [])), repr(getattr(args, "device_compile", None))]
        if args.compile_commands:
            cc = Path(args.compile_commands).resolve()
            parts += [str(cc), _sha(cc.read_bytes())]
        parts += [f"{v}={os.environ.get(v, '')}" for v in ENV_INPUTS]
    except OSError:
        return None
    return _sha("\0".join(parts).encode())


def cache_dir_of(args) -> Path:
    """The cache directory a command line names: --cache-dir, else $KERNEL_PORTS_CACHE_DIR or the default."""
    return Path(args.cache_dir) if getattr(args, "cache_dir", None) else cachefmt.default_cache_dir()


def _path(args, key: str) -> Path:
    return cache_dir_of(args) / cachefmt.CACHE_SUBDIR / ENTRY_DIR / f"{key}.json"


def _stat_sig(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


# (the scope settings, the scope) the last lookup of this process listed, for the check that follows a miss
_listed: list = []


def _scope_state(entry: dict) -> tuple:
    """What the scope listing gives now, with the settings ``entry`` was made with: (path, content hash) of each
    file, the listing's own findings, the number of files listed."""
    from kernel_ports.scope import resolve_scope

    settings = _settings(entry["root"], entry["include"], entry["exclude"], entry["limits"])
    root, include, exclude, limits = settings
    stand_in = SimpleNamespace(root=Path(root), sources=SimpleNamespace(include=list(include), exclude=list(exclude)),
                               limits=dict(limits))
    scope = resolve_scope(stand_in)
    _listed[:] = [(settings, scope)]
    return _scope_digest(scope)


def _scope_digest(scope) -> tuple:
    return (tuple((f.path, _sha(f.data)) for f in scope.files), tuple((f.path, f.message) for f in scope.findings),
            scope.listed)


def _settings(root, include, exclude, limits) -> tuple:
    """Scope settings, comparable: a stored entry's and a registry's are equal when they list the same scope."""
    if type(limits) is not dict or not all(type(k) is str and type(v) in (int, float) for k, v in limits.items()):
        raise TypeError("limits")
    return str(root), tuple(include), tuple(exclude), tuple(sorted(limits.items()))


def scope_for(registry):
    """The scope this process's last lookup listed, when ``registry``'s settings are the ones it was listed with
    (it then equals ``resolve_scope(registry)``), else None; handed out once."""
    if not _listed:
        return None
    settings, scope = _listed.pop()
    try:
        wanted = _settings(registry.root, registry.sources.include, registry.sources.exclude, dict(registry.limits))
    except TypeError:
        return None
    return scope if wanted == settings else None


def _miss(why: str):
    """None, saying why on stderr when KERNEL_PORTS_DEBUG is set (a check that should have answered from its
    entry and did not can then be told apart from one whose inputs changed)."""
    if os.environ.get("KERNEL_PORTS_DEBUG"):
        print(f"kernel-ports: check entry: {why}", file=sys.stderr)
    return None


def lookup(args):
    """(findings, summary) of an earlier check with the same inputs, or None."""
    from kernel_ports.scope.limits import InputError

    _listed.clear()
    key = _key(args)
    if key is None:
        return _miss("not used (--no-cache, a test hook, or an input that cannot be read)")
    entry = cachefmt.read_entry(_path(args, key), key)
    try:
        if type(entry) is not dict or entry.get("kind") != "check":
            return _miss("none for these inputs (or unreadable)")
        changed = [p for p, sig in entry["outside"] if _stat_sig(p) != sig]
        if changed:
            return _miss(f"{changed[0]} changed")
        if _scope_state(entry) != entry["scope"]:
            return _miss("a file in scope changed, appeared or went away")
        findings, summary = entry["findings"], entry["summary"]
    except InputError:
        # the tree grew past a limit since: the check says so, as it would without an entry
        return _miss("the scope is over a limit now")
    except (OSError, KeyError, TypeError, ValueError) as exc:
        return _miss(f"unusable ({type(exc).__name__})")
    from kernel_ports.findings import Finding

    if type(findings) is not list or not all(type(f) is Finding for f in findings) or type(summary) is not dict:
        return _miss("unusable (not findings)")
    return findings, summary


def outside_inputs(registry, device: bool = False) -> tuple:
    """Paths outside the tree whose change can change a parse: include directories, compiler built-ins, libclang."""
    from kernel_ports.frontend import clang

    root = Path(registry.root).resolve()
    paths = {"/usr/include", "/usr/local/include"}
    for var in ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH"):
        paths |= {d for d in os.environ.get(var, "").split(os.pathsep) if d}
    try:
        paths.add(clang.system_cxx_headers())
    except clang.FrontEndError:
        pass
    # where `compile.mlx_headers/cxx_headers: auto` looks (frontend/headers.py): installing mlx-cpu or a cxx crate
    # changes which headers judge the tree
    from kernel_ports.frontend import headers

    paths |= set(headers.resolution_inputs(root))
    for conf in registry.compile.configurations:
        try:
            args = clang.build_args(registry, conf, "unit.cpp")
        except clang.FrontEndError:
            continue
        it = iter(args)
        for a in it:
            d = None
            if a in ("-I", "-isystem", "-idirafter", "-include", "-iquote"):
                d = next(it, None)
            elif a.startswith("-I") and len(a) > 2:
                d = a[2:]
            if d and not Path(d).resolve().is_relative_to(root):
                paths.add(str(Path(d).resolve()))
    try:
        # the library that parses, and where a system one is installed or removed (/usr/lib/llvm-N/), which can
        # change the one chosen
        paths |= {os.path.realpath(clang.libclang().path), "/usr/lib"}
    except clang.FrontEndError:
        pass
    try:
        import clang

        paths.add(str(Path(clang.__file__).resolve().parent))
        native = Path(clang.__file__).resolve().parent / "native"
        paths |= {str(p) for p in native.glob("libclang*")}
    except ImportError:
        pass
    if registry.compile.device_rocm is not None or device:
        from kernel_ports.frontend.device import compiler

        # the HIP compilers a device build may find: installing, removing or upgrading one changes the builds
        paths |= set(compiler.candidates(registry.compile.hip_compiler))
    return tuple((p, _stat_sig(p)) for p in sorted(paths))


def store(args, registry, result):
    """Record a full check's result under its inputs: True when stored, False when the cache folder would not take
    it, None when no entry is kept (the cache is off or an input cannot be read)."""
    key = _key(args)
    if key is None or result.scope is None:
        return None
    scope = result.scope
    entry = {
        "kind": "check",
        "root": str(registry.root),
        "include": tuple(registry.sources.include),
        "exclude": tuple(registry.sources.exclude),
        "limits": dict(registry.limits),
        "scope": _scope_digest(scope),
        "outside": outside_inputs(registry, getattr(args, "device_compile", None) is not None),
        "findings": list(result.findings),
        "summary": result.summary,
    }
    if not cachefmt.write_entry(_path(args, key), key, entry):
        _miss("not stored")
        return False
    return True
