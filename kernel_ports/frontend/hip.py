"""Kernel bodies read as code.

A HIP body lives in a string constant; a lane-op name inside a comment of that
body must not count, so the body is re-parsed as C++ with tree-sitter and only
identifiers and tokens outside comments and string/char literals are listed.
Preprocessor lines are code too (``#if __AMDGCN_WAVEFRONT_SIZE == 64`` uses a
wavefront macro), so identifiers inside ``#if`` conditions and ``#define``
bodies are listed as well; their text is tokenised with the same comment
stripping.

``scan_header_file`` reads a header file the same way: a project file that a
body pulls in with ``#include "..."`` is compiled with it.

Each token carries its byte offset in the text (``token_offsets``), so a
caller that knows where the text sits in a file can name the line of a token;
``includes`` lists the quoted ``#include`` paths of the text, as spelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter_cpp
from tree_sitter import Language, Parser

from kernel_ports.scope.limits import bounded_parser

_LANGUAGE = Language(tree_sitter_cpp.language())


def cpp_language() -> Language:
    return _LANGUAGE


def cpp_parser() -> Parser:
    """A tree-sitter C++ parser within the parse limits (the witness reads files with it, this module bodies)."""
    return bounded_parser(Parser(_LANGUAGE))


_LEAF_SKIP = {"comment", "string_literal", "raw_string_literal", "char_literal", "system_lib_string"}
# preproc_arg / preproc condition text is not tokenised by tree-sitter: do it here,
# after removing comments and literals.
_PP_TEXT = {"preproc_arg"}
_TOKEN_RE = re.compile(r"[A-Za-z_]\w*|0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?|<<=|>>=|<<|>>|&&|\|\||[=!<>]=|->|::|\S")
_STRIP_RE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


@dataclass(frozen=True)
class BodyScan:
    identifiers: tuple  # distinct identifiers, in first-use order
    tokens: tuple  # all code tokens in order (identifiers, numbers, punctuation)
    has_errors: bool
    token_offsets: tuple = ()  # UTF-8 byte offset in the text of each token
    includes: tuple = ()  # quoted #include paths, as spelled, in order


def _blank(m) -> str:
    # keep the newlines of a stripped comment, so offsets after it stay right
    return "".join(ch if ch == "\n" else " " for ch in m.group(0))


def _pp_tokens_at(text: str, base: int) -> list:
    """(token, byte offset) of preprocessor text starting at byte ``base``."""
    stripped = _STRIP_RE.sub(_blank, text)
    return [(m.group(0), base + len(stripped[: m.start()].encode("utf-8"))) for m in _TOKEN_RE.finditer(stripped)]


def scan_body(text: str) -> BodyScan:
    data = text.encode("utf-8")
    tree = cpp_parser().parse(data)
    tokens: list = []
    offsets: list = []
    includes: list = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        t = node.type
        if t in _LEAF_SKIP:
            continue
        if t == "preproc_include":
            path = node.child_by_field_name("path")
            if path is not None and path.type == "string_literal":
                includes.append(path.text.decode("utf-8", "replace").strip().strip('"'))
        if t in _PP_TEXT:
            for tok, off in _pp_tokens_at(node.text.decode("utf-8", "replace"), node.start_byte):
                tokens.append(tok)
                offsets.append(off)
            continue
        if node.child_count == 0:
            tok = node.text.decode("utf-8", "replace")
            if tok.strip():
                # tree-sitter leaves some multi-char runs (e.g. ERROR recovery) as one leaf
                if " " in tok:
                    for m in _TOKEN_RE.finditer(tok):
                        tokens.append(m.group(0))
                        offsets.append(node.start_byte + len(tok[: m.start()].encode("utf-8")))
                else:
                    tokens.append(tok)
                    offsets.append(node.start_byte)
            continue
        stack.extend(reversed(node.children))
    seen = {}
    for tok in tokens:
        if (tok[0].isalpha() or tok[0] == "_") and tok not in seen:
            seen[tok] = None
    return BodyScan(identifiers=tuple(seen), tokens=tuple(tokens), has_errors=tree.root_node.has_error,
                    token_offsets=tuple(offsets), includes=tuple(includes))


def line_starts(data: bytes) -> list:
    """Byte offsets at which the lines of ``data`` start (line 1 at index 0)."""
    out = [0]
    at = data.find(b"\n")
    while at >= 0:
        out.append(at + 1)
        at = data.find(b"\n", at + 1)
    return out


def scan_header_file(path) -> BodyScan:
    with open(path, "rb") as fh:
        return scan_body(fh.read().decode("utf-8", "replace"))
