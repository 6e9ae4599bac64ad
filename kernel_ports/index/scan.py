"""The syntactic pass over every file, cached by content: the witness (tree-sitter) reads each C-family file
(its candidates, includes, conditional macros and the HIP/Metal/CUDA body constants), the Rust front end reads
each Rust file. A file either cannot read is a KP901 record (``index.unanalyzable``)."""

from __future__ import annotations

import dataclasses

from kernel_ports.scope import limits
from kernel_ports.frontend import rust, witness as wit
from kernel_ports.cache.units import FRONTEND_VERSION, definitions_key, sha


def witness_key(names_key: str, path: str, content_hash: str) -> str:
    return sha(f"w|{FRONTEND_VERSION}|{names_key}|{path}|{content_hash}".encode())


def _witness_file(f, names, parser) -> tuple:
    w = wit.witness(f.path, f.data, names, parser)
    return w, wit.hip_sources(w)


def read_cpp_files(index, cache, cpp_files: list, hashes: dict, names, names_key: str) -> tuple:
    """(path -> witness result without its definitions, path -> definitions of the files read afresh, the
    tree-sitter parser if one was made); each file's HIP sources go into ``index.hip_sources``."""
    witnessed: dict = {}
    parser = None
    definitions: dict = {}  # path -> the witness's definitions, when read afresh (cached apart: only the focus needs them)
    for f in cpp_files:
        key = witness_key(names_key, f.path, hashes[f.path])
        res = cache.get(key)
        if res is None:
            parser = parser or wit.cpp_parser()
            got = limits.guarded(index.unanalyzable, f.path, "the syntactic pass (tree-sitter)", _witness_file,
                                 f, names, parser)
            if got is None:
                parser.reset()  # a parse that gave up would otherwise be resumed by the next file's
                continue
            w, hips = got
            definitions[f.path] = w.definitions
            cache.put(definitions_key(key), w.definitions)
            res = (dataclasses.replace(w, definitions=[]), hips)
            cache.put(key, res)
        witnessed[f.path] = res[0]
        index.hip_sources.extend(res[1])
    return witnessed, definitions, parser


def read_rust_files(index, cache, rust_files: list, hashes: dict, seams: list) -> None:
    """The Rust gates and test-seam calls of every Rust file, into the index."""
    for f in rust_files:
        key = sha(f"r|{FRONTEND_VERSION}|{sha(repr(seams).encode())}|{f.path}|{hashes[f.path]}".encode())
        res = cache.get(key)
        if res is None:
            res = limits.guarded(index.unanalyzable, f.path, "the Rust front end", rust.analyze, f.path, f.data, seams)
            if res is None:
                continue
            cache.put(key, res)
        index.rust_gates.extend(res[0])
        index.seam_calls.extend(res[1])
