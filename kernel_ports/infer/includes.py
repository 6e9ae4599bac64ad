"""Include directories from the quoted includes that do not resolve from their own folder.

`#include "turbo/kernel_port.h"` written in `src/lib/mlx-cpp/turbo/x.cpp`
resolves only when `src/lib/mlx-cpp` is on the include path. For every such
include, the project folders under which the spelled path exists (a suffix
match over the tree's files) are the candidates; folders are then chosen
greedily, the one most includers need first, until every include that can be
resolved is. When an include fits more than one folder, the note says which
were passed over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath


@dataclass
class IncludeDir:
    path: str  # relative to the root ("" is the root itself)
    includes: list = field(default_factory=list)  # (includer, spelled) it resolves
    passed_over: set = field(default_factory=set)  # other folders some of those includes also fit

    def reason(self) -> str:
        includers = sorted({i for i, _ in self.includes})
        spelled = sorted({s for _, s in self.includes})
        text = (f"{len(self.includes)} quoted include(s) in {len(includers)} file(s) resolve only under it, "
                f"e.g. \"{spelled[0]}\" from {includers[0]}")
        if self.passed_over:
            text += "; also fit (fewer includers need them): " + ", ".join(sorted(d or "." for d in self.passed_over))
        return text


def _normal(path: PurePosixPath) -> str | None:
    parts: list = []
    for seg in path.parts:
        if seg == "..":
            if not parts:
                return None
            parts.pop()
        elif seg != ".":
            parts.append(seg)
    return "/".join(parts)


def infer_include_dirs(includes_of: dict, known: set, given: tuple = ()) -> tuple:
    """(chosen IncludeDirs, {(includer, spelled) that resolve nowhere in the tree}).

    ``includes_of``: file -> [(spelled, is_system)]; ``known``: every project file; ``given``: folders
    (relative) already on the include path.
    """
    unresolved: dict = {}  # (includer, spelled) -> candidate folders
    missing = set()
    by_suffix: dict = {}
    for k in known:
        parts = k.split("/")
        for i in range(len(parts)):
            by_suffix.setdefault("/".join(parts[i:]), []).append("/".join(parts[:i]))
    for includer, incs in includes_of.items():
        here = PurePosixPath(includer).parent
        for spelled, is_system in incs:
            if is_system or not spelled:
                continue
            local = _normal(here / spelled)
            if local in known or any(_normal(PurePosixPath(d) / spelled) in known for d in given):
                continue
            rel = _normal(PurePosixPath(spelled))
            folders = set(by_suffix.get(rel, ())) if rel else set()
            if folders:
                unresolved[(includer, spelled)] = folders
            else:
                missing.add((includer, spelled))
    chosen = []
    while unresolved:
        need: dict = {}
        for key, folders in unresolved.items():
            for d in folders:
                need.setdefault(d, set()).add(key)
        best = min(need, key=lambda d: (-len({i for i, _ in need[d]}), -len(need[d]), d.count("/"), d))
        picked = IncludeDir(best, sorted(need[best]))
        for key in need[best]:
            picked.passed_over |= unresolved.pop(key) - {best}
        chosen.append(picked)
    return chosen, missing
