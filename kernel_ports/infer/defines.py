"""Empty definitions for macros used as declaration specifiers and defined nowhere in the tree.

An export attribute (`MLXCEL_API bool f();`, `class FOO_API Bar {...}`) comes
from the build's command line. Without it Clang reads the name as an unknown
type and loses the declaration, so init defines it empty. A name counts when
tree-sitter reads it as a type in front of another type or declarator, it is
written in capitals (the macro convention; a real type named so is rare and
would be declared in the tree), and no `#define`, class, typedef or alias in
the tree declares it.
"""

from __future__ import annotations

import re

_MACRO_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_TYPEISH = {"primitive_type", "type_identifier", "type_qualifier", "sized_type_specifier", "qualified_identifier",
            "template_type", "ERROR", "struct_specifier", "class_specifier", "storage_class_specifier"}
_RECORDS = ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier")


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def scan_specifiers(root) -> tuple:
    """(candidate name -> [first line, uses], names the file defines or declares as types)."""
    used: dict = {}
    declared: set = set()
    stack = [root]
    while stack:
        node = stack.pop()
        t = node.type
        if t in ("preproc_def", "preproc_function_def"):
            n = node.child_by_field_name("name")
            if n is not None:
                declared.add(_text(n))
            continue
        if t in ("type_definition", "alias_declaration"):
            for c in node.children_by_field_name("declarator") or [node.child_by_field_name("name")]:
                if c is not None and c.type == "type_identifier":
                    declared.add(_text(c))
        if t in ("declaration", "function_definition", "field_declaration"):
            _specifier_candidates(node, used)
        if t in _RECORDS and node.child_by_field_name("body") is not None:
            name = node.child_by_field_name("name")
            if name is not None:  # `struct S {...}` declares S (`class FOO_API Bar {...}` has no body on FOO_API)
                declared.add(_text(name))
        stack.extend(node.children)
    return used, declared


def _specifier_candidates(node, used: dict) -> None:
    children = [c for c in node.children if c.type != "comment"]
    ty = node.child_by_field_name("type")
    if ty is not None and ty.type == "type_identifier":
        name = _text(ty)
        after = children[children.index(ty) + 1:] if ty in children else []
        if _MACRO_NAME.match(name) and after and after[0].type in _TYPEISH:
            _use(used, name, node)
    if ty is not None and ty.type in _RECORDS and ty.child_by_field_name("body") is None:
        # `class FOO_API Bar {...}` reads as a class named FOO_API and a variable Bar initialised by `{...}`;
        # `struct FOO_EXPORT S {...}` as a function S returning `struct FOO_EXPORT`
        name = ty.child_by_field_name("name")
        declared_after = [c for c in node.children_by_field_name("declarator")]
        if name is not None and _MACRO_NAME.match(_text(name)) and declared_after:
            _use(used, _text(name), node)


def _use(used: dict, name: str, node) -> None:
    line = node.start_point.row + 1
    entry = used.setdefault(name, [line, 0])
    entry[0] = min(entry[0], line)
    entry[1] += 1
