"""Guarded mutations of the sample engine, and running the check on them.

`Mutation` replaces exact text in one file of a copy of the engine (or of its
registry). If the text is absent — or present a different number of times
than expected — it raises `MutationTargetMissing`, so a negative control can
never pass because the code it meant to break has moved.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from kernel_ports.findings import Policy
from kernel_ports.project import Options, analyze
from kernel_ports.registry.load import load_registry

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / "cpp_fixtures" / "engine"
REGISTRY = REPO / "registry.yaml"
REGISTRY_KEY = "registry.yaml"  # a Mutation on this path edits the registry copy


class MutationTargetMissing(AssertionError):
    pass


@dataclass(frozen=True)
class Mutation:
    path: str  # relative to the engine root, or REGISTRY_KEY
    old: str
    new: str
    count: int = 1  # how many times `old` must occur (0: any number >= 1)


@dataclass
class Copy:
    root: Path
    registry_path: Path

    def file(self, rel: str) -> Path:
        return self.registry_path if rel == REGISTRY_KEY else self.root / rel

    def line_of(self, rel: str, text: str, nth: int = 1) -> int:
        """1-based line of the nth occurrence of text in the copied file."""
        body = self.file(rel).read_text(encoding="utf-8")
        at = -1
        for _ in range(nth):
            at = body.find(text, at + 1)
            if at < 0:
                raise MutationTargetMissing(f"{rel}: {text!r} not found")
        return body.count("\n", 0, at) + 1

    def apply(self, mutation: Mutation) -> None:
        target = self.file(mutation.path)
        if not target.exists():
            if mutation.old:
                raise MutationTargetMissing(f"{mutation.path}: file does not exist")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(mutation.new, encoding="utf-8")
            return
        body = target.read_text(encoding="utf-8")
        found = body.count(mutation.old) if mutation.old else 0
        if found == 0 or (mutation.count and found != mutation.count):
            raise MutationTargetMissing(f"{mutation.path}: expected {mutation.count or '1+'} of {mutation.old!r}, found {found}")
        target.write_text(body.replace(mutation.old, mutation.new), encoding="utf-8")


def engine_copy(tmp_path: Path, *mutations: Mutation) -> Copy:
    root = tmp_path / "engine"
    shutil.copytree(ENGINE, root, symlinks=True)
    registry_path = tmp_path / "registry.yaml"
    shutil.copy(REGISTRY, registry_path)
    copy = Copy(root, registry_path)
    for mutation in mutations:
        copy.apply(mutation)
    return copy


def check(copy: Copy, cache_dir=None, **policy):
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    options = Options(policy=Policy(**policy), jobs=2, use_cache=cache_dir is not None, cache_dir=str(cache_dir) if cache_dir else None)
    return analyze(registry, options)


def run_copy(tmp_path_factory, cache_dir, name: str, mutations):
    """A mutated copy in a fresh directory, and the check's result on it."""
    copy = engine_copy(tmp_path_factory.mktemp(name), *mutations)
    return copy, check(copy, cache_dir=cache_dir)


def findings_at(result, code: str, path: str, line: int | None = None):
    return [f for f in result.findings if f.rule == code and f.path == path and (line is None or f.line == line)]


def describe(result) -> str:
    return "\n".join(f"{f.path}:{f.line}:{f.column}: {f.rule} {f.message}" for f in result.findings) or "(no findings)"
