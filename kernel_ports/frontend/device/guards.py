"""Values a launcher's own guards name for a template constant: ``if (dim != 64 && dim != 128) throw ...``,
``switch (dim) { case 64: ... }``. Read with tree-sitter from the launching function (the innermost function
definition around the launch), before the launch: each integer the variable is compared with (``==``/``!=``) or
switched to is a value the launcher lets through or turns away; either is a value the body is built with on
the path where the guard holds, so a device build tries them before any guess."""

from __future__ import annotations

from kernel_ports.frontend import witness

MAX_VALUES = 4  # per constant


def _function_at(root, line: int):
    best = None
    stack = [root]
    while stack:
        n = stack.pop()
        if not (n.start_point[0] + 1 <= line <= n.end_point[0] + 1):
            continue
        if n.type == "function_definition":
            best = n
        stack.extend(n.named_children)
    return best


def _integer(node):
    if node is None or node.type != "number_literal":
        return None
    text = node.text.decode("ascii", "replace").rstrip("uUlL")
    try:
        return int(text, 0)
    except ValueError:
        return None


def guard_values(data: bytes, line: int, variables: set) -> dict:
    """variable -> the integers (each once) the launching function's guards before ``line`` compare it with."""
    fn = _function_at(witness.cpp_parser().parse(data).root_node, line)
    out: dict = {}
    if fn is None:
        return out
    stack = [fn]
    while stack:
        n = stack.pop()
        if n.start_point[0] + 1 > line:
            continue
        stack.extend(reversed(n.named_children))
        pairs = []
        if n.type == "binary_expression" and n.child_by_field_name("operator") is not None \
                and n.child_by_field_name("operator").type in ("==", "!="):
            a, b = n.child_by_field_name("left"), n.child_by_field_name("right")
            pairs = [(a, b), (b, a)]
        elif n.type == "switch_statement":
            cond = n.child_by_field_name("condition")
            ident = cond.named_children[0] if cond is not None and cond.named_children else None
            body = n.child_by_field_name("body")
            cases = [c for c in (body.named_children if body is not None else ()) if c.type == "case_statement"]
            pairs = [(ident, c.child_by_field_name("value")) for c in cases]
        for var, value in pairs:
            v = _integer(value)
            if var is not None and var.type == "identifier" and v is not None:
                name = var.text.decode("utf-8", "replace")
                if name in variables and v not in out.setdefault(name, []) and len(out[name]) < MAX_VALUES:
                    out[name].append(v)
    return {k: tuple(v) for k, v in out.items()}

