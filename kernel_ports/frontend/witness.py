"""The witness: a header-less tree-sitter read of every C/C++/CUDA/HIP/ObjC++ file.

It answers two questions cheaply (no includes, no types):

* which files Clang must parse -- files containing a candidate construct, and
  the translation units that include a header containing one;
* what Clang must confirm -- every candidate (a call of a factory, the selector,
  ``has_kernel_port`` or a backend query by *name*; a ``KernelPorts``-typed
  static built from a braced list; a call with nine arguments) is later matched
  against the Clang facts, and one Clang lost becomes an ``Unconfirmed`` record
  (KP902) instead of silently disappearing.

Comments and string literals are not code to tree-sitter, so names there never
make candidates.  Code inside ``#define`` bodies is not parsed by tree-sitter
either; constructs there are Clang's to find through their expansions.

It also reads, syntactically, the string constants that hold kernel bodies
(``*_HIP_SOURCE = R"(...)"``), including concatenated pieces, because a body's
exact text and the location of each piece are properties of the spelling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Parser, Query, QueryCursor

from kernel_ports.facts import HipSource, Location
from kernel_ports.frontend.declarations import Definition, _declarator_name, _text, definitions  # noqa: F401
from kernel_ports.frontend.hip import cpp_language, cpp_parser, scan_body


@dataclass(frozen=True)
class Candidate:
    kind: str  # factory_call | selector_call | has_port_call | backend_query | invocation | port_table | seam | predicate_def
    name: str  # the matched name (last segment); for invocations the callee text
    line: int  # 1-based
    column: int  # 1-based, bytes, as Clang counts
    text: str = ""


@dataclass(frozen=True)
class StringConstant:
    name: str
    text: str
    piece_lines: tuple  # ((line, column), ...) 1-based
    is_raw: bool
    line: int
    column: int
    pieces: tuple = ()  # ((first line of the piece's content, is_raw, content text), ...)


@dataclass
class WitnessResult:
    path: str
    candidates: list = field(default_factory=list)
    includes: list = field(default_factory=list)  # (spelling, is_system)
    conditional_macros: set = field(default_factory=set)  # identifiers tested by #if/#ifdef
    string_constants: list = field(default_factory=list)
    has_errors: bool = False
    definitions: list = field(default_factory=list)  # Definition: namespace-level declarations (see definitions())
    macros: set = field(default_factory=set)  # names #defined in the file
    error_lines: list = field(default_factory=list)  # (first, last) lines of what tree-sitter could not parse

    @property
    def has_candidates(self) -> bool:
        return bool(self.candidates)


@dataclass(frozen=True)
class WitnessNames:
    """The names the witness looks for, all taken from the registry."""

    factories: dict  # last segment -> backend
    selector: str
    has_port: str
    table_type: str
    backend_queries: frozenset
    seams: frozenset
    predicates: frozenset
    # registry defines with an empty value (`MLXCEL_API=`): export attributes, read as the preprocessor will (as
    # nothing), since tree-sitter takes `MLXCEL_API int f()` for an error and the focus then reads every such body
    empty_macros: frozenset = frozenset()

    def stable_repr(self) -> str:
        """The same text in every process (set order varies with hash seeds), for cache keys."""
        return repr(
            (
                sorted(self.factories.items()),
                self.selector,
                self.has_port,
                self.table_type,
                sorted(self.backend_queries),
                sorted(self.seams),
                sorted(self.predicates),
                sorted(self.empty_macros),
            )
        )

    @classmethod
    def from_registry(cls, registry) -> "WitnessNames":
        conv = registry.conventions
        factories = {b.factory.split("::")[-1]: name for name, b in registry.backends.items()}
        predicates = frozenset(p.split("::")[-1] for k in registry.kernels for p in k.predicates)
        return cls(
            factories=factories,
            selector=conv.selector.split("::")[-1],
            has_port=conv.has_port.split("::")[-1],
            table_type=conv.table_type.split("::")[-1],
            backend_queries=frozenset(q.split("::")[-1] for q in conv.backend_queries),
            seams=frozenset(s.name.split("::")[-1] for s in conv.test_seams),
            predicates=predicates,
            empty_macros=frozenset(d[:-1].strip() for d in registry.compile.defines
                                   if d.endswith("=") and re.fullmatch(r"[A-Za-z_]\w*", d[:-1].strip())),
        )


def callee_name(fn_node) -> str | None:
    """The last identifier of a call's function expression."""
    node = fn_node
    while node is not None:
        t = node.type
        if t in ("identifier", "field_identifier", "destructor_name"):
            return _text(node)
        if t == "qualified_identifier":
            node = node.child_by_field_name("name")
            continue
        if t == "template_function" or t == "template_method":
            node = node.child_by_field_name("name")
            continue
        if t == "field_expression":
            node = node.child_by_field_name("field")
            continue
        if t == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
            continue
        return None
    return None


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0", "r": "\r"}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _content_line(node, is_raw: bool) -> int:
    """1-based line where a literal piece's characters start."""
    if is_raw:
        content = [c for c in node.named_children if c.type == "raw_string_content"]
        if content:
            return content[0].start_point.row + 1
    return node.start_point.row + 1


def _string_pieces(node):
    """[(text, is_raw, node)] for a string literal or a concatenation of them; None otherwise."""
    while node.type == "parenthesized_expression" and node.named_children:  # a loop: nesting has no bound
        node = node.named_children[0]
    t = node.type
    if t == "raw_string_literal":
        content = [c for c in node.named_children if c.type == "raw_string_content"]
        return [(_text(content[0]) if content else "", True, node)]
    if t == "string_literal":
        raw = _text(node)
        # drop an encoding prefix and the quotes
        body = raw[raw.index('"') + 1 : -1] if '"' in raw else ""
        return [(_unescape(body), False, node)]
    if t == "concatenated_string":
        out = []
        for c in node.named_children:
            sub = _string_pieces(c)
            if sub is None:
                return None  # a macro or identifier between pieces: not a plain constant
            out.extend(sub)
        return out
    return None


def _type_last_segment(decl) -> str | None:
    ty = decl.child_by_field_name("type")
    if ty is None:
        return None
    if ty.type == "qualified_identifier":
        while ty is not None and ty.type == "qualified_identifier":
            ty = ty.child_by_field_name("name")
    if ty is None:
        return None
    if ty.type == "template_type":
        ty = ty.child_by_field_name("name")
    return _text(ty) if ty is not None else None


def _blank_macros(data: bytes, macros: frozenset) -> bytes:
    """``data`` with each whole-word use of the ``macros`` replaced by as many spaces (offsets unchanged)."""
    if not macros:
        return data
    pattern = re.compile(rb"\b(?:" + b"|".join(re.escape(m.encode()) for m in sorted(macros)) + rb")\b")
    return pattern.sub(lambda m: b" " * len(m.group(0)), data)


# The node types the witness reads, wherever they are: found by a tree-sitter query (in C, a fifth of the time a
# walk over every node took in Python: ~0.05 s of the real engine's 310k-character bridge), then read in
# document order, an enclosing node before the nodes it holds, as that walk met them.
_READ_TYPES = ("call_expression", "preproc_include", "preproc_ifdef", "preproc_if", "preproc_elif", "preproc_elifdef",
               "declaration", "field_declaration", "function_definition")
_READ_QUERY = Query(cpp_language(), "[" + " ".join(f"({t})" for t in _READ_TYPES) + "] @node")


def _read_nodes(root) -> list:
    nodes = QueryCursor(_READ_QUERY).captures(root).get("node", [])
    return sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte))


def witness(path: str, data: bytes, names: WitnessNames, parser: Parser | None = None) -> WitnessResult:
    parser = parser or cpp_parser()
    tree = parser.parse(_blank_macros(data, names.empty_macros))
    res = WitnessResult(path=path, has_errors=tree.root_node.has_error)
    cands = res.candidates
    for node in _read_nodes(tree.root_node):
        t = node.type
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            name = callee_name(fn) if fn is not None else None
            line, col = node.start_point.row + 1, node.start_point.column + 1
            if name is not None:
                if name in names.factories:
                    cands.append(Candidate("factory_call", name, line, col, _text(node)[:200]))
                elif name == names.selector:
                    cands.append(Candidate("selector_call", name, line, col, _text(node)[:200]))
                elif name == names.has_port:
                    cands.append(Candidate("has_port_call", name, line, col, _text(node)[:200]))
                elif name in names.backend_queries:
                    cands.append(Candidate("backend_query", name, line, col, _text(node)[:200]))
                if name in names.seams:
                    cands.append(Candidate("seam", name, line, col, _text(node)[:200]))
            if args is not None and args.type == "argument_list":
                nargs = sum(1 for c in args.named_children if c.type != "comment")
                if nargs == 9:
                    cands.append(Candidate("invocation", _text(fn)[:120] if fn is not None else "", line, col, _text(node)[:200]))
        elif t == "preproc_include":
            p = node.child_by_field_name("path")
            if p is not None:
                spelled = _text(p)
                res.includes.append((spelled.strip('<>"'), p.type == "system_lib_string"))
        elif t in ("preproc_ifdef",):
            n = node.child_by_field_name("name")
            if n is not None:
                res.conditional_macros.add(_text(n))
        elif t in ("preproc_if", "preproc_elif", "preproc_elifdef"):
            cond = node.child_by_field_name("condition") or node.child_by_field_name("name")
            if cond is not None:
                res.conditional_macros.update(re.findall(r"[A-Za-z_]\w*", _text(cond)))
        elif t in ("declaration", "field_declaration"):
            _declaration(node, names, res)
        elif t == "function_definition":
            decl = node.child_by_field_name("declarator")
            fname = _declarator_name(decl) if decl is not None else None
            if fname is not None:
                if fname in names.predicates:
                    cands.append(Candidate("predicate_def", fname, node.start_point.row + 1, node.start_point.column + 1))
                if fname in names.seams:
                    cands.append(Candidate("seam", fname, node.start_point.row + 1, node.start_point.column + 1))
    cands.sort(key=lambda c: (c.line, c.column, c.kind))
    res.definitions, res.macros = definitions(tree.root_node)
    res.error_lines = error_lines(tree.root_node)
    return res


def error_lines(root) -> list:
    """(first, last) line of every ERROR or missing node, descending only where an error is."""
    out, stack = [], [root] if root.has_error else []
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            out.append((node.start_point.row + 1, node.end_point.row + 1))
            continue
        stack.extend(c for c in node.children if c.has_error)
    return sorted(out)


def _declaration(node, names: WitnessNames, res: WitnessResult) -> None:
    tyname = _type_last_segment(node)
    for d in node.children_by_field_name("declarator"):
        if d.type != "init_declarator":
            if d.type == "function_declarator" and names.seams:
                n = _declarator_name(d)
                if n in names.seams:
                    res.candidates.append(Candidate("seam", n, node.start_point.row + 1, node.start_point.column + 1))
            continue
        value = d.child_by_field_name("value")
        vname = _declarator_name(d.child_by_field_name("declarator"))
        if value is None or vname is None:
            continue
        if tyname == names.table_type and value.type in ("initializer_list", "argument_list"):
            res.candidates.append(
                Candidate("port_table", vname, d.start_point.row + 1, d.start_point.column + 1, _text(node)[:200])
            )
        pieces = _string_pieces(value)
        if pieces:
            is_raw = any(raw for _, raw, _ in pieces)
            if is_raw or re.search(r"(SOURCE|HEADER|SRC|KERNEL)$", vname or ""):
                res.string_constants.append(
                    StringConstant(
                        name=vname,
                        text="".join(p for p, _, _ in pieces),
                        piece_lines=tuple((n.start_point.row + 1, n.start_point.column + 1) for _, _, n in pieces),
                        is_raw=is_raw,
                        line=d.start_point.row + 1,
                        column=d.start_point.column + 1,
                        pieces=tuple((_content_line(n, raw), raw, p) for p, raw, n in pieces),
                    )
                )


def token_lines(scan, pieces) -> tuple:
    """The file line of each token of a body joined from literal pieces.

    ``pieces``: ((first content line, is_raw, text), ...). Inside a raw piece
    lines follow the file; an escaped piece is on one line as far as the file
    goes, so its tokens take that line.
    """
    spans = []  # (start byte in the joined text, piece bytes, first line, is_raw)
    at = 0
    for line, raw, text in pieces:
        data = text.encode("utf-8")
        spans.append((at, data, line, raw))
        at += len(data)
    out = []
    i = 0
    counted, newlines = 0, 0  # bytes of the current piece counted so far, and the line breaks among them
    for off in scan.token_offsets:
        while i + 1 < len(spans) and off >= spans[i + 1][0]:
            i += 1
            counted, newlines = 0, 0
        start, data, line, raw = spans[i]
        if not raw:
            out.append(line)
            continue
        # the offsets ascend: each piece's line breaks are counted once, not again from its start for each token
        upto = max(0, off - start)
        if upto < counted:
            counted, newlines = 0, 0
        newlines += data.count(b"\n", counted, upto)
        counted = upto
        out.append(line + newlines)
    return tuple(out)


def literal_pieces(text: str, first_line: int):
    """Pieces of a string-literal expression as written (raw or escaped,
    concatenated), whose first character sits on ``first_line``: (joined
    text, pieces as for ``token_lines``); None when it is not only literals."""
    prefix = b"auto __kp_literal = "
    tree = cpp_parser().parse(prefix + text.encode("utf-8") + b";")
    node = tree.root_node
    value = None
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "init_declarator":
            value = n.child_by_field_name("value")
            break
        stack.extend(reversed(n.named_children))
    pieces = _string_pieces(value) if value is not None else None
    if not pieces:
        return None
    spans = tuple((_content_line(n, raw) - 1 + first_line, raw, p) for p, raw, n in pieces)
    return "".join(p for p, _, _ in pieces), spans


def hip_source(path: str, name: str, line: int, column: int, text: str, pieces, piece_locs=(), is_raw=True) -> HipSource:
    """A HipSource for body text whose pieces' places are known (see ``token_lines``)."""
    scan = scan_body(text)
    return HipSource(
        loc=Location(path, line, column),
        name=name,
        text=text,
        piece_locs=tuple(piece_locs),
        identifiers=scan.identifiers,
        tokens=scan.tokens,
        is_raw=is_raw,
        token_lines=token_lines(scan, pieces),
        includes=scan.includes,
    )


def hip_sources(result: WitnessResult) -> list:
    """HipSource facts for a file's kernel-body constants (tokens filled by hip.scan)."""
    return [
        hip_source(result.path, sc.name, sc.line, sc.column, sc.text, sc.pieces,
                   piece_locs=tuple(Location(result.path, l, c) for l, c in sc.piece_lines), is_raw=sc.is_raw)
        for sc in result.string_constants
    ]
