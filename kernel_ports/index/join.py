"""The joins across translation units, on the merged function records (``FunctionInfo`` by Clang USR).

Reachability follows a port-table slot's getter through accessor, holder and helper functions to the factory
calls it can make, binding constant arguments and template arguments on the way (a call guarded by a test
on a parameter whose bound value fails it is not followed). Value references (``clang.values.sources``) resolve to
the selector calls and tables they can come from, through returned values and the callers' arguments.
"""

from __future__ import annotations

import dataclasses

from kernel_ports.facts import ChainStep
from kernel_ports.frontend import clang


class FunctionTable:
    """The function records of the results merged by USR. Results may be added in any order (the build adds the
    cached ones while the changed units still parse, then the parsed ones): the records are merged when
    :attr:`functions` is first read, each USR's versions in the order of their units and configurations, so the
    merge is the same whichever results came from the cache (a record's call list, for one, is its first
    version's calls and then the calls only the later ones make)."""

    def __init__(self):
        self._versions: dict = {}  # usr -> [((unit path, configuration, position in its list), record)]
        self._functions: "dict | None" = None
        self.fn_configs: dict = {}
        self.added = 0  # how many results, from the front of the build's list

    def add(self, results: list) -> None:
        assert self._functions is None, "results added after the records were merged"
        for r in results:
            for position, info in enumerate(r.functions):
                self._versions.setdefault(info.usr, []).append(((r.path, r.configuration, position), info))
                self.fn_configs.setdefault(info.usr, set()).add(r.configuration)
        self.added += len(results)

    @property
    def functions(self) -> dict:
        """usr -> the merged record, in the order the units and configurations first name them."""
        if self._functions is None:
            merged = []
            for versions in self._versions.values():
                if len(versions) > 1:
                    versions.sort(key=lambda v: v[0])
                cur = versions[0][1]
                # units that read one header share its records (cache/units.py): merging one into itself is a no-op
                others = [other for _, other in versions[1:] if other is not cur]
                if others:
                    Joiner._merge_fns(cur, others)
                merged.append((versions[0][0], cur))
            merged.sort(key=lambda m: m[0])
            self._functions = {info.usr: info for _, info in merged}
            self._versions = {}
        return self._functions


class Joiner:
    def __init__(self, index, registry, results: list, conv, table: "FunctionTable | None" = None):
        self.index = index
        self.registry = registry
        self.conv = conv
        table = table if table is not None else FunctionTable()
        table.add(results[table.added:])
        self.functions: dict = table.functions
        self.fn_configs: dict = table.fn_configs
        # callers: callee usr -> [(caller usr, edge)]
        self.callers: dict = {}
        for usr, info in self.functions.items():
            for e in info.calls:
                self.callers.setdefault(e.callee_usr, []).append((usr, e))
        self._reach_cache: dict = {}

    @staticmethod
    def _merge_fns(cur, others: list):
        """Merge each of ``others`` into ``cur``, in order: a call or factory call ``cur`` lacks is added (one place,
        one factory call, its configurations the union), the rest joined. What is looked up is built once for all
        of them, not once per version (a header's function has a version per unit and configuration)."""
        have = {(e.callee_usr, e.loc) for e in cur.calls}
        have_f = {fc.loc: i for i, (fc, _) in enumerate(cur.factory_calls)}
        queries = set(cur.backend_queries)
        for other in others:
            # (a call another version has twice is added twice: each version's own list is kept as it is)
            added = [e for e in other.calls if (e.callee_usr, e.loc) not in have]
            cur.calls.extend(added)
            have.update((e.callee_usr, e.loc) for e in added)
            appended = []
            for fc, g in other.factory_calls:
                if fc.loc in have_f:
                    i = have_f[fc.loc]
                    old, og = cur.factory_calls[i]
                    cur.factory_calls[i] = (dataclasses.replace(old, configurations=old.configurations | fc.configurations), og)
                else:
                    cur.factory_calls.append((fc, g))
                    appended.append((fc.loc, len(cur.factory_calls) - 1))
            have_f.update(appended)  # (the last of one place's, as a lookup made afresh would say)
            cur.returned = cur.returned | other.returned
            cur.body_walked = cur.body_walked or other.body_walked
            cur.invokes = cur.invokes or other.invokes
            cur.selects = cur.selects or other.selects
            queries.update(other.backend_queries)
            cur.has_port_args = cur.has_port_args + tuple(a for a in other.has_port_args if a not in cur.has_port_args)
            if not cur.returned_statics:
                cur.returned_statics = other.returned_statics
        cur.backend_queries = tuple(sorted(queries))

    # ------------------------------------------------------------ reachability
    @staticmethod
    def _guards_ok(guards, env) -> bool:
        for g in guards:
            if g.param in env:
                if (env[g.param] in g.values) == g.negated:
                    return False
        return True

    def _bind(self, edge, callee, env, owner=None) -> dict:
        new = {}

        def val(ref):
            if ref is None:
                return None
            if ref[0] == "const":
                return ref[1]
            if ref[0] in ("param", "tparam") and isinstance(ref[1], str):
                return env.get(ref[1])
            return None

        for i, t in enumerate(edge.targs):
            if i < len(callee.template_params):
                v = val(t)
                if v is not None:
                    new[callee.template_params[i]] = v
        for i, refs in enumerate(edge.args):
            if i >= len(callee.params):
                break
            vals = set()
            for r in refs:
                if r[0] == "param" and isinstance(r[1], int):
                    caller_param = owner.params[r[1]] if owner is not None and 0 <= r[1] < len(owner.params) else None
                    vals.add(env.get(caller_param) if caller_param else None)
                else:
                    vals.add(val(r))
            if len(vals) == 1 and None not in vals:
                new[callee.params[i]] = vals.pop()
        return new

    def reach(self, start_edges: list, env: dict) -> tuple:
        """(factory calls, chain steps) reachable from a getter's edges under env."""
        found: dict = {}
        steps: dict = {}
        visited = set()

        def visit(usr, env, depth):
            key = (usr, tuple(sorted(env.items())))
            if key in visited or depth > 12:
                return
            visited.add(key)
            info = self.functions.get(usr)
            if info is None:
                return
            for fc, guards in info.factory_calls:
                if self._guards_ok(guards, env):
                    found.setdefault(fc.loc, fc)
                    steps.setdefault(("factory", str(fc.loc)), ChainStep(kind="factory", name=fc.factory, loc=fc.loc))
            for e in info.calls:
                follow(e, env, depth, info)

        def follow(e, env, depth, owner):
            if not self._guards_ok(e.guards, env):
                return
            callee = self.functions.get(e.callee_usr)
            if callee is None:
                return
            new_env = self._bind(e, callee, env, owner)
            kind = self._step_kind(e, callee, depth)
            steps.setdefault((e.callee_usr, tuple(sorted(new_env.items()))), ChainStep(
                kind=kind, name=e.spelling if kind == "accessor" else callee.qualified_name, usr=e.callee_usr,
                loc=callee.loc, bindings=tuple(sorted(new_env.items()))))
            visit(e.callee_usr, new_env, depth + 1)

        for e in start_edges:
            follow(e, env, 0, None)
        return list(found.values()), list(steps.values())

    def _step_kind(self, edge, callee, depth):
        if depth == 0 and edge.returns_ref and not edge.is_method:
            return "accessor"
        if callee.is_method_of or callee.usr.endswith("#init"):
            return "holder"
        return "helper"

    def reach_from(self, usr: str, env: dict) -> tuple:
        key = (usr, tuple(sorted(env.items())))
        if key not in self._reach_cache:
            info = self.functions.get(usr)
            if info is None:
                self._reach_cache[key] = ([], [])
            else:
                pseudo = clang.CallEdge(usr, info.qualified_name, info.name, info.loc, (), ())
                self._reach_cache[key] = self.reach([pseudo], dict(env))
        return self._reach_cache[key]

    # --------------------------------------------------------- value refs
    def resolve(self, refs, owner_usr: str, depth=0, want=("selector", "table")) -> tuple:
        """Resolve value refs (clang.values.sources) to selector ids / table names."""
        out = set()
        unknown = False
        accessors = set()
        for r in refs:
            k = r[0]
            if k == "selector" and "selector" in want:
                out.add(("selector", r[1]))
            elif k == "table" and "table" in want:
                out.add(("table", r[1]))
            elif k == "accessor":
                accessors.add(r[2])
            elif k == "call" and depth < 6:
                info = self.functions.get(r[1])
                if info is None or not info.returned:
                    unknown = True
                    continue
                sub, u, acc = self.resolve(info.returned, r[1], depth + 1, want)
                out |= sub
                accessors |= acc
                unknown = unknown or u
            elif k == "param" and isinstance(r[1], int) and r[1] >= 0 and depth < 6:
                callers = self.callers.get(owner_usr, [])
                if not callers:
                    unknown = True
                for caller_usr, e in callers:
                    if r[1] < len(e.args):
                        sub, u, acc = self.resolve(e.args[r[1]], caller_usr, depth + 1, want)
                        out |= sub
                        accessors |= acc
                        unknown = unknown or u
                    else:
                        unknown = True
            else:
                unknown = True
        return out, unknown, accessors
