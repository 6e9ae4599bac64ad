"""Which function bodies the Clang walk may leave unread.

Most of a large launcher file is ordinary host code (shape checks, small
helpers) in which no fact can arise, and walking its AST through libclang was
half of the walk's time. A body is left unread only when nothing the checker
follows can reach it or be reached from it by name, decided on the witness's
syntactic view of the whole project:

* the names the checker follows seed the set of *interesting* names: the
  registry's factories, selector, ``has_kernel_port``, table type, backend
  queries (and the type they return: the backend enum), test seams and
  predicates, MLX's ``CustomKernelFunction``, and any ``*_available`` name;
* a namespace-level declaration (function, record with all its members,
  variable, alias) is interesting when its text (template header, signature,
  body, comments and strings included) mentions an interesting name, contains
  a witness candidate (any factory/selector/backend-query call, nine-argument
  call, table ...), mentions a macro the project or the registry defines
  (an expansion can hold anything), or overlaps lines tree-sitter could not
  parse;
* an interesting declaration makes every project-declared name it mentions,
  and what it declares, interesting -- to a fixpoint. So callers and callees
  of interesting functions, variables and members that a query's value may
  flow into, helpers of helpers, are all interesting.

Only the bodies of free functions (unqualified name at namespace scope; not
methods, constructors, operators) that end up uninteresting are left unread;
the walk still records the function itself (name, parameters, result), so
the index knows every function, but not what its body calls. Everything a
rule consumes -- facts, and the call graph from any interesting function --
is unchanged (``tests/frontend/test_focus.py`` compares full and focused
walks).

Most of those bodies are not even given to Clang (:func:`hidden_spans`): a body
nothing outside it depends on (``witness.hideable_body``: no deduced result,
not constexpr, no directive inside) is blanked in the text Clang parses, lines
and columns kept, so Clang spends nothing on it either. What is lost is a
Clang error inside such a body, which no fact could have come from
(``tests/frontend/test_hidden_bodies.py``).
"""

from __future__ import annotations

import bisect

# MLX's API name of the kernel type (SPEC section 1), like MLX_DTYPE in frontend/clang/walk.py.
MLX_KERNEL_TYPE = "CustomKernelFunction"


def seeds(registry) -> frozenset:
    conv = registry.conventions
    names = {b.factory for b in registry.backends.values()}
    names |= {conv.selector, conv.has_port, conv.table_type, *conv.backend_queries}
    names |= {s.name for s in conv.test_seams}
    names |= {p for k in registry.kernels for p in k.predicates}
    return frozenset(n.split("::")[-1] for n in names if n) | {MLX_KERNEL_TYPE}


def backend_queries(registry) -> frozenset:
    return frozenset(q.split("::")[-1] for q in registry.conventions.backend_queries)


def unread_bodies(witnessed: dict, seed_names: frozenset, queries: frozenset = frozenset(),
                  defined_macros: frozenset = frozenset()) -> dict:
    """path -> frozenset of (line, column) of the ``{`` of each free-function body the walk may leave unread.

    ``queries``: the backend queries' names, whose declared result type (a project type: the backend enum) is
    interesting too."""
    seed_names = set(seed_names)
    queries = set(queries)
    defs = []  # (path, Definition)
    declared: set = set()
    members: set = set()
    macros = set(defined_macros)
    for path, w in witnessed.items():
        macros |= w.macros
        for d in w.definitions:
            defs.append((path, d))
            declared.update(d.declares)
            members.update(d.members)
    # names declared only as a record's fields or methods: a free function can name one of them only after `.`,
    # `->` or `::`, so elsewhere in its text the same word is a local of its own (a `rows` variable is not the
    # `rows` field of some struct)
    non_members = set()
    for _, d in defs:
        non_members.update(n for n in d.declares if n not in d.members)
    only_members = members - non_members
    # the backend enum: the project type a backend query is declared to return (its enumerators follow through
    # the fixpoint, the enum declaring them)
    for _, d in defs:
        if d.kind in ("function", "declaration") and d.name in queries and d.result in declared:
            seed_names.add(d.result)
    declared |= macros
    candidate_lines = {p: sorted({c.line for c in w.candidates}) for p, w in witnessed.items()}

    interesting = [False] * len(defs)
    waiting: dict = {}  # name -> [def index] of declarations that become interesting with it
    queue = []
    mentions = [d.mentions - (only_members - d.accessed) if d.body is not None else d.mentions for _, d in defs]
    for i, (path, d) in enumerate(defs):
        lines = candidate_lines.get(path, ())
        k = bisect.bisect_left(lines, d.first_line)
        forced = (
            any(a <= d.last_line and d.first_line <= b for a, b in witnessed[path].error_lines)
            or (k < len(lines) and lines[k] <= d.last_line)
            or not d.mentions.isdisjoint(seed_names)
            or not d.mentions.isdisjoint(macros)
            or d.availability
        )
        if forced:
            queue.append(i)
        else:
            for name in mentions[i] & declared:
                waiting.setdefault(name, []).append(i)
    known = set(seed_names)
    while queue:
        i = queue.pop()
        if interesting[i]:
            continue
        interesting[i] = True
        d = defs[i][1]
        for name in (mentions[i] & declared) | set(d.declares):
            if name not in known:
                known.add(name)
                queue.extend(waiting.pop(name, ()))
    out: dict = {}
    for (path, d), hot in zip(defs, interesting):
        if not hot and d.kind == "function" and d.body is not None:
            out.setdefault(path, set()).add(d.body)
    return {p: frozenset(b) for p, b in out.items()}


def hidden_spans(witnessed: dict, unread: dict) -> dict:
    """path -> sorted (start, end) byte offsets of the unread bodies Clang may be given blank (see the module
    docstring); ``witnessed`` with its definitions, ``unread`` from :func:`unread_bodies`."""
    out: dict = {}
    for path, bodies in unread.items():
        w = witnessed.get(path)
        spans = sorted(d.body_span for d in (w.definitions if w is not None else ())
                       if d.body is not None and d.body_span is not None and d.body in bodies)
        if spans:
            out[path] = tuple(spans)
    return out
