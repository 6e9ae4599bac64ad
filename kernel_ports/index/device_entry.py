"""The device stage's entry: a check whose planned builds read what the last one read answers its device builds
from one cache read, without planning a body, generating a unit or reading a compile's entry.

What the plan (:mod:`.device_plan`) and the builds (:mod:`.device`) read, and how the entry covers it:

- the index's facts the plan reads (the ROCm factory calls, what each compiles, the port tables, the
  launches), the registry's root, kernels, limits and the files in scope (what a quoted include resolves to),
  the compiler (path, version, disassembler), the targets and the tool's own code: the entry's key, from a
  canonical text of them (sets sorted), so any change is another entry;
- the files read as bytes (a body's pieces): their content hashes, recorded in the entry; one that differs is a
  miss;
- the questions tree-sitter answered about a file (a launcher's guards, a body chosen by a condition): for a file
  whose content changed, each is asked again and its answer compared with the recorded one; any that differs is
  a miss. So a launcher edited where no guard changes (a comment, code far from its launches) reuses the entry.

An entry is written only when every compile's outcome was one the per-build cache keeps (built or failed; a
refusal comes from the plan): a timeout, an exhausted memory budget or a crash is tried again by the next run.
The entry holds data only (:mod:`kernel_ports.cache.format`): the DeviceBuild facts and three counts.
"""

from __future__ import annotations

from kernel_ports.cache.canonical import NotCanonical, digest

ENTRY_KIND = "device-stage"
# HipSource fields the plan never reads, each made from the body's text and place, which the key holds: the
# largest part of the facts, left out of the key's text
_DERIVED = {"HipSource": frozenset({"identifiers", "tokens", "token_lines", "includes"})}


def plan_key(index, registry, known, compiler, targets: tuple):
    """The entry's key: what the plan and the builds read besides the tree's files; None when it cannot be made."""
    from kernel_ports.cache.check_entry import tool_digest

    calls = sorted((f for f in index.factory_calls if f.backend == "rocm"), key=lambda f: str(f.loc))
    parts = (
        ENTRY_KIND, tool_digest(), compiler.path, compiler.version, compiler.disassembler, tuple(targets),
        str(registry.root), tuple((k.table, k.compile_assume) for k in registry.kernels),
        sorted(registry.limits.items()), sorted(known),
        calls, [index.compiled_bodies.get(str(f.loc)) for f in calls],
        [(t.name, t.slots.get("rocm")) for t in index.port_tables], list(index.invocations),
    )
    try:
        return digest(parts, skip=_DERIVED)
    except NotCanonical:
        return None


def lookup(cache, key, by_path: dict):
    """(DeviceBuild facts, {bodies, variants, pairs}) of the entry under ``key`` when every read it records
    reads the same now; else None."""
    if key is None or cache.root is None:
        return None
    entry = cache.get(key)
    try:
        if type(entry) is not dict or entry.get("kind") != ENTRY_KIND:
            return None
        from kernel_ports.index.device_reads import TreeReads

        reads = TreeReads(by_path, cache)
        changed = {path for path, sha in entry["hashes"] if reads.hash_of(path) != sha}
        if changed & set(entry["direct"]):
            return None
        for path, question, answer in entry["asked"]:
            if path in changed and digest(reads.ask_again(path, question)) != answer:
                return None
        builds, counts = entry["builds"], entry["counts"]
    except (KeyError, TypeError, ValueError, NotCanonical):
        return None
    from kernel_ports.facts import DeviceBuild

    if type(builds) is not list or not all(type(b) is DeviceBuild for b in builds) or type(counts) is not dict:
        return None
    return builds, counts


def store(cache, key, reads, builds: list, counts: dict) -> None:
    """Keep the device builds of this run under ``key``, with what ``reads`` (the plan's TreeReads) recorded."""
    if key is None or cache.root is None:
        return
    try:
        asked = [(path, question, digest(answer)) for (path, question), answer in sorted(reads.asked.items(), key=repr)]
    except NotCanonical:
        return
    cache.put(key, {"kind": ENTRY_KIND, "hashes": sorted(reads.hashes.items(), key=repr), "direct": sorted(reads.direct),
                    "asked": asked, "builds": list(builds), "counts": dict(counts)})
