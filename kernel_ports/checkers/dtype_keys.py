"""KP201/KP202: dtype keys in the template args of every kernel launch.

A backend whose JIT cache key is ``name + hash(template_args)`` (the
registry's ``cache_key_has_dtypes: false``) compiles a kernel once per key, so
a launch whose template args name no input dtype reuses the first dtype's
kernel for every later one.  The rule reads Invocation facts: one per distinct
configuration variant of a launch (an invocation in a header is one fact
however many files include it), with its template-arg entries and inputs
already followed by the front end.

* A launch is judged once per table it can resolve to that has a port on a
  dtype-blind backend (``kernel=`` that table's registry kernel), and once,
  fail-closed, when its table is unknown or it bypasses the table through an
  accessor (``kernel=None``).
* Inputs fall into classes of equal dtype (copies, ``astype(a, x.dtype())``,
  dtype comparisons in the launching function); classes holding a fixed-dtype
  input are fixed.  A non-constant ``Dtype`` key covers the class of the array
  it is taken from, or of the ``Dtype`` parameter it arrives as.
* KP201: no key covers a varying class (and no untraceable ``Dtype`` key
  exists).  KP202: some varying class is still uncovered (untraceable keys are
  assumed to cover one class each).
* Variants of one launch that reach the same verdict are one finding; it
  names the configurations when they are not all those the file was parsed in.
"""

from __future__ import annotations

from kernel_ports.checkers.base import Context, Rule
from kernel_ports.findings import Finding

UNKNOWN = "unknown"
KEYS = "\x00keys\x00"  # placeholder for the keys present, filled per group of variants


class _Classes:
    """Union-find over array names: one class per group of equal dtypes."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _input_label(inp) -> str:
    return inp.name or inp.text


def _dtype_classes(inv, inputs) -> tuple:
    """(classes of inputs with equal dtypes, labels of the fixed-dtype inputs)."""
    classes = _Classes()
    fixed_names = set()
    for i in inputs:
        label = _input_label(i)
        classes.find(label)
        for other in i.dtype_follows:
            classes.union(label, other)
        if i.dtype_fixed is True:
            fixed_names.add(label)
    for a, b in inv.dtype_checks:
        classes.union(a, b)
    return classes, fixed_names


def _trace_keys(inv, classes) -> tuple:
    """(constant keys, labels of the inputs keyed, stray keys, opaque keys) of the Dtype template args.

    A key names a class through the array its dtype is taken from, or the Dtype parameter it arrives as (an
    input cast to that parameter follows it); both names join one class, so `classes` grows here.
    """
    dtype_entries = [e for e in inv.template_args if e.is_dtype]
    constant_keys = [e for e in dtype_entries if e.constant]
    known = set(classes.parent)
    covered_names, stray, opaque = [], [], []
    for e in dtype_entries:
        if e.constant:
            continue
        names = [n for n in (e.source_input, e.parameter) if n]
        hit = [n for n in names if n in known]
        if hit:
            for n in names:
                classes.union(hit[0], n)
            covered_names.append(hit[0])
        elif e.source_input:
            stray.append(e)  # the dtype of an array that is not an input
        else:
            opaque.append(e)  # a non-constant Dtype traced to no array (a parameter nobody passes, a member)
    return constant_keys, covered_names, stray, opaque


class DtypeKeys(Rule):
    codes = ("KP201", "KP202")

    def check(self, ctx: Context):
        registry, index = ctx.registry, ctx.index
        blind = tuple(b for b in registry.dtype_blind_backends())
        tables = {t.name: t for t in index.port_tables}
        all_configs = frozenset(c.name for c in registry.compile.configurations)
        # Variants of one launch (configurations whose template args differ)
        # that reach the same verdict are reported once; the keys each holds
        # are listed, with what only some configurations add.
        found: dict = {}
        accessors: dict = {}
        for acc in index.accessors:
            accessors.setdefault(acc.name, []).extend(acc.factory_calls)
        for inv in index.invocations:
            for target in self._targets(inv, tables, registry, blind, accessors):
                for code, template in self._judge(inv, target):
                    key = (inv.loc, code, template, target["kernel"])
                    found.setdefault(key, []).append(inv)
        for (loc, code, template, kernel), variants in sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
            parsed = self._parsed_configurations(index, loc.path) or all_configs
            configs = set().union(*(v.configurations for v in variants))
            configuration = None if not configs or configs >= set(parsed) else ",".join(sorted(configs))
            message = template.replace(KEYS, self._keys_text(variants))
            yield Finding(code, loc.path, loc.line, loc.column, message, kernel=kernel, configuration=configuration)

    # ------------------------------------------------------------- scope
    @staticmethod
    def _parsed_configurations(index, path) -> set:
        units = {path} | index.includers_of(path)
        return {cfg for p, cfg in index.clang_files if p in units}

    def _targets(self, inv, tables, registry, blind, accessors=None):
        """One judgement per table the launch can run (only those on a dtype-blind cache).

        Yields dicts: kernel (registry name or None), why (the exposure, for the
        message).
        """
        out = []
        for name in inv.tables:
            if name == UNKNOWN:
                why = "its port table could not be resolved"
                if inv.kernel_from_parameter:
                    why += f" (the kernel object `{inv.callee_text}` arrives as a parameter and no caller could be followed)"
                out.append({"kernel": None, "why": why + "; judged as if it may run on a dtype-blind backend"})
                continue
            table = tables.get(name)
            kernel = registry.kernel_for_table(name)
            kname = kernel.name if kernel is not None else None
            if table is None:
                out.append({"kernel": kname, "why": f"its port table `{name}` was not found in the code; judged as if it may run on a dtype-blind backend"})
                continue
            ports = [b for b in blind if table.slots.get(b) is not None]
            if ports:
                plural = len(ports) > 1
                out.append({"kernel": kname, "why": f"`{name}` has a {' and a '.join(ports)} port, whose JIT cache key{'s' if plural else ''} "
                                                    f"ignore{'' if plural else 's'} input dtypes"})
        for acc in inv.accessors:
            # the accessor bypasses the table (KP103 says so); the factories it
            # builds with say which backends the kernel can be compiled for
            reached = (accessors or {}).get(acc) or []
            backends = sorted({fc.backend for fc in reached})
            exposed = [b for b in backends if b in blind or b not in registry.backends]
            if backends and not exposed:
                continue  # every factory it reaches keys its JIT cache by input dtype
            if exposed:
                why = (f"the kernel is taken straight from the accessor `{acc}`, bypassing its port table, and that accessor builds it "
                       f"with a {' and a '.join(exposed)} factory, whose JIT cache key{'s' if len(exposed) > 1 else ''} "
                       f"ignore{'' if len(exposed) > 1 else 's'} input dtypes")
            else:
                why = (f"the kernel is taken straight from the accessor `{acc}`, bypassing its port table, and no factory call could be "
                       f"followed from it, so its backend is unknown; judged as if it may run on a dtype-blind backend")
            out.append({"kernel": None, "why": why})
        return out

    # ------------------------------------------------------------- judgement
    def judge(self, inv, why: str) -> list:
        """(code, message) pairs for one launch as if its table had a
        dtype-blind port; the ROCm checklist asks this before a port exists."""
        return list(self._judge(inv, {"kernel": None, "why": why}))

    def _judge(self, inv, target):
        """(code, message) pairs for one invocation variant and one table."""
        inputs = list(inv.inputs)
        varying = [i for i in inputs if i.dtype_fixed is not True]
        if not varying:
            return  # no input, or every input has a fixed dtype: one key serves them all
        classes, fixed_names = _dtype_classes(inv, inputs)
        unknown_inputs = [i for i in varying if i.name is None and i.how == "unresolved"]
        constant_keys, covered_names, stray, opaque = _trace_keys(inv, classes)
        fixed_classes = {classes.find(n) for n in fixed_names}
        covered = {classes.find(n) for n in covered_names}
        varying_classes: dict = {}
        for i in varying:
            c = classes.find(_input_label(i))
            if c not in fixed_classes:
                varying_classes.setdefault(c, []).append(i)
        if not varying_classes:
            return
        key_counts = bool(covered & set(varying_classes)) or bool(opaque) or (bool(stray) and bool(unknown_inputs))

        where = self._where(inv)
        if not key_counts:
            yield from self._no_input_key(inv, target, where, varying_classes, constant_keys, stray)
            return
        yield from self._partial_keys(inv, target, where, varying_classes, covered, unknown_inputs, opaque)

    def _no_input_key(self, inv, target, where, varying_classes, constant_keys, stray):
        """KP201: no key covers a varying class; the message says what was found instead."""
        uncovered = [i for c, members in varying_classes.items() for i in members]
        names = ", ".join(f"`{_input_label(i)}`" for i in uncovered)
        suggestion = self._suggest(inv, varying_classes, list(varying_classes)[:1])
        if not inv.template_args_resolved:
            because = f" ({'; '.join(inv.unresolved)})" if inv.unresolved else ""
            fix = ("Make the declarations it needs visible to the check (the missing header, or a stub in an include dir). "
                   if inv.unresolved else "")
            yield ("KP201", f"launch {where}: {target['why']}, and its template args `{self._short(inv.template_args_text)}` could not be followed "
                            f"completely{because} (entries found: {KEYS}), so no input dtype key could be confirmed; inputs whose dtype is not keyed: "
                            f"{names}. {fix}Build the template args where they can be read (a named vector, push_back/emplace_back, an inline list "
                            f"or a helper returning them) and add {suggestion}")
            return
        extra = ""
        if constant_keys:
            extra += "; " + ", ".join(f"`{e.value_text}`" for e in constant_keys) + " is a constant dtype, which does not follow the inputs"
        if stray:
            extra += "; " + ", ".join(f"`{e.value_text}`" for e in stray) + " is the dtype of an array that is not an input"
        yield ("KP201", f"launch {where}: {target['why']}, but its template args name no input dtype (keys present: {KEYS}{extra}); "
                        f"inputs whose dtype is not keyed: {names}. Add {suggestion} to the template args, or the first dtype "
                        f"to run is reused for every other dtype")

    def _partial_keys(self, inv, target, where, varying_classes, covered, unknown_inputs, opaque):
        """KP202: some varying class is still uncovered (an untraceable key is assumed to cover one class)."""
        uncovered_classes = [c for c in varying_classes if c not in covered]
        if unknown_inputs:
            uncovered_classes = [c for c in uncovered_classes if not any(i in unknown_inputs for i in varying_classes[c])]
        if not uncovered_classes or len(uncovered_classes) <= len(opaque):
            return
        names = ", ".join(f"`{_input_label(i)}`" for c in uncovered_classes for i in varying_classes[c])
        suggestion = self._suggest(inv, varying_classes, uncovered_classes)
        note = ""
        if opaque:
            note = (f" ({', '.join(f'`{e.value_text}`' for e in opaque)} could not be traced to an input, so it is counted as keying "
                    f"at most one of them)")
        if not inv.template_args_resolved:
            because = f": {'; '.join(inv.unresolved)}" if inv.unresolved else ""
            note += f" (part of the template args `{self._short(inv.template_args_text)}` could not be followed{because})"
        yield ("KP202", f"launch {where}: {target['why']}; keys present: {KEYS}; inputs whose dtype is not keyed and varies "
                        f"independently of every keyed dtype: {names}{note}. Add {suggestion}, cast the input to a keyed input's "
                        f"dtype (`astype(a, x.dtype())`), fix its dtype, or check it equal to a keyed input's dtype")

    # ------------------------------------------------------------- text
    @classmethod
    def _where(cls, inv) -> str:
        callee = inv.callee_text.strip()
        text = f"`{callee}(...)`" if callee.replace("_", "").replace(".", "").replace("->", "").isalnum() and not inv.in_macro else "of a custom kernel"
        if inv.in_macro:
            text += " inside a macro expansion"
        return text + (f" in {inv.enclosing_function}" if inv.enclosing_function else "")

    @staticmethod
    def _short(text: str, limit: int = 80) -> str:
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def _entry_text(self, e) -> str:
        name = f'"{e.name}"' if e.name is not None else "?"
        return f"{{{name}: {self._short(e.value_text, 40)}}}"

    def _keys_text(self, variants) -> str:
        per = [(v, [self._entry_text(e) for e in v.template_args]) for v in variants]
        common = [k for k in per[0][1] if all(k in keys for _, keys in per)]
        text = ", ".join(common) if common else "none"
        extras = []
        for v, keys in sorted(per, key=lambda p: sorted(p[0].configurations)):
            only = [k for k in keys if k not in common]
            if only:
                extras.append(f"{', '.join(only)} in configuration {','.join(sorted(v.configurations))}")
        if extras:
            text += " (plus " + "; ".join(extras) + ")"
        return text

    @staticmethod
    def _suggest(inv, varying_classes, wanted) -> str:
        used = {e.name for e in inv.template_args if e.name}
        out = []
        for c in wanted:
            members = varying_classes[c]
            # name the input itself; prefer a plain variable over an expression
            inp = next((i for i in members if i.name), members[0])
            label = _input_label(inp)
            key = "T" if "T" not in used else f"T_{label}" if label.isidentifier() else f"T{len(used)}"
            used.add(key)
            out.append(f'`{{"{key}", {label}.dtype()}}`' if label.isidentifier() else f'`{{"{key}", ({label}).dtype()}}`')
        return " and ".join(out)
