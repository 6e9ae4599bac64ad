"""Kernel bodies read as code.

A HIP body lives in a string constant; a lane-op name inside a comment of that
body must not count, so the body is re-parsed as C++ with tree-sitter and only
identifiers and tokens outside comments and string/char literals are listed.
Preprocessor lines are code too (``#if __AMDGCN_WAVEFRONT_SIZE == 64`` uses a
wavefront macro), so identifiers inside ``#if`` conditions and ``#define``
bodies are listed as well; their text is tokenised with the same comment
stripping.

``scan_header_file`` reads a header file passed as a factory's ``header``
argument the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernel_ports.frontend.witness import cpp_parser

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


def _pp_tokens(text: str) -> list:
    return _TOKEN_RE.findall(_STRIP_RE.sub(" ", text))


def scan_body(text: str) -> BodyScan:
    data = text.encode("utf-8")
    tree = cpp_parser().parse(data)
    tokens: list = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        t = node.type
        if t in _LEAF_SKIP:
            continue
        if t in _PP_TEXT:
            tokens.extend(_pp_tokens(node.text.decode("utf-8", "replace")))
            continue
        if node.child_count == 0:
            tok = node.text.decode("utf-8", "replace")
            if tok.strip():
                # tree-sitter leaves some multi-char runs (e.g. ERROR recovery) as one leaf
                tokens.extend(_TOKEN_RE.findall(tok) if " " in tok else [tok])
            continue
        stack.extend(reversed(node.children))
    seen = {}
    for tok in tokens:
        if (tok[0].isalpha() or tok[0] == "_") and tok not in seen:
            seen[tok] = None
    return BodyScan(identifiers=tuple(seen), tokens=tuple(tokens), has_errors=tree.root_node.has_error)


def scan_header_file(path) -> BodyScan:
    with open(path, "rb") as fh:
        return scan_body(fh.read().decode("utf-8", "replace"))
