"""The construct a line of a C++ file sits in: its function, or the namespace-level declaration (a table, a
kernel body constant), qualified by the namespaces and classes written around it, read from the tree-sitter
parse tree. A finding names it (``symbol``), so a baseline exemption names a construct and not a line that any
edit above it moves.
"""

from __future__ import annotations


def _name_of_definition(node) -> str | None:
    from kernel_ports.frontend.declarations import _declarator_name, _function_declarator

    if node.type == "function_definition":
        _, inner = _function_declarator(node.child_by_field_name("declarator"))
        if inner is None:
            return None
        return inner.text.decode("utf-8", "replace").split("<")[0].strip()
    if node.type in ("declaration", "field_declaration"):
        names = [_declarator_name(d) for d in node.children_by_field_name("declarator")]
        names = [n for n in names if n]
        return names[0] if names else None
    return None


def symbols_of_lines(data: bytes, lines) -> dict:
    """line -> the innermost function (else the outermost declaration) around it, qualified by its namespaces and
    classes as written around it (a `ns::f` definition keeps its own qualifier)."""
    from kernel_ports.frontend.witness import cpp_parser

    tree = cpp_parser().parse(data)
    out = {}
    for line in set(lines):
        row = line - 1
        node, function, declaration, classes = tree.root_node, None, None, []
        while True:
            inner = next((c for c in node.named_children if c.start_point.row <= row <= c.end_point.row), None)
            if inner is None:
                break
            node = inner
            if node.type == "function_definition":
                function = _name_of_definition(node)
            elif node.type in ("declaration", "field_declaration") and declaration is None and function is None:
                declaration = _name_of_definition(node)
            elif node.type in ("class_specifier", "struct_specifier", "namespace_definition") and function is None:
                n = node.child_by_field_name("name")
                if n is not None:  # an anonymous namespace adds nothing
                    classes.append(n.text.decode("utf-8", "replace"))
        name = function or declaration
        if name and classes and "::" not in name:
            name = "::".join(classes + [name])
        out[line] = name
    return out
