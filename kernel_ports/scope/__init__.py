"""Which files the check reads, and which of them cannot be judged.

Files come from the registry's `sources` globs under the root. In a git work
tree the listing comes from git, so `.gitignore` is honoured; elsewhere the
tree is walked. Symbolic links are followed only while they stay inside the
root, and a directory seen twice (a link loop) is entered once. A file in
scope that is binary, not UTF-8 or too large is a KP901 finding: fail closed.

Beside the listing, the bounds on what the inputs may make the check do: :mod:`.limits` (the tree, a parse,
a worker), :mod:`.globs` (the registry's glob patterns), :mod:`.compile_db` (``compile_commands.json``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from kernel_ports.findings import Finding
from kernel_ports.scope.globs import Glob
from kernel_ports.scope.limits import Limits, LimitError, how_to_raise, lost, lost_message

# The one list of C-family files: what is in scope is what the witness and Clang read (a file counted as scanned
# that no front end reads would be a silent skip). Objective-C (``.m``) is not C++ and cannot call MLX's C++ API.
CPP_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".cu", ".cuh", ".hip", ".mm"})
HEADER_SUFFIXES = frozenset({".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".cuh"})
RUST_SUFFIXES = frozenset({".rs"})
MAX_FILE_BYTES = Limits.max_file_bytes  # the default; the registry's `limits:` may change it


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative POSIX path under the root
    abspath: Path
    data: bytes

    @property
    def language(self) -> str:
        return "rust" if Path(self.path).suffix.lower() in RUST_SUFFIXES else "cpp"

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")


@dataclass
class Scope:
    root: Path
    files: list[SourceFile] = field(default_factory=list)  # readable, UTF-8, in scope
    findings: list[Finding] = field(default_factory=list)  # KP901 for the rest
    listed: int = 0  # source files the globs selected, judged or not
    refused: list[str] = field(default_factory=list)  # paths of the KP901 files: no front end may read them

    def by_path(self) -> dict:
        return {f.path: f for f in self.files}


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> Glob:
    """A glob over POSIX paths: `*` within a segment, `**` across segments (see globs.py: linear time)."""
    return Glob(pattern)


def matches(path: str, patterns) -> bool:
    return any(glob_regex(p).match(path) for p in patterns)


def is_source(path: str) -> bool:
    """A file the check reads, by its suffix in any case (`.C`, `.H`, `.CPP` are C++ as much as `.cpp`)."""
    suffix = Path(path).suffix.lower()
    return suffix in CPP_SUFFIXES or suffix in RUST_SUFFIXES


def is_cpp_file(path: str) -> bool:
    """A C-family file (C, C++, CUDA, HIP, Objective-C++), read by the witness and, with candidates, by Clang."""
    return Path(path).suffix.lower() in CPP_SUFFIXES


def is_header(path: str) -> bool:
    return Path(path).suffix.lower() in HEADER_SUFFIXES


def _git_listing(root: Path) -> list[str] | None:
    """Paths git would show under root (tracked and untracked, not ignored)."""
    if not _may_be_in_work_tree(root):
        return None
    import subprocess

    try:
        inside = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True, timeout=30)
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        listing = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--full-name", "."],
            capture_output=True,
            timeout=60,
        )
        prefix = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-prefix"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if listing.returncode != 0 or prefix.returncode != 0:
        return None
    lead = prefix.stdout.strip()
    out = []
    for raw in listing.stdout.split(b"\0"):
        if not raw:
            continue
        name = raw.decode("utf-8", "surrogateescape")
        if name.startswith(lead):
            out.append(name[len(lead):])
    # git lists a deleted-but-tracked file too; only what exists is in scope.
    return sorted(set(p for p in out if os.path.lexists(root / p)))


def _may_be_in_work_tree(root: Path) -> bool:
    """False when no directory from root up holds a ``.git`` and no variable points git elsewhere: git need not
    be asked (starting it is most of the cost of listing a small tree)."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    here = root.resolve()
    for d in (here, *here.parents):
        if os.path.lexists(d / ".git"):
            return True
    return False


def _walk(root: Path, notes: list, max_entries: int = 10**9) -> list[str]:
    """Every file under root in depth-first name order, links followed only inside root, loops cut; LimitError
    past max_entries. A stack, not recursion: a hostile tree may be nested as deep as paths allow."""
    real_root = root.resolve()
    seen_dirs = set()
    out = []
    seen = 0
    stack = [(root, "")]
    while stack:
        directory, rel = stack.pop()
        if not isinstance(directory, Path):  # a file, kept in its place in the order
            out.append(rel)
            continue
        try:
            st = os.stat(directory)  # (device, inode): a loop test that costs no walk of the path in Python
            if (st.st_dev, st.st_ino) in seen_dirs:
                notes.append((rel or ".", "directory link loop; entered once"))
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            notes.append((rel or ".", f"cannot list directory ({exc.strerror})"))
            continue
        seen += len(entries)
        if seen > max_entries:
            raise LimitError(f"kernel-ports: the tree under the root {root} has more than {max_entries} entries (20 x "
                             f"limits.max_files), so it was not listed; check `root`, or {how_to_raise('max_files')}")
        children = []
        for entry in entries:
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            if entry.name == ".git":
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                target = Path(entry.path).resolve() if is_dir and entry.is_symlink() else None
            except (OSError, RuntimeError) as exc:
                notes.append((child_rel, f"cannot read directory entry ({getattr(exc, 'strerror', None) or exc})"))
                continue
            if not is_dir:
                children.append((None, child_rel))
            elif target is not None and not target.is_relative_to(real_root):
                notes.append((child_rel, "directory link leads outside the root; not followed"))
            else:
                children.append((Path(entry.path), child_rel))
        stack.extend(reversed(children))
    return out


def resolve_scope(registry, max_bytes: int | None = None) -> Scope:
    bounds = Limits.of(registry)
    max_bytes = max_bytes or bounds.max_file_bytes
    root = registry.root
    scope = Scope(root=root)
    notes: list = []
    listing = _git_listing(root)
    if listing is None:
        listing = _walk(root, notes, 20 * bounds.max_files)
    for path, why in notes:
        if matches(path + "/x", registry.sources.include) and not matches(path, registry.sources.exclude):
            scope.findings.append(Finding("KP901", path, 1, 1, lost_message(lost("unreadable", why))))
    real_root = root.resolve()
    selected = [p for p in listing if is_source(p) and matches(p, registry.sources.include)
                and not matches(p, registry.sources.exclude)]
    if len(selected) > bounds.max_files:
        raise LimitError(f"kernel-ports: the scope has {len(selected)} source files, over the limit of {bounds.max_files} "
                         f"(limits.max_files); narrow `sources` or {how_to_raise('max_files')}")
    total = 0
    for path in selected:
        scope.listed += 1
        problem, data, abspath = _read(root / path, real_root, max_bytes)
        if problem:
            scope.findings.append(Finding("KP901", path, 1, 1, lost_message(problem)))
            scope.refused.append(path)
            continue
        total += len(data)
        if total > bounds.max_total_bytes:
            raise LimitError(f"kernel-ports: the source files in scope exceed {bounds.max_total_bytes} bytes in total "
                             f"(limits.max_total_bytes; reached at {path}); narrow `sources` or "
                             f"{how_to_raise('max_total_bytes')}")
        scope.files.append(SourceFile(path, abspath, data))
    return scope


def _read(abspath: Path, real_root: Path, max_bytes: int):
    try:
        real = abspath.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return lost("unreadable", f"cannot resolve path ({getattr(exc, 'strerror', None) or exc})"), None, abspath
    if not real.is_relative_to(real_root):
        return lost("outside root", "symbolic link leads outside the root; not followed"), None, abspath
    if not real.is_file():
        return lost("unreadable", "not a regular file"), None, abspath
    try:
        size = real.stat().st_size
        if size > max_bytes:
            return lost("size", f"file is {size} bytes, over the {max_bytes}-byte limit (limits.max_file_bytes; "
                                f"{how_to_raise('max_file_bytes')})"), None, abspath
        with open(real, "rb") as fh:
            data = fh.read(max_bytes + 1)  # a file that grows after the size check is still bounded
        if len(data) > max_bytes:
            return lost("size", f"file grew past the {max_bytes}-byte limit while read"), None, abspath
    except OSError as exc:
        return lost("unreadable", f"cannot read ({exc.strerror})"), None, abspath
    if b"\0" in data:
        return lost("binary", "binary content (NUL byte)"), None, abspath
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return lost("encoding", f"not UTF-8 text (byte {exc.start})"), None, abspath
    return None, data, abspath
