"""Bodies chosen by a condition: ``const std::string source = probe ? "...A..." : "...B...";`` handed to
``hip_kernel``. The runtime may build either, so each branch is a body of its own. Read with tree-sitter from the
factory call's file: the last declaration of the named local before the call whose initializer is a conditional
between string literals (a branch that is not only literals leaves the choice unread)."""

from __future__ import annotations

from kernel_ports.frontend import witness
from kernel_ports.frontend.device.build_model import Piece


def _pieces(path: str, node) -> tuple | None:
    got = witness._string_pieces(node)
    if not got:
        return None
    out = []
    for text, raw, n in got:
        if raw:
            content = [c for c in n.named_children if c.type == "raw_string_content"]
            start = content[0].start_point if content else n.end_point
        else:
            start = (n.start_point[0], n.start_point[1] + n.text.index(b'"') + 1)
        out.append(Piece(path=path, line=start[0] + 1, column=start[1] + 1, text=text, raw=raw))
    return tuple(out)


def conditional_bodies(path: str, data: bytes, name: str, before_line: int) -> list:
    """[(branch pieces, condition text)] of the local ``name``'s conditional initializer, else []."""
    tree = witness.cpp_parser().parse(data)
    found = None
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.start_point[0] + 1 > before_line:
            continue
        if n.type == "init_declarator" and witness._declarator_name(n.child_by_field_name("declarator")) == name:
            value = n.child_by_field_name("value")
            if value is not None and value.type == "conditional_expression":
                if found is None or n.start_point > found.start_point:
                    found = value
        stack.extend(n.named_children)
    if found is None:
        return []
    condition = found.child_by_field_name("condition")
    branches = [_pieces(path, found.child_by_field_name(f)) for f in ("consequence", "alternative")]
    if any(b is None for b in branches):
        return []
    cond = condition.text.decode("utf-8", "replace") if condition is not None else "?"
    return [(branches[0], cond), (branches[1], f"!({cond})")]
