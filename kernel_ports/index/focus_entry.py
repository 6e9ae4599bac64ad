"""The focus's entry: the bodies each walk may leave unread (:mod:`kernel_ports.frontend.focus`), kept for a tree
whose files' witness results are what they were, not only their bytes.

The focus is a function of every C-family file's witness result (with its definitions) and the registry's names.
Its entry (one per layout of the tree and set of names: :func:`key`) records, per file, the content hash and a
canonical digest of that result. A file whose hash is the recorded one reads the same; a file whose hash differs
(an edit) is read by the witness in this run anyway, and is the same to the focus when its result's digest is the
recorded one: an edit that changes no declaration, name or body place (a comment, a changed literal) reuses the
focus without decoding any other file's definitions. Digests of unchanged files are carried over from the entry
before, so a new entry digests only the files that changed.
"""

from __future__ import annotations

from kernel_ports.cache.canonical import NotCanonical, digest
from kernel_ports.cache.units import sha

ENTRY_KIND = "focus"


def key(version: str, names_key: str, inputs, paths: list) -> str:
    return sha(f"f2|{version}|{names_key}|{inputs}|{sorted(paths)}".encode())


def files_of(entry, paths: list) -> dict:
    """path -> (content hash, witness digest) the entry records, when it covers exactly ``paths``; else {}."""
    try:
        if type(entry) is not dict or entry.get("kind") != ENTRY_KIND:
            return {}
        files = {p: (h, d) for p, h, d in entry["files"]}
        return files if set(files) == set(paths) and type(entry["result"]) is tuple and len(entry["result"]) == 2 else {}
    except (KeyError, TypeError, ValueError):
        return {}


def digests(results: dict) -> dict:
    """path -> the canonical digest of its witness result (with definitions); None for one that has no digest."""
    out = {}
    for path, w in results.items():
        try:
            out[path] = digest(w)
        except NotCanonical:
            out[path] = None
    return out


def reusable(recorded: dict, hashes: dict, fresh: dict) -> bool:
    """Whether every file reads the same to the focus: its hash is the recorded one, or its witness digest
    (``fresh``: path -> digest, for the files whose hash differs) is."""
    if not recorded:
        return False
    for path, (h, d) in recorded.items():
        if hashes.get(path) != h and (fresh.get(path) is None or fresh.get(path) != d):
            return False
    return True


def entry(recorded: dict, hashes: dict, fresh: dict, result: tuple, bodies: dict) -> dict:
    """The entry to keep: each file's hash and digest (carried over from ``recorded`` when its hash is unchanged,
    else from ``fresh``); ``bodies``: path -> the places of its function bodies, which the next run's guess
    compares an edited file's with (:class:`kernel_ports.index.plan.TreeFocus`)."""
    files = []
    for path in sorted(hashes):
        old = recorded.get(path)
        d = old[1] if old is not None and old[0] == hashes[path] else fresh.get(path)
        files.append((path, hashes[path], d))
    return {"kind": ENTRY_KIND, "files": files, "result": result, "bodies": bodies}
