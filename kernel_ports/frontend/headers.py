"""Which MLX and cxx headers judge the tree: resolved in one place, for every build configuration.

Order (SPEC §5): a file with ``compile_commands.json`` flags is parsed with
them, and what is resolved here only backs them up (``-idirafter``); every
other file reads the set resolved from the registry's ``compile.mlx_headers``
and ``compile.cxx_headers``: ``auto`` (the default), ``stubs`` or a directory.

``auto`` for MLX, first found wins:

1. ``MLX_INCLUDE_DIR`` — the user said so;
2. an MLX source tree in the engine's own build folders (CMake's
   ``_deps/mlx-src``, also under a Rust crate's ``target/*/build/*/out``) —
   the MLX the engine pins and builds with;
3. the ``include/`` of an installed ``mlx`` package (``mlx-cpu`` on Linux,
   ``mlx``/``mlx-metal`` on macOS), found with ``importlib.util.find_spec``,
   which does not import MLX;
4. the bundled stubs (``kernel_ports/stubs``), the verified fallback.

``auto`` for ``rust/cxx.h``: cxx-build's ``target/cxxbridge`` in the tree, a
cargo registry (``$CARGO_HOME/registry/src/*/cxx-*``, the version the tree's
``Cargo.lock`` pins first), Debian's ``librust-cxx-dev``
(``/usr/share/cargo/registry/cxx-*``), else the bundled stub. A crate ships
its header as ``include/cxx.h``; a bundled one-line ``rust/cxx.h`` forwards to
it through a define, so nothing is written anywhere.

The ROCm shim (``kernel_ports/headers/rocm_shim``): upstream MLX has no
``fast::hip_kernel`` and no ``mlx/backend/rocm/``. The shim's ``rocm.h`` sits
on an ``-idirafter`` path, so a real one always wins; its ``hip_kernel``
declaration is force-included only when the resolved ``mlx/fast.h`` does not
declare one.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

PACKAGE_DIR = Path(__file__).resolve().parent.parent
STUBS_DIR = PACKAGE_DIR / "stubs"
BUNDLED = PACKAGE_DIR / "headers"
ROCM_SHIM_DIR = BUNDLED / "rocm_shim"
HIP_KERNEL_SHIM = ROCM_SHIM_DIR / "kernel_ports" / "hip_kernel.h"
CXX_STUB_DIR = BUNDLED / "cxx_stub"
CXX_FORWARD_DIR = BUNDLED / "cxx_forward"
CXX_FORWARD_MACRO = "KERNEL_PORTS_CXX_H"

# where an engine's build leaves an MLX source tree (relative to the root, at a few depths)
_MLX_TREE_PATTERNS = ("build*/_deps/mlx-src", "cmake-build-*/_deps/mlx-src", "_deps/mlx-src",
                      "target/*/build/*/out/build/_deps/mlx-src")
_CXXBRIDGE_PATTERNS = ("target/cxxbridge", "target/*/cxxbridge")
_DEPTHS = ("", "*/", "*/*/", "*/*/*/")


@dataclass(frozen=True)
class Source:
    """One resolved header source: what it is, for the summary, and the flags that put it on the include path."""

    kind: str  # "stubs" | "package" | "env" | "tree" | "path" | "cargo" | "debian" | "cxxbridge"
    label: str  # e.g. "mlx-cpu 0.32.4 at /…/mlx/include", "stubs"
    directory: str  # the directory searched for "mlx/..." or "rust/cxx.h"
    forward_to: Optional[str] = None  # a crate's include/cxx.h that the bundled rust/cxx.h forwards to

    @property
    def real(self) -> bool:
        return self.kind != "stubs"


@dataclass(frozen=True)
class HeaderSet:
    mlx: Source
    cxx: Source
    hip_shim: bool  # the resolved mlx/fast.h declares no hip_kernel: the shim's declaration is force-included
    rocm_shim: bool  # the resolved MLX has no mlx/backend/rocm/rocm.h: the shim's is reachable
    digest: str

    @property
    def description(self) -> str:
        """One line for the summary: which headers judged the tree."""
        shim = [n for n, on in (("fast::hip_kernel", self.hip_shim), ("mlx/backend/rocm", self.rocm_shim)) if on]
        text = f"MLX headers: {self.mlx.label}; rust/cxx.h: {self.cxx.label}"
        return text + (f"; ROCm shim: {', '.join(shim)}" if shim else "")

    def as_dict(self) -> dict:
        return {"mlx": self.mlx.label, "cxx": self.cxx.label, "rocm_shim": self.hip_shim or self.rocm_shim,
                "description": self.description, "digest": self.digest}

    def args(self, fallback_only: bool = False) -> list:
        """Include flags after the project's own (-I) ones. With ``fallback_only`` (a compile_commands.json entry
        decides the headers) every directory is searched last and no declaration is forced in."""
        out = []
        for src in (self.mlx, self.cxx):
            if src.forward_to:
                out += ["-idirafter", src.directory, f"-D{CXX_FORWARD_MACRO}=\"{src.forward_to}\""]
            elif src.real and not fallback_only:
                out += ["-isystem", src.directory]
            else:
                out += ["-idirafter", src.directory]
        if self.rocm_shim or self.hip_shim:
            out += ["-idirafter", str(ROCM_SHIM_DIR)]
        if self.hip_shim and not fallback_only:
            out += ["-include", str(HIP_KERNEL_SHIM)]
        return out


class HeaderError(Exception):
    """A registry-named header directory that does not hold what it should (reported as a registry error)."""


def resolve(root, mlx_setting: str = "auto", cxx_setting: str = "auto") -> HeaderSet:
    """The header set for a tree; memoised on everything it reads (settings, root, the environment)."""
    env = tuple(os.environ.get(v, "") for v in ("MLX_INCLUDE_DIR", "CARGO_HOME", "HOME"))
    return _resolve(str(Path(root).resolve()), str(mlx_setting or "auto"), str(cxx_setting or "auto"), env)


def resolve_for(registry) -> HeaderSet:
    comp = registry.compile
    return resolve(registry.root, getattr(comp, "mlx_headers", "auto"), getattr(comp, "cxx_headers", "auto"))


_RESOLVED_DIRS: set = set()  # the directories of every set resolved in this process: never "shadowing" themselves


@lru_cache(maxsize=16)
def _resolve(root: str, mlx_setting: str, cxx_setting: str, env: tuple) -> HeaderSet:
    mlx = _resolve_mlx(Path(root), mlx_setting, env[0])
    cxx = _resolve_cxx(Path(root), cxx_setting, env[1] or os.path.join(env[2] or os.path.expanduser("~"), ".cargo"))
    fast = Path(mlx.directory) / "mlx" / "fast.h"
    hip_shim = not _declares(fast, "hip_kernel")
    rocm_shim = not (Path(mlx.directory) / "mlx" / "backend" / "rocm" / "rocm.h").is_file()
    h = hashlib.sha256()
    for src in (mlx, cxx):
        h.update(f"{src.kind}|{src.directory}|{src.forward_to}\0".encode())
        h.update(_dir_digest(src.directory, "mlx" if src is mlx else "rust").encode())
        if src.forward_to:
            h.update(_file_digest(src.forward_to).encode())
    for d in (ROCM_SHIM_DIR, CXX_FORWARD_DIR):
        h.update(_dir_digest(str(d), "").encode())
    h.update(f"{hip_shim}|{rocm_shim}".encode())
    _RESOLVED_DIRS.update(os.path.normpath(src.directory) for src in (mlx, cxx))
    return HeaderSet(mlx=mlx, cxx=cxx, hip_shim=hip_shim, rocm_shim=rocm_shim, digest=h.hexdigest()[:16])


def _declares(path: Path, name: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    return re.search(rf"\b{re.escape(name)}\s*\(", text) is not None


# ------------------------------------------------------------------ MLX


def is_mlx_include(d) -> bool:
    return d is not None and (Path(d) / "mlx" / "mlx.h").is_file() and (Path(d) / "mlx" / "fast.h").is_file()


def _resolve_mlx(root: Path, setting: str, env_dir: str) -> Source:
    stubs = Source("stubs", "stubs", str(STUBS_DIR))
    if setting == "stubs":
        return stubs
    if setting != "auto":
        if not is_mlx_include(setting):
            raise HeaderError(f"compile.mlx_headers: {setting} holds no mlx/mlx.h and mlx/fast.h")
        return Source("path", f"{_mlx_version(setting)} at {setting}".strip(), setting)
    if env_dir:
        if is_mlx_include(env_dir):
            return Source("env", f"{_mlx_version(env_dir)} at {env_dir} (MLX_INCLUDE_DIR)", env_dir)
    for d in _tree_candidates(root, _MLX_TREE_PATTERNS):
        if is_mlx_include(d):
            return Source("tree", f"{_mlx_version(d)} at {d} (the engine's build tree)", d)
    pkg = _package_include()
    if pkg is not None:
        d, dist = pkg
        return Source("package", f"{dist} at {d}", d)
    return stubs


def _tree_candidates(root: Path, patterns) -> list:
    out = []
    for depth in _DEPTHS:
        for pat in patterns:
            out += sorted(glob.glob(str(root / (depth + pat))))
    return out


def _mlx_version(d) -> str:
    """``MLX 0.32.4`` from the include directory's mlx/version.h."""
    try:
        text = (Path(d) / "mlx" / "version.h").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "MLX"
    parts = [re.search(rf"#define\s+MLX_VERSION_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return "MLX " + ".".join(m.group(1) for m in parts) if all(parts) else "MLX"


def _package_include() -> Optional[tuple]:
    """(include dir, "<distribution> <version>") of an installed mlx package that ships its C++ headers."""
    try:
        spec = importlib.util.find_spec("mlx")  # a top-level name: finds, never imports
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for loc in list(spec.submodule_search_locations or ()):
        inc = os.path.join(loc, "include")
        if is_mlx_include(inc):
            return inc, _distribution_of(Path(loc), inc)
    return None


def _distribution_of(pkg_dir: Path, inc: str) -> str:
    """The installed distribution whose files hold the headers (mlx-cpu, mlx-metal, mlx ...), with its version.
    Read from the dist-info directories beside the package (importlib.metadata costs a tenth of a second to
    import, on every run)."""
    for info in sorted(pkg_dir.parent.glob("mlx*.dist-info")):
        try:
            if "mlx/include/mlx/fast.h," not in (info / "RECORD").read_text(encoding="utf-8", errors="replace"):
                continue
            meta = (info / "METADATA").read_text(encoding="utf-8", errors="replace")[:4000]
        except OSError:
            continue
        name = re.search(r"^Name:\s*(\S+)", meta, re.M)
        version = re.search(r"^Version:\s*(\S+)", meta, re.M)
        if name and version:
            return f"{name.group(1)} {version.group(1)}"
    return _mlx_version(inc)


# ------------------------------------------------------------------ cxx


def _resolve_cxx(root: Path, setting: str, cargo_home: str) -> Source:
    stub = Source("stubs", "stubs", str(CXX_STUB_DIR))
    if setting == "stubs":
        return stub
    if setting != "auto":
        return _cxx_at(setting, "path") or _raise(f"compile.cxx_headers: {setting} holds no rust/cxx.h or cxx.h")
    for d in _tree_candidates(root, _CXXBRIDGE_PATTERNS):
        if (Path(d) / "rust" / "cxx.h").is_file():
            return Source("cxxbridge", f"cxx-build output at {d}", d)
    pinned = _pinned_cxx_versions(root)
    for kind, pattern in (("cargo", os.path.join(cargo_home, "registry", "src", "*", "cxx-*")),
                          ("debian", "/usr/share/cargo/registry/cxx-*")):
        crates = [c for c in glob.glob(pattern) if re.fullmatch(r"cxx-\d+(\.\d+)*", os.path.basename(c))]
        crates.sort(key=lambda c: (_crate_version(c) in pinned, _crate_version(c)), reverse=True)
        for crate in crates:
            got = _cxx_at(os.path.join(crate, "include"), kind, os.path.basename(crate))
            if got is not None:
                return got
    return stub


def is_cxx_include(d) -> bool:
    return d is not None and ((Path(d) / "rust" / "cxx.h").is_file() or (Path(d) / "cxx.h").is_file())


def _raise(message):
    raise HeaderError(message)


def _cxx_at(d: str, kind: str, crate: str = "") -> Optional[Source]:
    label = f"{crate} at {d}" if crate else d
    if (Path(d) / "rust" / "cxx.h").is_file():
        return Source(kind, label, d)
    if (Path(d) / "cxx.h").is_file():
        return Source(kind, label, str(CXX_FORWARD_DIR), forward_to=str(Path(d) / "cxx.h"))
    return None


def _crate_version(path: str) -> tuple:
    return tuple(int(x) for x in os.path.basename(path)[4:].split("."))


def _pinned_cxx_versions(root: Path) -> set:
    """cxx versions the tree's Cargo.lock files pin."""
    out = set()
    for depth in _DEPTHS:
        for lock in glob.glob(str(root / depth / "Cargo.lock")):
            try:
                text = Path(lock).read_text(encoding="utf-8", errors="replace")[:2_000_000]
            except OSError:
                continue
            for m in re.finditer(r'name = "cxx"\nversion = "(\d+(?:\.\d+)*)"', text):
                out.add(tuple(int(x) for x in m.group(1).split(".")))
    return out


# ------------------------------------------------------------------ digests


# The content digest of each header folder this process took, with the listing it was taken from (every file's
# path, size, modification time and inode). A served check's process inherits the server's (commands/serve.py
# keeps those its checks report) and takes a kept digest while the folder's listing is unchanged, instead of
# reading every header again: the real MLX headers are ~250 files, ~7 ms of each check that resolves its headers.
# A header rewritten in place with its size and modification time put back would go unseen, as it would by a
# kept cache entry (cache/resident.py); a reinstall gives new inodes.
KEPT_DIGESTS: dict = {}  # (folder, top) -> (listing signature, content digest)
MAX_KEPT_DIGESTS = 64


@lru_cache(maxsize=32)
def _dir_digest(d: str, top: str) -> str:
    """Content hash of the headers under ``d/top`` (names and bytes): a reinstall with the same files keeps it."""
    if not top:
        # a folder holding one folder and nothing else (an include folder holding mlx/) hashes as that folder does,
        # names taken from ``d`` either way: the header set's digest has read it already
        try:
            entries = os.listdir(d)
        except OSError:
            entries = []
        only = os.path.join(d, entries[0]) if len(entries) == 1 else None
        if only is not None and os.path.isdir(only) and not os.path.islink(only):
            return _dir_digest(d, entries[0])
    files = _listing(os.path.join(d, top) if top else d)
    signature = hashlib.sha256(repr(files).encode()).hexdigest()
    kept = KEPT_DIGESTS.get((d, top))
    if kept is not None and kept[0] == signature:
        return kept[1]
    h = hashlib.sha256()
    for p, _ in files:
        h.update(os.path.relpath(p, d).encode() + b"\0")
        try:
            with open(p, "rb") as fh:
                h.update(fh.read())
        except OSError:
            pass
    digest = h.hexdigest()
    _keep((d, top), signature, digest)
    return digest


def _listing(base: str) -> list:
    """[(path, (size, modification time, inode))] of the files under ``base``, in the digest's order."""
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            try:
                st = os.stat(p)
                out.append((p, (st.st_size, st.st_mtime_ns, st.st_ino)))
            except OSError:
                out.append((p, None))
    return out


def kept_digests() -> list:
    """The folder digests this process kept, as data: [[folder, top, listing signature, digest]]."""
    return [[d, top, sig, digest] for (d, top), (sig, digest) in sorted(KEPT_DIGESTS.items())]


def keep_digests(items) -> None:
    """Keep the folder digests a served check's process reported (:func:`kept_digests`); anything else is left."""
    for item in items if type(items) is list else ():
        if type(item) is list and len(item) == 4 and all(type(x) is str for x in item):
            _keep((item[0], item[1]), item[2], item[3])


def _keep(folder: tuple, signature: str, digest: str) -> None:
    """Keep a folder's digest with its listing's signature, a folder already kept or up to the bound."""
    if len(KEPT_DIGESTS) < MAX_KEPT_DIGESTS or folder in KEPT_DIGESTS:
        KEPT_DIGESTS[folder] = (signature, digest)


@lru_cache(maxsize=8)
def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


# ------------------------------------------------------------------ reading a command line

_PATH_FLAGS = ("-isystem", "-idirafter", "-I")


def header_dirs_in(args, skip=()) -> list:
    """The directories a command line adds with -isystem/-idirafter (the header set's; the project's come with
    -I), and the directory of a cxx.h the bundled rust/cxx.h forwards to."""
    out = []
    it = iter(args)
    for a in it:
        if a in ("-isystem", "-idirafter"):
            d = next(it, "")
            if d and d not in skip:
                out.append(os.path.normpath(d))
        elif a.startswith(f"-D{CXX_FORWARD_MACRO}="):
            out.append(os.path.dirname(a.split("=", 1)[1].strip('"')))
    return out


def args_digest(args, skip=()) -> str:
    """Content digest of the header directories a command line reads (for the prelude's key)."""
    h = hashlib.sha256()
    for d in header_dirs_in(args, skip):
        h.update(d.encode() + b"\0" + _dir_digest(d, "").encode())
    return h.hexdigest()[:16]


def shadowed(args, system_dirs=()) -> bool:
    """Whether a directory of the command line other than the header set's own (a project -I, or a system or
    CPATH one) holds a header at a path of the set's, so that units would read it rather than the set's."""
    own = _RESOLVED_DIRS | {os.path.normpath(str(d)) for d in (STUBS_DIR, ROCM_SHIM_DIR, CXX_STUB_DIR, CXX_FORWARD_DIR)}
    dirs = list(system_dirs)
    for var in ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH"):
        dirs += os.environ.get(var, "").split(os.pathsep)
    it = iter(args)
    stubs = False
    for a in it:
        if a in ("-I", "-isystem", "-iquote", "-idirafter"):
            d = next(it, "")
            stubs = stubs or os.path.normpath(d) == os.path.normpath(str(STUBS_DIR))
            dirs.append(d)
        elif a.startswith("-I") and len(a) > 2:
            dirs.append(a[2:])
        elif a.startswith("-isystem") and len(a) > 8:
            dirs.append(a[8:])
        elif a in ("-include", "-include-pch"):
            next(it, None)
    if stubs:
        rels = [p.relative_to(STUBS_DIR).as_posix() for p in STUBS_DIR.rglob("*") if p.is_file()]
    else:
        rels = ["mlx/mlx.h", "mlx/fast.h", "mlx/array.h"]
    rels.append("rust/cxx.h")
    return any((Path(d) / r).exists() for d in dirs if d and os.path.normpath(d) not in own for r in rels)


def resolution_inputs(root) -> list:
    """Directories whose change can change what ``auto`` resolves to (a package installed into or removed from a
    site directory, a cxx crate unpacked into a cargo registry), for a cache entry that answers without resolving."""
    import sys

    cargo = os.environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
    dirs = [p for p in sys.path if p and os.path.isdir(p) and not os.path.isfile(os.path.join(p, "__init__.py"))]
    dirs += glob.glob(os.path.join(cargo, "registry", "src", "*")) + ["/usr/share/cargo/registry"]
    return sorted({os.path.abspath(d) for d in dirs if os.path.isdir(d)})
