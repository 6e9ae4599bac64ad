"""Which function bodies the Clang walk may leave unread.

Most of a large launcher file is ordinary host code (shape checks, small
helpers) in which no fact can arise, and walking its AST through libclang was
half of the walk's time. A body is left unread only when nothing the checker
follows can reach it or be reached from it, decided on the witness's syntactic
view of the whole project (:mod:`.declarations`: what each namespace-level
declaration declares -- functions, types, storage with the words it is written
with -- and every identifier its text mentions). Three sets grow to a fixpoint:

* *valued* declarations, where a value the checker follows (a backend query's
  result, a kernel, a port table, what a test of one decides) may be. The
  *forced* ones: their text (template header, signature, body, comments and
  strings included) contains a witness candidate (any factory/selector/
  backend-query call, nine-argument call, table ...), a seed name (the
  registry's factories, selector, ``has_kernel_port``, table type, backend
  queries and the backend enum they return, test seams and predicates, MLX's
  ``CustomKernelFunction``), a macro the project or the registry defines (an
  expansion can hold anything), a ``*_available`` name, or lines tree-sitter
  could not parse. Then those that mention a followed name, and the functions
  a valued one calls that can be given such a value (a parameter written with
  other than inert words, below);
* *followed* names, every mention of which is valued: the seeds, what a valued
  declaration declares (but its types: naming a type passes nothing; a forced
  record's own name is followed, as its constructor may take the backend enum,
  whose tests are judged by what every caller passes), a function a valued one
  calls that can be given the value (its result may be the value, or a test in
  it decides what its callers return), and the
  storage a read declaration names that may hold such a value: not *inert*,
  written only with MLX's array and stream, standard containers and smart
  pointers of those, locks, and project records made only of such fields;
* *read* declarations: the valued ones and everything a read one names (its
  callees, the records it uses), so the call graph out of every read function
  is whole.

A name qualified by a namespace the project never opens (``mlx::core::add``,
``std::move``) names nothing of the project's. A name written only after ``.``
or ``->`` is a member: no free function, and storage only where a member of
that name may hold a followed value. So a helper the real engine's bridge
wraps MLX with is read when a launcher calls it, but its other callers, which
pass it arrays, are not.

Only the bodies of free functions (unqualified name at namespace scope; not
methods, constructors, operators) that end up unread are left unread;
the walk still records the function itself (name, parameters, result), so
the index knows every function, but not what its body calls. Everything a
rule consumes -- facts, and the call graph out of any read function --
is unchanged (``tests/frontend/test_focus.py`` compares full and focused
walks).

Most of those bodies are not even given to Clang (:func:`hidden_spans`): a body
nothing outside it depends on (``declarations.hideable_body``: no deduced result,
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


# What a variable or field may be declared with and still hold nothing the checker follows: MLX's array and stream
# values, the standard containers and smart pointers of those, locks. No backend query returns one (a query's
# value is an enum or a bool, copied only into storage of a type it converts to without a constructor), and no
# kernel, port table, source text or dtype fits in one. Where the walk follows an array through a field
# (`w.inner.dtype()`), it names the field as written and follows no write to it.
INERT_WORDS = frozenset({"mlx", "core", "array", "Stream", "ThreadLocalStream", "std", "vector", "unique_ptr",
                         "shared_ptr", "mutex", "once_flag"})
_QUALIFIERS = frozenset({"const", "volatile", "static", "mutable", "inline", "thread_local", "extern", "struct",
                         "class", "typename", "public", "private", "protected", "virtual"})


def inert_words(defs: list, declared: set) -> frozenset:
    """The words storage or a parameter may be written with and hold nothing the checker follows: ``INERT_WORDS``,
    qualifiers, and the project's records whose fields and bases all are, to a fixpoint. A project name spelled
    like one of the words could be anything, so that word no longer counts."""
    words = (INERT_WORDS - declared) | _QUALIFIERS
    records: dict = {}  # record name -> the words of each of its fields and bases
    for d in defs:
        if d.kind == "record" and d.name:
            records.setdefault(d.name, []).extend(w for _, w in d.storage)
    inert_records: set = set()
    grown = True
    while grown:
        grown = False
        for r, ws in records.items():
            if r not in inert_records and all(w and set(w) <= words | inert_records for w in ws):
                inert_records.add(r)
                grown = True
    return frozenset(words | inert_records)


def inert_storage(defs: list, declared: set, ok: frozenset | None = None) -> frozenset:
    """The storage names whose every declaration is written with inert words only (``ok``, else
    :func:`inert_words`); an enumerator, or storage written with no words, never is."""
    ok = inert_words(defs, declared) if ok is None else ok
    by_name: dict = {}  # storage name -> [the words of each declaration]
    for d in defs:
        for n, w in d.storage:
            by_name.setdefault(n, []).append(w)
    return frozenset(n for n, ws in by_name.items() if n and all(w and set(w) <= ok for w in ws))


def unread_bodies(witnessed: dict, seed_names: frozenset, queries: frozenset = frozenset(),
                  defined_macros: frozenset = frozenset()) -> dict:
    """path -> frozenset of (line, column) of the ``{`` of each free-function body the walk may leave unread.

    ``queries``: the backend queries' names, whose declared result type (a project type: the backend enum) is
    interesting too."""
    seed_names = set(seed_names)
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
    kinds = _channels([d for _, d in defs], declared)
    declared |= macros
    foreign = foreign_roots([d for _, d in defs])
    # (a body's mentions of names only members have count only where written as a member: the same set as
    # ``d.mentions - (only_members - d.accessed)``, without a copy of ``only_members`` per declaration)
    mentions = [(((m - only_members) | (m & d.accessed)) if d.body is not None else m)
                - {n for n, roots in d.qualified if foreign.issuperset(roots)}
                for m, d in ((d.mentions & declared, d) for _, d in defs)]
    read = _read(defs, mentions, _forced(witnessed, defs, seed_names, macros), seed_names, kinds)
    out: dict = {}
    for (path, d), hot in zip(defs, read):
        if not hot and d.kind == "function" and d.body is not None:
            out.setdefault(path, set()).add(d.body)
    return {p: frozenset(b) for p, b in out.items()}


# namespaces that hold no project declaration unless the project opens them: a name qualified by one of them
# (`mlx::core::add`, `std::move`) is MLX's or the standard library's, whatever the project calls its own functions
FOREIGN_NAMESPACES = frozenset({"std", "mlx"})


def foreign_roots(defs: list) -> frozenset:
    """The first segments of qualified names that name nothing of the project's: ``FOREIGN_NAMESPACES`` the
    project never opens, and the namespace aliases of those (an alias the project also gives another meaning, or
    names like any other declaration, is not one)."""
    opened = {d.name for d in defs if d.kind == "namespace"}
    roots = set(FOREIGN_NAMESPACES - opened)
    aliases: dict = {}
    for d in defs:
        if d.kind == "namespace_alias":
            aliases.setdefault(d.name, set()).add(d.result)
    named = {n for d in defs for n in d.declares}
    roots |= {a for a, targets in aliases.items() if targets <= roots and a not in named and a not in opened}
    return frozenset(roots)


def _channels(defs: list, declared: set) -> tuple:
    """(the declared names a value the checker follows may be kept in: storage that is not inert, and any name
    whose kind the witness could not tell; the names of functions that are not constructors)."""
    storage = {n for d in defs for n, _ in d.storage}
    types = {n for d in defs for n in d.types}
    named_functions = {n for d in defs for n in d.functions}
    told = storage | types | named_functions
    functions = named_functions - types
    methods = {n for d in defs if d.kind == "record" for n in d.functions} - types
    ok = inert_words(defs, declared)
    # whether a declaration may be given a followed value: not a function all of whose parameters are inert
    receives = [d.kind not in ("function", "declaration") or d.parameters is None
                or any(not w or not set(w) <= ok for w in d.parameters) for d in defs]
    return (storage - inert_storage(defs, declared, ok)) | (declared - told), functions, methods, types, receives


def _forced(witnessed: dict, defs: list, seed_names: set, macros: set) -> list:
    """The declarations read whatever else holds: a witness candidate inside, lines tree-sitter could not parse,
    a seed name, a project or registry macro (an expansion can hold anything), a `*_available` name."""
    candidate_lines = {p: sorted({c.line for c in w.candidates}) for p, w in witnessed.items()}
    out = []
    for path, d in defs:
        lines = candidate_lines.get(path, ())
        k = bisect.bisect_left(lines, d.first_line)
        out.append(
            any(a <= d.last_line and d.first_line <= b for a, b in witnessed[path].error_lines)
            or (k < len(lines) and lines[k] <= d.last_line)
            or not d.mentions.isdisjoint(seed_names)
            or not d.mentions.isdisjoint(macros)
            or d.availability
        )
    return out


def _read(defs: list, mentions: list, forced: list, seed_names: set, kinds: tuple) -> list:
    """Which declarations are read: the fixpoint of the module docstring's rules, over three sets. ``read``: the
    declarations whose text the walk reads. ``valued``: those a value the checker follows may be in (the forced,
    those that mention a followed name, and the functions a valued one calls, which it may pass such a value).
    ``followed``: the names every mention of which is valued (what a valued declaration declares, the functions a
    valued one calls, whose result may then be such a value or decide a test, the seeds, and the storage a read
    declaration names)."""
    channels, functions, methods, types, receives = kinds
    declarers: dict = {}
    mentioners: dict = {}
    # what a declaration names as a function or as followed storage: a name written only after `.` or `->` is a
    # member, so it names no free function, and no storage unless a member of that name may hold a followed value
    using = [m - {n for n in d.dotted if n not in methods and n not in channels} for m, (_, d) in zip(mentions, defs)]
    for i, (_, d) in enumerate(defs):
        for n in d.declares:
            declarers.setdefault(n, []).append(i)
        for n in using[i]:
            mentioners.setdefault(n, []).append(i)
    read = [False] * len(defs)
    valued = [False] * len(defs)
    followed: set = set()
    to_value = [i for i, f in enumerate(forced) if f]
    to_read: list = []
    # a forced record's own name too: its constructor may take the backend enum, whose tests are judged by what
    # every caller passes
    to_follow = list(seed_names) + [n for i in to_value for n in defs[i][1].declares]
    while to_read or to_follow or to_value:
        while to_value:
            i = to_value.pop()
            if valued[i]:
                continue
            valued[i] = True
            to_read.append(i)
            to_follow.extend(n for n in defs[i][1].declares if n not in types)
            for n in using[i] & functions:  # a function it calls may be given the value, and return or test it
                takers = [j for j in declarers.get(n, ()) if receives[j]]
                if takers:
                    to_follow.append(n)
                    to_value.extend(takers)
        while to_follow:
            n = to_follow.pop()
            if n not in followed:
                followed.add(n)
                to_value.extend(mentioners.get(n, ()))  # a mention of a followed name: the value may be there
        while to_read:
            i = to_read.pop()
            if read[i]:
                continue
            read[i] = True
            for n in mentions[i]:
                to_read.extend(declarers.get(n, ()))  # what a read declaration names is read
                if n in channels:
                    to_follow.append(n)  # and the storage it names, followed to every use
    return read


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
