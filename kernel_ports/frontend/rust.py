"""Rust gates and seam calls, read with tree-sitter-rust.

A *gate* is a boolean decision: an ``if``/``while`` condition (an if/else-if
chain is one gate listing its conditions in order), a ``match`` (arms and
patterns), a ``let`` of a boolean expression, a free-standing ``||``/``&&``
expression, and the body of a function returning ``bool``.  For each the
front end records the boolean structure (:class:`GateExpr`) and the calls made,
with their path prefixes as written (``crate::ffi::metal_is_available``), and
whether it sits in test-only code (a ``#[cfg(test)]`` module or a ``#[test]``
function).  Comments and doc comments are not code to tree-sitter, so names
there never appear.
"""

from __future__ import annotations

import tree_sitter_rust
from tree_sitter import Language, Parser

from kernel_ports.facts import GateExpr, Location, RustGate, SeamCall
from kernel_ports.scope.limits import bounded_parser

_LANGUAGE = Language(tree_sitter_rust.language())


def rust_parser() -> Parser:
    return bounded_parser(Parser(_LANGUAGE))


def _t(node) -> str:
    return node.text.decode("utf-8", "replace")


def _attrs_before(node) -> list:
    out = []
    sib = node.prev_named_sibling
    while sib is not None and sib.type in ("attribute_item", "line_comment", "block_comment"):
        if sib.type == "attribute_item":
            out.append(_t(sib).replace(" ", ""))
        sib = sib.prev_named_sibling
    return out


def _is_test_item(node) -> bool:
    attrs = _attrs_before(node)
    if node.type == "mod_item":
        return any("cfg(test)" in a for a in attrs)
    if node.type == "function_item":
        return any(a in ("#[test]", "#[tokio::test]") or a.endswith("::test]") or "cfg(test)" in a for a in attrs)
    return False


def _callee_path(call) -> str:
    fn = call.child_by_field_name("function")
    if fn is None:
        return ""
    if fn.type == "generic_function":
        fn = fn.child_by_field_name("function") or fn
    return "".join(_t(fn).split())


def _calls_in(node) -> list:
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            out.append((n, _callee_path(n)))
        if n.type in ("line_comment", "block_comment"):
            continue
        stack.extend(reversed(n.named_children))
    return out


def _tail(block):
    """The value of a block: its last expression without a semicolon."""
    kids = [c for c in block.named_children if c.type not in ("line_comment", "block_comment")]
    if not kids:
        return None
    last = kids[-1]
    if last.type == "expression_statement":
        # block-like expressions (if, match, unsafe) are wrapped without a ';'
        if _t(last).rstrip().endswith(";") or not last.named_children:
            return None
        return last.named_children[0]
    return last


def gate_expr(node) -> GateExpr:
    t = node.type
    text = _t(node)
    if t == "parenthesized_expression" and node.named_children:
        return gate_expr(node.named_children[0])
    if t == "block":
        tail = _tail(node)
        return gate_expr(tail) if tail is not None else GateExpr(op="other", text=text)
    if t == "unsafe_block" or t == "expression_statement":
        inner = node.named_children[-1] if node.named_children else None
        return gate_expr(inner) if inner is not None else GateExpr(op="other", text=text)
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        ops = _t(op) if op is not None else ""
        if ops in ("||", "&&"):
            args = []
            for side in (node.child_by_field_name("left"), node.child_by_field_name("right")):
                g = gate_expr(side)
                args.extend(g.args if g.op == ops else (g,))
            return GateExpr(op=ops, text=text, args=tuple(args))
        return GateExpr(op=ops or "other", text=text,
                        args=tuple(gate_expr(s) for s in (node.child_by_field_name("left"), node.child_by_field_name("right")) if s is not None))
    if t == "unary_expression" and text.lstrip().startswith("!"):
        inner = node.named_children[0] if node.named_children else None
        return GateExpr(op="!", text=text, args=(gate_expr(inner),) if inner is not None else ())
    if t == "call_expression":
        path = _callee_path(node)
        name = path.split("::")[-1].split(".")[-1]
        return GateExpr(op="call", text=text, path=path, name=name)
    if t == "boolean_literal":
        return GateExpr(op="lit", text=text)
    if t == "if_expression":
        conds, values = _if_chain(node)
        return GateExpr(op="if", text=text, args=tuple(gate_expr(c) for c in conds),
                        patterns=tuple(_t(v) for v in values))
    if t == "match_expression":
        body = node.child_by_field_name("body")
        arms, pats = [], []
        if body is not None:
            for arm in body.named_children:
                if arm.type != "match_arm":
                    continue
                pat = arm.child_by_field_name("pattern")
                val = arm.child_by_field_name("value")
                pats.append(_t(pat) if pat is not None else "")
                arms.append(gate_expr(val) if val is not None else GateExpr(op="other", text=""))
        scrut = node.child_by_field_name("value")
        return GateExpr(op="match", text=text, args=tuple(arms), patterns=tuple(pats),
                        path=_t(scrut) if scrut is not None else None)
    return GateExpr(op="other", text=text)


def _if_chain(node):
    """Conditions and branch bodies of an if / else-if / else chain."""
    conds, values = [], []
    cur = node
    while cur is not None and cur.type == "if_expression":
        c = cur.child_by_field_name("condition")
        if c is not None:
            conds.append(c)
        cons = cur.child_by_field_name("consequence")
        if cons is not None:
            values.append(cons)
        alt = cur.child_by_field_name("alternative")
        cur = None
        if alt is not None:
            nxt = alt.named_children[0] if alt.named_children else None
            if nxt is not None and nxt.type == "if_expression":
                cur = nxt
            elif nxt is not None:
                values.append(nxt)
    return conds, values


def _fn_returns_bool(fn) -> bool:
    rt = fn.child_by_field_name("return_type")
    return rt is not None and _t(rt).strip() == "bool"


def analyze(path: str, data: bytes, seams=()):
    """(gates, seam_calls) for one Rust file."""
    tree = rust_parser().parse(data)
    gates: list = []
    seam_calls: list = []
    seams = set(seams)
    consumed = set()  # if-expressions already part of a recorded chain, ors inside gates

    def loc(n):
        return Location(path, n.start_point.row + 1, n.start_point.column + 1)

    def add(kind, node, expr_node, fn_name, in_test):
        g = gate_expr(expr_node)
        calls = [p for _, p in _calls_in(expr_node)]
        for sub in [expr_node, *_descendants(expr_node)]:
            if sub.type in ("binary_expression", "if_expression", "match_expression", "unary_expression"):
                consumed.add(sub.id)
        gates.append(RustGate(loc=loc(node), kind=kind, function=fn_name, expr=g, calls=tuple(calls),
                              call_names=tuple(p.split("::")[-1].split(".")[-1] for p in calls),
                              in_cfg_test=in_test, text=_t(expr_node)[:300]))

    def visit(node, fn_name, in_test, fn_node):
        t = node.type
        if t in ("line_comment", "block_comment"):
            return
        if t in ("mod_item", "function_item") and _is_test_item(node):
            in_test = True
        if t == "function_item":
            name = node.child_by_field_name("name")
            fn_name = _t(name) if name is not None else None
            fn_node = node
            if fn_name in seams:
                seam_calls.append(SeamCall(loc=loc(node), name=fn_name, language="rust", is_definition=True,
                                           in_test=in_test, enclosing_function=None))
            body = node.child_by_field_name("body")
            if body is not None and _fn_returns_bool(node):
                add("fn_body", node, body, fn_name, in_test)
        elif t == "function_signature_item":
            name = node.child_by_field_name("name")
            if name is not None and _t(name) in seams:
                seam_calls.append(SeamCall(loc=loc(node), name=_t(name), language="rust", is_declaration=True,
                                           in_test=in_test, enclosing_function=None))
        elif t == "if_expression" and node.id not in consumed:
            conds, _ = _if_chain(node)
            if len(conds) > 1:
                add("if", node, node, fn_name, in_test)
            elif conds:
                add("if", node, conds[0], fn_name, in_test)
            cur = node
            while cur is not None and cur.type == "if_expression":
                consumed.add(cur.id)
                alt = cur.child_by_field_name("alternative")
                cur = alt.named_children[0] if alt is not None and alt.named_children else None
        elif t == "while_expression":
            c = node.child_by_field_name("condition")
            if c is not None:
                add("while", node, c, fn_name, in_test)
        elif t == "match_expression" and node.id not in consumed and _calls_in(node):
            add("match", node, node, fn_name, in_test)
        elif t == "let_declaration":
            v = node.child_by_field_name("value")
            ty = node.child_by_field_name("type")
            if v is not None and v.id not in consumed and ((ty is not None and _t(ty) == "bool") or _is_boolean_shape(v)):
                add("let", node, v, fn_name, in_test)
        elif t == "binary_expression" and node.id not in consumed and _is_boolean_shape(node):
            add("expr", node, node, fn_name, in_test)
        elif t == "call_expression":
            path_ = _callee_path(node)
            name = path_.split("::")[-1].split(".")[-1]
            if name in seams:
                seam_calls.append(SeamCall(loc=loc(node), name=name, language="rust",
                                           is_forwarding=_is_forwarding(fn_node, node), in_test=in_test,
                                           enclosing_function=fn_name))
        for ch in node.named_children:
            visit(ch, fn_name, in_test, fn_node)

    visit(tree.root_node, None, False, None)
    return gates, seam_calls


def _descendants(node):
    stack = list(node.named_children)
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.named_children)


def _is_boolean_shape(node) -> bool:
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator")
        return op is not None and _t(op) in ("||", "&&")
    if node.type == "unary_expression":
        return _t(node).lstrip().startswith("!")
    if node.type == "parenthesized_expression" and node.named_children:
        return _is_boolean_shape(node.named_children[0])
    return False


def _is_forwarding(fn_node, call) -> bool:
    """The call is all a wrapper function does (possibly inside `unsafe { }`),
    passing its own parameters through."""
    if fn_node is None:
        return False
    params = fn_node.child_by_field_name("parameters")
    names = set()
    if params is not None:
        for p in params.named_children:
            pat = p.child_by_field_name("pattern")
            if pat is not None:
                names.add(_t(pat))
    args = call.child_by_field_name("arguments")
    passed = [a for a in (args.named_children if args is not None else []) if a.type not in ("line_comment", "block_comment")]
    if any(_t(a) not in names for a in passed):
        return False
    body = fn_node.child_by_field_name("body")
    if body is None:
        return False
    node = body
    while True:
        kids = [c for c in node.named_children if c.type not in ("line_comment", "block_comment")]
        if len(kids) != 1:
            return False
        k = kids[0]
        if k.id == call.id:
            return True
        if k.type in ("expression_statement", "unsafe_block", "block", "return_expression"):
            node = k
            continue
        return False
