"""Build configurations from the preprocessor guards around target constructs.

A default parse sees only what the default build sees: a `hip_kernel` call
behind `#ifdef MLXCEL_BRIDGE_ROCM_BACKEND` is invisible to it, and so is the
`.rocm` slot that returns it. This module reads the tree-sitter parse tree of
every file (no text patterns) and records, for every target construct — a
factory call, a port-table declaration, a port-table slot, a holder or
accessor definition, a kernel launch (a nine-argument call), a template-args
entry — the conditions of the `#ifdef` / `#ifndef` / `#if` / `#elif` /
`#else` branches it sits in. The macros a construct needs *defined* become a
configuration; what it needs undefined is what the default configuration
already gives.

Conditions understood: `defined(X)`, `X`, `!…` of either, `&&` of any of
them, parentheses. Anything else (`X > 2`, `||`) is not guessed at: the
construct is reported as guarded by a condition init could not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFINED, TRUE, UNDEFINED = "defined", "true", "undefined"
_SLOTS = ("metal", "cuda", "rocm")
_HOLDER_NAME = re.compile(r"^(get|make)_\w*kernel\w*$")
_ARG_PUSHERS = ("push_back", "emplace_back")


@dataclass(frozen=True)
class Construct:
    kind: str  # factory_call | port_table | slot | holder | launch | template_arg
    path: str
    line: int
    backend: str | None  # the backend a factory call or slot names
    needs: tuple  # ((macro, DEFINED|TRUE|UNDEFINED), ...) of the branches it sits in
    unreadable: str = ""  # text of a condition that could not be read, if any


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def _negate(atoms):
    """The negation of a conjunction, when it is a single atom (else unknown: None)."""
    if atoms is None or len(atoms) != 1:
        return None
    macro, need = atoms[0]
    return [(macro, UNDEFINED if need in (DEFINED, TRUE) else DEFINED)]


def condition_atoms(node):
    """[(macro, need)] a condition node requires, all of them; None when it is not a conjunction init reads."""
    t = node.type
    if t == "preproc_defined":
        names = [c for c in node.named_children if c.type == "identifier"]
        return [(_text(names[0]), DEFINED)] if names else None
    if t == "identifier":
        return [(_text(node), TRUE)]
    if t == "parenthesized_expression" and node.named_children:
        return condition_atoms(node.named_children[0])
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        if op is not None and _text(op) == "!" and arg is not None:
            return _negate(condition_atoms(arg))
        return None
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        if op is None or _text(op) != "&&":
            return None
        left = condition_atoms(node.child_by_field_name("left"))
        right = condition_atoms(node.child_by_field_name("right"))
        return None if left is None or right is None else left + right
    return None


def _branch_children(node):
    """(children of the branch taken when the test holds, the alternative node or None)."""
    alt = node.child_by_field_name("alternative")
    skip = {_key(alt)} if alt is not None else set()
    for name in ("name", "condition"):
        c = node.child_by_field_name(name)
        if c is not None:
            skip.add(_key(c))
    body = [c for c in node.named_children if _key(c) not in skip and c.type != "comment"]
    return body, alt


def _key(node) -> tuple:
    """A node's identity (tree-sitter makes a new wrapper object at every access)."""
    return node.start_byte, node.end_byte, node.type


def _ifdef_atoms(node):
    name = node.child_by_field_name("name")
    if name is None:
        return None
    negative = node.children and _text(node.children[0]).strip() == "#ifndef"
    return [(_text(name), UNDEFINED if negative else DEFINED)]


def _construct(node, names):
    """(kind, backend) when the node is a target construct, else None."""
    t = node.type
    if t == "call_expression":
        from kernel_ports.frontend.witness import callee_name

        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        name = callee_name(fn) if fn is not None else None
        if name in names.factories:
            return "factory_call", names.factories[name]
        if args is not None and sum(1 for c in args.named_children if c.type != "comment") == 9 \
                and fn is not None and fn.type != "qualified_identifier":
            # a kernel object is a local, member or returned reference; `ns::f(...)` with nine arguments is a function
            return "launch", None
        if name in _ARG_PUSHERS and args is not None and args.named_children:
            first = args.named_children[0]
            if first.type == "string_literal" or (first.type == "initializer_list" and first.named_children
                                                  and first.named_children[0].type == "string_literal"):
                return "template_arg", None
        return None
    if t == "initializer_pair":
        designator = node.child_by_field_name("designator")
        slot = _text(designator).lstrip(".") if designator is not None else ""
        if slot in _SLOTS:
            return "slot", slot
        return None
    if t == "assignment_expression" and node.parent is not None and node.parent.type == "initializer_list":
        # `.rocm = ...` after a directive tree-sitter could not place: the designator reads as a field access
        left = node.child_by_field_name("left")
        field = left.child_by_field_name("field") if left is not None and left.type == "field_expression" else None
        if field is not None and _text(field) in _SLOTS:
            return "slot", _text(field)
        return None
    if t == "declaration":
        ty = node.child_by_field_name("type")
        if ty is not None and _text(ty).split("::")[-1] == names.table_type:
            return "port_table", None
        return None
    if t == "function_definition":
        from kernel_ports.frontend.declarations import _function_declarator

        _, inner = _function_declarator(node.child_by_field_name("declarator"))
        fname = _text(inner).split("::")[-1].split("<")[0].strip() if inner is not None else ""
        if _HOLDER_NAME.match(fname):
            return "holder", None
    return None


def guarded_constructs(path: str, root, names) -> list:
    """Every target construct of one parse tree that sits inside a preprocessor branch."""
    out = []
    stray = stray_branches(root)
    # (node, needs, unreadable text)
    stack = [(root, (), "")]
    while stack:
        node, needs, unreadable = stack.pop()
        t = node.type
        if t == "comment":
            continue
        if t in ("preproc_ifdef", "preproc_if", "preproc_elif", "preproc_elifdef", "preproc_else"):
            _enter_branch(node, needs, unreadable, stack)
            continue
        found = _construct(node, names)
        if found is not None:
            line = node.start_point.row + 1
            extra = [b for b in stray if b[0] <= line <= b[1]]
            all_needs = needs + tuple(a for b in extra if b[2] is not None for a in b[2])
            why = unreadable or next((b[3] for b in extra if b[2] is None), "")
            if all_needs or why:
                out.append(Construct(found[0], path, line, found[1], all_needs, why))
        stack.extend((c, needs, unreadable) for c in reversed(node.children))
    return out


def _enter_branch(node, needs, unreadable, stack) -> None:
    t = node.type
    if t == "preproc_else":
        stack.extend((c, needs, unreadable) for c in reversed(node.named_children))
        return
    if t in ("preproc_ifdef", "preproc_elifdef"):
        atoms = _ifdef_atoms(node)
        cond_text = ""
    else:
        cond = node.child_by_field_name("condition")
        atoms = _atoms_or_none(cond)
        cond_text = _text(cond)[:200] if cond is not None else "?"
    body, alt = _branch_children(node)
    if atoms is None:
        taken, taken_unreadable = needs, unreadable or cond_text
    else:
        taken, taken_unreadable = needs + tuple(atoms), unreadable
    stack.extend((c, taken, taken_unreadable) for c in reversed(body))
    if alt is not None:
        negated = _negate(atoms)
        if negated is None:
            stack.append((alt, needs, unreadable or cond_text or "?"))
        else:
            stack.append((alt, needs + tuple(negated), unreadable))


def _atoms_or_none(cond):
    """condition_atoms, with a condition nested too deep to read (a hostile tree) read as unknown."""
    if cond is None:
        return None
    try:
        return condition_atoms(cond)
    except RecursionError:
        return None


def required_defines(needs) -> tuple | None:
    """The defines a construct's branches need, each `X` or `X=1`; None when they contradict each other."""
    state: dict = {}
    for macro, need in needs:
        prev = state.get(macro)
        if prev is not None and (prev == UNDEFINED) != (need == UNDEFINED):
            return None
        state[macro] = TRUE if TRUE in (prev, need) else need
    return tuple(sorted(f"{m}=1" if s == TRUE else m for m, s in state.items() if s != UNDEFINED))


_DIRECTIVES = ("#if", "#ifdef", "#ifndef", "#elif", "#elifdef", "#elifndef", "#else", "#endif")


def _directive_atoms(kind: str, rest: str):
    """The atoms of a directive's test, read by parsing it alone as a preprocessor block."""
    if kind in ("#ifdef", "#ifndef", "#elifdef", "#elifndef"):
        name = rest.split()[0] if rest.split() else ""
        if not re.match(r"^[A-Za-z_]\w*$", name):
            return None
        return [(name, UNDEFINED if kind.endswith("ndef") else DEFINED)]
    from kernel_ports.frontend.witness import cpp_parser

    tree = cpp_parser().parse(f"#if {rest}\n#endif\n".encode())
    node = tree.root_node.named_children[0] if tree.root_node.named_children else None
    cond = node.child_by_field_name("condition") if node is not None and node.type == "preproc_if" else None
    return _atoms_or_none(cond)


def stray_branches(root) -> list:
    """(first line, last line, atoms or None, condition text) of the branches whose directives tree-sitter could
    only keep as error tokens (a directive inside an initializer list or an expression)."""
    tokens = []
    stack = [root] if root.has_error else []
    while stack:
        node = stack.pop()
        if node.type == "ERROR":
            for c in node.children:
                if not c.is_named and c.type in _DIRECTIVES:
                    tokens.append((c.start_point.row + 1, c.type, c))
        stack.extend(c for c in node.children if c.has_error)
    if not tokens:
        return []
    out, open_ = [], []  # open_: [start line, atoms, text, previous atoms of the chain]
    for line, kind, tok in sorted(tokens, key=lambda x: x[0]):
        rest = _rest_of_line(tok)
        if kind in ("#if", "#ifdef", "#ifndef"):
            atoms = _directive_atoms(kind, rest)
            open_.append([line, atoms, rest.strip(), []])
        elif not open_:
            continue
        else:
            start, atoms, text, before = open_[-1]
            out.append((start, line - 1, atoms, "" if atoms is not None else text))
            if kind == "#endif":
                open_.pop()
                continue
            before = before + [atoms]
            negated = [_negate(a) for a in before]
            own = [] if kind == "#else" else _directive_atoms(kind, rest)
            if own is None or any(n is None for n in negated):
                open_[-1] = [line, None, rest.strip() or text, before]
            else:
                open_[-1] = [line, [x for n in negated for x in n] + own, "", before]
    return out


def _rest_of_line(tok) -> str:
    """The text after a directive token up to the end of its line, in the file's own bytes."""
    node = tok
    while node.parent is not None:
        node = node.parent
    data = node.text
    start = tok.end_byte
    end = data.find(b"\n", start)
    return data[start: end if end >= 0 else len(data)].decode("utf-8", "replace")
