"""What a C-family file declares at namespace level, read by tree-sitter: :class:`Definition` and
:func:`definitions`, for the focus (:mod:`kernel_ports.frontend.focus`) to decide which function bodies the Clang walk
may leave unread. A declaration is read as written (no includes, no types): what it declares and every identifier
its text mentions, comments and strings included, with what kind of thing each declared name is (a function, a
type, or storage: a variable, field or enumerator, with the identifiers its declaration is written with).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def _declarator_name(node) -> str | None:
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return _text(node)
        if node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
            continue
        nxt = node.child_by_field_name("declarator")
        if nxt is None:
            named = [c for c in node.named_children if c.type in ("identifier", "field_identifier")]
            return _text(named[0]) if named else None
        node = nxt
    return None


@dataclass(frozen=True)
class Definition:
    """A namespace-level declaration as written: what it declares and every identifier its text mentions
    (comments and strings included), for deciding which function bodies the Clang walk may leave unread
    (:mod:`kernel_ports.frontend.focus`)."""

    kind: str  # function | record | declaration | other
    name: str  # the declared name (last segment), "" when none
    first_line: int  # 1-based, the template header included
    last_line: int
    mentions: frozenset
    declares: tuple = ()  # every name it declares: itself, fields, methods, enumerators, declarators
    body: tuple | None = None  # (line, column) of the `{` of a free function's body (unqualified name)
    result: str = ""  # a function's result type, its last identifier
    members: tuple = ()  # a record's fields and methods (also in declares)
    accessed: frozenset = frozenset()  # identifiers written after `.`, `->` or `::` (how a free function names a member)
    availability: bool = False  # it mentions a `*_available` name (an availability test, whatever it is)
    # (start, end) byte offsets of a free function's ``{ ... }`` when Clang can be given the function without it,
    # should the focus leave the body unread (``hideable_body`` below); None otherwise
    body_span: tuple | None = None
    # what each declared name is: a function (a free function, a method, a constructor), a type (a record, a nested
    # record, an alias), or storage (a variable, a field, an enumerator) with the identifiers its declaration is
    # written with, the name itself left out (its type and initialiser: ``("mlx", "core", "array")``; an enumerator
    # has none, its record's). A declared name in none of them is taken as storage written with unknown words.
    functions: tuple = ()
    types: tuple = ()
    storage: tuple = ()  # ((name, (identifier, ...)), ...)
    # identifiers the text writes only after `.` or `->` (a member of something, never a free function or variable)
    dotted: frozenset = frozenset()
    # identifiers the text writes only at the end of a qualified name, with the first segments of those names:
    # ((name, (root, ...)), ...) for `mlx::core::add` and `std::move`: ("add", ("mlx",)), ("move", ("std",))
    qualified: tuple = ()
    # a function's parameters, each by the identifiers its declaration is written with, the parameter's own name
    # left out (("...",) for `...`); None when the declaration is not one function or they could not be read
    parameters: tuple | None = None


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A function Clang needs the body of even where nothing calls it: a deduced result type (`auto`, `decltype(auto)`)
# is typed from its body, a constexpr or consteval function may be evaluated anywhere
_BODY_NEEDED = re.compile(rb"\b(?:auto|decltype|constexpr|consteval)\b")
# what in a body reaches past it: a preprocessor directive (`#`, or the `%:` digraph) defines, undefines or
# includes for the code after it; `_Pragma` may change how the code after it is read
_BODY_REACHES_OUT = re.compile(rb"(?m)^[ \t]*(?:#|%:)|_Pragma\b")
_ACCESSED = re.compile(r"(?:\.|->|::)\s*(?:template\s+)?([A-Za-z_][A-Za-z0-9_]*)")
_DOTTED = re.compile(r"(?:\.|->)\s*(?:template\s+)?([A-Za-z_][A-Za-z0-9_]*)")
# a qualified name from its first segment: `mlx::core::fast::metal_kernel`, `::std::move`, `ns::T<int>::size`
_QUALIFIED = re.compile(r"(?<![\w:.>])(?:::\s*)?([A-Za-z_]\w*)\s*::\s*(?:(?:template\s+)?[A-Za-z_]\w*\s*(?:<[^<>;{}()]*>)?\s*::\s*)*"
                        r"(?:template\s+)?([A-Za-z_]\w*)")
_SCOPES = {"translation_unit", "declaration_list", "namespace_definition", "linkage_specification", "preproc_if",
           "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"}
_RECORDS = {"struct_specifier", "class_specifier", "union_specifier", "enum_specifier"}


def _declared_names(node, kinds: "Kinds | None" = None) -> list:
    """The names ``node``'s declarators declare; ``kinds`` receives each as a function or as storage."""
    out = []
    for d in node.children_by_field_name("declarator"):
        _, inner = _function_declarator(d)
        name = _text(inner).split("::")[-1].split("<")[0].strip() if inner is not None else _declarator_name(d)
        if name:
            out.append(name)
            if kinds is not None and inner is not None:
                kinds.functions.append(name)
            elif kinds is not None:
                kinds.storage.append((name, node))
    return out


@dataclass
class Kinds:
    """What the names a declaration declares are, as :func:`definitions` collects them."""

    functions: list = dataclasses.field(default_factory=list)
    types: list = dataclasses.field(default_factory=list)
    storage: list = dataclasses.field(default_factory=list)  # (name, the declaration node it is written in)

    def fields(self) -> dict:
        def words(name, node):
            return tuple(sorted({w for w in _IDENTIFIER.findall(_text(node)) if w != name})) if node is not None else ()

        return {"functions": tuple(self.functions), "types": tuple(self.types),
                "storage": tuple((n, words(n, node)) for n, node in self.storage)}


def _record_names(record, members: list | None = None, kinds: Kinds | None = None) -> list:
    """The record's own name and what it declares inside (fields, methods, enumerators, nested types), bodies
    of methods not entered; ``members`` receives the fields and methods, ``kinds`` what each name is (its base
    classes are storage named "": what it inherits is held as a field is)."""
    out = []
    name = record.child_by_field_name("name")
    if name is not None:
        out.append(_text(name).split("::")[-1].split("<")[0].strip())
        if kinds is not None:
            kinds.types.append(out[-1])
    if kinds is not None:
        kinds.storage.extend(("", c) for c in record.children if c.type == "base_class_clause")
    stack = [c for c in record.children if c.type in ("field_declaration_list", "enumerator_list")]
    while stack:
        node = stack.pop()
        t = node.type
        if t == "compound_statement":
            continue
        if t == "enumerator":
            n = node.child_by_field_name("name")
            if n is not None:
                out.append(_text(n))
                if kinds is not None:
                    kinds.storage.append((out[-1], None))
            continue
        if t in ("field_declaration", "declaration", "function_definition"):
            names = _declared_names(node, kinds)
            out.extend(names)
            if members is not None:
                members.extend(names)
        elif t in ("alias_declaration", "type_definition"):
            names = _declared_names(node) + ([_text(node.child_by_field_name("name"))]
                                             if t == "alias_declaration" and node.child_by_field_name("name") else [])
            out.extend(names)
            if kinds is not None:
                kinds.types.extend(names)
        if t in _RECORDS and node is not record:
            n = node.child_by_field_name("name")
            if n is not None:
                out.append(_text(n).split("::")[-1].split("<")[0].strip())
                if kinds is not None:
                    kinds.types.append(out[-1])
                    kinds.storage.extend(("", c) for c in node.children if c.type == "base_class_clause")
        stack.extend(node.named_children)
    return out


def _function_declarator(decl):
    """(function_declarator, the name node inside it) of a function definition's declarator, through pointer and
    reference declarators; (None, None) when there is none."""
    node = decl
    while node is not None and node.type != "function_declarator":
        inner = node.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type.endswith("declarator")]
            inner = named[0] if named else None
        node = inner
    if node is None:
        return None, None
    name = node.child_by_field_name("declarator")
    return node, name


def hideable_body(span, node, body) -> tuple | None:
    """(start, end) of a free function's body when Clang can be given the function with the body blanked out:
    nothing outside the body depends on its text (no deduced result, not constexpr or consteval, no directive or
    ``_Pragma`` inside) and tree-sitter read the whole definition without an error. Blanked, a body the walk
    leaves unread costs Clang nothing (frontend/clang/session.py checks each against Clang's own view)."""
    if node.has_error or body.end_byte - body.start_byte < 2:
        return None
    head = span.text[: body.start_byte - span.start_byte]
    inner = body.text[1:-1]
    if body.text[-1:] != b"}" or _BODY_NEEDED.search(head) or _BODY_REACHES_OUT.search(inner):
        return None
    return body.start_byte, body.end_byte


def definitions(root) -> tuple:
    """The namespace-level declarations of a file (entering namespaces, linkage specifications, conditional
    blocks and templates, never a function body) and the macros it defines."""
    defs, macros = [], set()
    stack = [(root, None)]
    while stack:
        node, outer = stack.pop()
        t = node.type
        if t in ("preproc_def", "preproc_function_def"):
            n = node.child_by_field_name("name")
            if n is not None:
                macros.add(_text(n))
            continue
        if t == "template_declaration":
            stack.extend((c, outer or node) for c in node.named_children)
            continue
        if t in _SCOPES:
            if t == "namespace_definition" and not _inside_namespace(node):
                root = next((c for c in node.children if c.type in ("namespace_identifier", "nested_namespace_specifier")), None)
                if root is not None:  # a namespace the file declares into, by its first segment
                    defs.append(Definition("namespace", _IDENTIFIER.findall(_text(root))[0], node.start_point.row + 1,
                                           node.start_point.row + 1, frozenset()))
            stack.extend((c, outer) for c in node.named_children)
            continue
        if t == "namespace_alias_definition":
            parts = [_text(c) for c in node.children if c.type in ("namespace_identifier", "nested_namespace_specifier")]
            if len(parts) == 2:  # `namespace mx = mlx::core;`: mx, and the first segment of what it names
                defs.append(Definition("namespace_alias", parts[0], node.start_point.row + 1, node.start_point.row + 1,
                                       frozenset(), result=_IDENTIFIER.findall(parts[1])[0]))
            continue
        if t in ("comment", "preproc_include", "template_parameter_list", "namespace_identifier") or not node.is_named:
            continue
        defs.append(_definition(node, t, outer or node))
    return defs, macros


def _definition(node, t: str, span) -> Definition:
    """The Definition of the namespace-level declaration ``node`` (of type ``t``) whose text is ``span``'s (the
    template declaration around it, else itself)."""
    text = _text(span)
    words = _IDENTIFIER.findall(text)
    mentions = frozenset(words)
    first, last = span.start_point.row + 1, span.end_point.row + 1
    # what every kind of declaration records of how its names are written
    how = dict(_how_named(text, words), availability="_available" in text and any(
        m.endswith("_available") for m in mentions))
    if t == "function_definition":
        fdecl, inner = _function_declarator(node.child_by_field_name("declarator"))
        name = _text(inner).split("::")[-1].split("<")[0].strip() if inner is not None else None
        body = node.child_by_field_name("body")
        free = (inner is not None and inner.type == "identifier" and fdecl is not None
                and body is not None and body.type == "compound_statement")
        ty = node.child_by_field_name("type")
        result = _IDENTIFIER.findall(_text(ty))[-1:] if ty is not None else []
        return Definition("function", name or "", first, last, mentions, (name,) if name else (),
                          (body.start_point.row + 1, body.start_point.column + 1) if free else None,
                          result[0] if result else "",
                          accessed=frozenset(_ACCESSED.findall(text)) if free else frozenset(),
                          body_span=hideable_body(span, node, body) if free else None,
                          functions=(name,) if name else (), parameters=_parameters(fdecl), **how)
    if t in _RECORDS:
        members: list = []
        kinds = Kinds()
        names = _record_names(node, members, kinds)
        return Definition("record", names[0] if names else "", first, last, mentions, tuple(names),
                          members=tuple(members), **kinds.fields(), **how)
    if t in ("declaration", "alias_declaration", "type_definition", "field_declaration"):
        kinds = Kinds()
        is_type = t in ("alias_declaration", "type_definition")
        names = _declared_names(node, None if is_type else kinds)
        if t == "alias_declaration" and node.child_by_field_name("name") is not None:
            names.append(_text(node.child_by_field_name("name")))
        if is_type:
            kinds.types.extend(names)
        ty = node.child_by_field_name("type")
        result = _IDENTIFIER.findall(_text(ty))[-1:] if ty is not None else []
        members = []
        for c in node.named_children:
            if c.type in _RECORDS:  # `struct S {...} s;` `typedef enum {...} E;`
                names.extend(_record_names(c, members, kinds))
        declarators = node.children_by_field_name("declarator")
        one = _function_declarator(declarators[0])[0] if len(declarators) == 1 and not is_type else None
        return Definition("declaration", names[0] if names else "", first, last, mentions, tuple(names),
                          None, result[0] if result else "", members=tuple(members), **kinds.fields(),
                          parameters=_parameters(one) if one is not None and not members else None, **how)
    return Definition("other", "", first, last, mentions, **how)


def _parameters(fdecl) -> tuple | None:
    """The ``parameters`` field of a function whose declarator is ``fdecl``."""
    plist = fdecl.child_by_field_name("parameters") if fdecl is not None else None
    if plist is None:
        return None
    out = []
    for p in plist.named_children:
        if p.type == "comment":
            continue
        if p.type == "variadic_parameter_declaration" or p.type == "..." or _text(p).strip() == "...":
            out.append(("...",))
            continue
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            return None
        decl = p.child_by_field_name("declarator")
        name = _declarator_name(decl) if decl is not None else None
        out.append(tuple(sorted({w for w in _IDENTIFIER.findall(_text(p)) if w != name})))
    if any(c.type == "..." for c in plist.children):
        out.append(("...",))
    return tuple(out)


def _how_named(text: str, words: list) -> dict:
    """The ``dotted`` and ``qualified`` fields of a declaration of this text (``words``: its identifiers)."""
    every = Counter(words)
    dotted = Counter(_DOTTED.findall(text))
    roots: dict = {}
    for m in _QUALIFIED.finditer(text):
        roots.setdefault(m.group(2), []).append(m.group(1))
    return {"dotted": frozenset(n for n, k in dotted.items() if every[n] == k),
            "qualified": tuple(sorted((n, tuple(sorted(set(r)))) for n, r in roots.items() if every[n] == len(r)))}


def _inside_namespace(node) -> bool:
    up = node.parent
    while up is not None:
        if up.type == "namespace_definition":
            return True
        up = up.parent
    return False
