"""What each HIP body is built as: its text as pieces of its file, and the variants (dtype and constant
assignments) the launches that reach it allow, read from the index's facts (factory calls, the bodies they
compile, the port tables that reach them, the invocations of those tables).

Dtypes: an input keyed by a dtype template argument takes that argument's dtype; an input whose dtype the call
site fixes takes it (a scalar ``array{eps}`` is float32); every other input, output and dtype argument takes the
activation dtype, float32, float16 and bfloat16 in turn, unless a launch passes a constant dtype. Integer and
bool constants: the launch's value when Clang evaluates one, else the registry's ``compile_assume``, else a few
guessed values (named in the variant, so a finding never rests on one guess).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Optional

from kernel_ports.frontend.device.build_model import BodyBuild, Piece, Variant
from kernel_ports.index.device_reads import TreeReads, code_digest  # noqa: F401 (code_digest: device.py's keys)

ACTIVATION_DTYPES = ("float32", "float16", "bfloat16")
GUESSED_INTS = ("128", "256")  # tried in turn for an integer constant nothing states
GUESSED_BOOLS = ("false", "true")
GUESSED_BITS = ("4", "8")  # quantization widths
GUESSED_GROUPS = ("64", "32")  # quantization group sizes
GUESSED_PAGES = ("16", "32")  # KV-cache page sizes
GUESSED_COUNTS = ("4", "8")  # counts of heads, warps, splits, repeats, items per thread
_COUNT_NAME = re.compile(r"^(?:Num|N[A-Z])|Per[A-Z]|Rep|Heads|Warps|Splits|Rounds|_per_|^num_")
_RAW_OPEN = re.compile(r'(?:u8|u|U|L)?R"([^(\s]{0,16})\(')
_PLAIN = re.compile(r'(?:u8|u|U|L)?"((?:\\.|[^"\\\n])*)"')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


@dataclass(frozen=True)
class PlannedBody:
    """A body to build, with the facts its findings are reported against."""

    build: BodyBuild
    body_loc: object  # Location of the body (the HipSource's)
    factory_call: str
    tables: tuple
    include_dirs: tuple  # absolute directories the body's quoted includes resolve in (inside the root)
    refusal: Optional[tuple] = None  # (Location, message): an #include that may not be compiled


def _pieces_of(h, data: Optional[bytes]) -> tuple:
    """The body's literal pieces read again from its file at their recorded places, so every character has its
    file line and column; one piece at the body's place when the file does not show them."""
    fallback = (Piece(path=h.loc.path, line=h.loc.line, column=h.loc.column, text=h.text, raw=True),)
    if data is None or not h.piece_locs:
        return fallback
    text = data.decode("utf-8", "replace")
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    out = []
    for loc in h.piece_locs:
        if loc.line - 1 >= len(starts):
            return fallback
        off = starts[loc.line - 1] + loc.column - 1
        raw = _RAW_OPEN.match(text, off)
        if raw is not None:
            end = text.find(f"){raw.group(1)}\"", raw.end())
            if end < 0:
                return fallback
            out.append(Piece(path=h.loc.path, line=loc.line, column=loc.column + raw.end() - off,
                             text=text[raw.end():end], raw=True))
            continue
        plain = _PLAIN.match(text, off)
        if plain is None:
            return fallback
        value = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), plain.group(1))
        out.append(Piece(path=h.loc.path, line=loc.line, column=loc.column + 1, text=value, raw=False))
    return tuple(out) if "".join(p.text for p in out) == h.text else fallback


def _reaching(index, fc) -> tuple:
    """(tables whose .rocm slot reaches the call, invocations that may launch it)."""
    key = str(fc.loc)
    tables = []
    for t in index.port_tables:
        slot = t.slots.get("rocm")
        if slot is not None and any(str(f.loc) == key for f in slot.factory_calls):
            tables.append(t.name)
    names = set(tables)
    invocations = [i for i in index.invocations if names & set(i.tables)]
    if not invocations:
        invocations = [i for i in index.invocations if fc.enclosing_usr and i.enclosing_usr == fc.enclosing_usr]
    return tuple(sorted(set(tables))), invocations


_INTEGER_TYPES = {"uint8_t": "uint8", "int8_t": "int8", "uint16_t": "uint16", "int16_t": "int16", "uint32_t": "uint32",
                  "int32_t": "int32", "uint64_t": "uint64", "int64_t": "int64", "unsigned int": "uint32",
                  "unsigned": "uint32", "int": "int32"}
_INTEGER_BINDING = re.compile(r"\bconst\s+(" + "|".join(_INTEGER_TYPES) + r")\s*\*\s*(?:__restrict__\s+)?\w+\s*=\s*(\w+)\b")


def body_integer_inputs(source_text: str, names: tuple) -> dict:
    """Inputs the body binds to a pointer of an integer type (``const uint32_t* w = gate_w + row;``): packed
    weights and indices, whose dtype the launch leaves to its caller; the body states it."""
    out = {}
    for ctype, name in _INTEGER_BINDING.findall(source_text):
        if name in names:
            out.setdefault(name, _INTEGER_TYPES[" ".join(ctype.split())])
    return out


def _input_dtype(arr, entries: list, activation: str, stated_by_body=None) -> str:
    keyed = next((e for e in entries if e.is_dtype and e.source_input is not None and e.source_input == arr.name), None)
    if keyed is not None:
        return keyed.value or activation
    if arr.fixed_dtype:
        return arr.fixed_dtype
    if arr.dtype_fixed and arr.how == "scalar":
        return "float32"
    if stated_by_body is not None and not arr.dtype_follows and arr.how != "astype":
        return stated_by_body
    return activation


_DTYPE_CONSTANT = re.compile(r"^(?:(?:mlx::)?(?:core::)?)(bool_|u?int(?:8|16|32|64)|float(?:16|32|64)|bfloat16)$")
_ARRAY_DTYPE = re.compile(r"^(\w+)\s*(?:\.|->)\s*(?:inner\s*\.\s*)?dtype\s*\(\s*\)$")


def _elements(text: str) -> list:
    """The top-level elements of a braced list as written, comments dropped."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S).strip()
    if not (text.startswith("{") and text.endswith("}")):
        return []
    out, depth, cur = [], 0, ""
    for ch in text[1:-1]:
        depth += ch in "({[<"
        depth -= ch in ")}]>"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _output_dtypes(inv, outputs: tuple, input_dtypes: dict, names: tuple, template: dict, activation: str) -> tuple:
    """Each output's dtype as the launch's output-dtypes list states it: a dtype constant, an input's
    ``.dtype()``, or the value a dtype template argument is given (``{T}`` where the launch passes ``{"T", T}``);
    the activation dtype for anything else."""
    elements = _elements(inv.output_dtypes_text) if inv is not None else []
    if len(elements) != len(outputs):
        return tuple((n, activation) for n in outputs)
    by_array = {a.name: names[i] for i, a in enumerate(inv.inputs) if a.name and i < len(names)}
    by_text = {e.value_text.strip(): template.get(e.name) for e in inv.template_args if e.name and e.is_dtype}
    out = []
    for n, element in zip(outputs, elements):
        constant, array = _DTYPE_CONSTANT.match(element), _ARRAY_DTYPE.match(element)
        if constant:
            out.append((n, constant.group(1)))
        elif array and array.group(1) in by_array:
            out.append((n, input_dtypes.get(by_array[array.group(1)], activation)))
        else:
            out.append((n, by_text.get(element) or activation))
    return tuple(out)


def _guess(entry, g: int) -> str:
    """A value for a constant nothing states: a bool for a bool-looking name, a bit width for ``bits``, else a
    power of two a block or a row plausibly has; the g-th of a few."""
    name = entry.name.lower()
    if entry.value_text.strip() in ("true", "false") or name.startswith(("is_", "has_", "use_")):
        return GUESSED_BOOLS[g % len(GUESSED_BOOLS)]
    if "bits" in name:
        return GUESSED_BITS[g % len(GUESSED_BITS)]
    if "group" in name:
        return GUESSED_GROUPS[g % len(GUESSED_GROUPS)]
    if "page" in name:
        return GUESSED_PAGES[g % len(GUESSED_PAGES)]
    if _COUNT_NAME.search(entry.name):
        return GUESSED_COUNTS[g % len(GUESSED_COUNTS)]
    return GUESSED_INTS[g % len(GUESSED_INTS)]


def _guarded(inv, entries: list, assume: dict, reads) -> dict:
    """template constant -> the values the launcher's guards name for the variable it is given."""
    wanted = {e.value_text.strip(): e.name for e in entries
              if not e.is_dtype and e.value is None and e.name not in assume and e.value_text.strip().isidentifier()}
    if inv is None or not wanted:
        return {}
    return {wanted[v]: tuple(str(x) for x in got) for v, got in reads.guards(inv.loc.path, inv.loc.line, set(wanted)).items()}


def _variants_of_launch(inv, names: tuple, outputs: tuple, assume: dict, integer_inputs: dict, reads) -> list:
    entries = [e for e in (inv.template_args if inv is not None else ()) if e.name]
    guarded = _guarded(inv, entries, assume, reads)
    unknown = [e.name for e in entries if not e.is_dtype and e.value is None and e.name not in assume and e.name not in guarded]
    rounds = max([len(GUESSED_INTS) if unknown else 1] + [len(v) for v in guarded.values()])
    dtype_constant = any(e.is_dtype and e.value for e in entries)
    out = []
    for activation, g in itertools.product(ACTIVATION_DTYPES[:1] if dtype_constant else ACTIVATION_DTYPES, range(rounds)):
        args = []
        for e in entries:
            if e.is_dtype:
                args.append((e.name, e.value or activation))
            elif e.value is not None:
                args.append((e.name, e.value))
            elif e.name in guarded:
                args.append((e.name, guarded[e.name][g % len(guarded[e.name])]))
            elif e.name in assume:
                v = assume[e.name]
                args.append((e.name, ("true" if v else "false") if isinstance(v, bool) else str(v)))
            else:
                args.append((e.name, _guess(e, g)))
        arrays = list(inv.inputs) if inv is not None else []
        input_dtypes = tuple((n, _input_dtype(arrays[i], entries, activation, integer_inputs.get(n))
                                  if i < len(arrays) else integer_inputs.get(n, activation))
                             for i, n in enumerate(names))
        out.append(Variant(template_args=tuple(args), input_dtypes=input_dtypes,
                           output_dtypes=_output_dtypes(inv, outputs, dict(input_dtypes), names, dict(args), activation),
                           guessed=tuple(unknown)))
    return out


def variants(invocations: list, names: tuple, outputs: tuple, assume: dict, source_text: str = "", reads=None) -> tuple:
    """Every distinct variant the launches allow, in a stable order."""
    out = []
    integer_inputs = body_integer_inputs(source_text, names)
    for inv in invocations or [None]:
        for v in _variants_of_launch(inv, names, outputs, assume, integer_inputs, reads or TreeReads({})):
            if v not in out:
                out.append(v)
    return tuple(out)


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*(?:include|include_next|import)\b[ \t]*(.*)$', re.M)


def include_problem(pieces: tuple, root, resolve) -> tuple:
    """(None, include dirs) when every ``#include`` of the pieces may be compiled; else ((Location, message), ()).

    A system header by name (``<hip/hip_runtime.h>``) is the compiler's; a quoted include must name a file in the
    tree (``resolve``); an absolute path, a path that leaves the root and a computed include are refused."""
    from pathlib import Path

    from kernel_ports.facts import Location

    dirs = []
    for p in pieces:
        for m in _INCLUDE.finditer(p.text):
            line = p.line + (p.text.count("\n", 0, m.start()) if p.raw else 0)
            where = Location(p.path, line, 1)
            spelled = m.group(1).strip()
            name = spelled[1:-1] if len(spelled) > 1 and spelled[0] + spelled[-1] in ('""', "<>") else None
            if name is None:
                return (where, f"`#include {spelled[:60]}` names no file (a computed include is not built)"), ()
            if name.startswith("/") or re.match(r"[A-Za-z]:[\\/]", name):
                return (where, f"`#include {spelled[:60]}` names an absolute path; a body may include only files in the tree"), ()
            if spelled[0] == "<":
                if ".." in Path(name).parts:
                    return (where, f"`#include {spelled[:60]}` leaves the include directories"), ()
                continue
            rel = resolve(name, p.path)
            if rel is None:
                if ".." in Path(name).parts:
                    return (where, f"`#include {spelled[:60]}` names a file outside the tree"), ()
                continue  # not a tree file: the compiler's own search answers (and fails as the runtime would)
            # the folder the spelled name is found under: `#include "sub/x.h"` resolved to a/sub/x.h is found in a/
            found_in = Path(root) / rel
            for _ in Path(name).parts:
                found_in = found_in.parent
            dirs.append(str(found_in))
    return None, tuple(dict.fromkeys(dirs))


def plan_bodies(index, registry, by_path: dict, resolve, cache=None, reads=None) -> list:
    """A PlannedBody for each HIP body a ROCm factory call compiles; ``reads`` (a :class:`TreeReads` over
    ``by_path``) records every read of the tree the plan makes."""
    out = []
    reads = reads if reads is not None else TreeReads(by_path, cache)
    kernels_by_table = {k.table.split("::")[-1]: k for k in registry.kernels}
    for fc in sorted((f for f in index.factory_calls if f.backend == "rocm"), key=lambda f: str(f.loc)):
        compiled = index.compiled_bodies.get(str(fc.loc))
        if compiled is None:
            continue
        sources = [h for h in compiled.bodies if h.name in fc.source_constants or h.name == f"{fc.loc}#source"]
        headers = [h for h in compiled.bodies if h.name in fc.header_constants or h.name == f"{fc.loc}#header"]
        tables, invocations = _reaching(index, fc)
        assume = {}
        for t in tables:
            k = kernels_by_table.get(t)
            if k is not None:
                assume.update(dict(k.compile_assume))
        header = tuple(p for h in headers for p in _pieces_of(h, reads.data(h.loc.path)))
        names, outputs = fc.input_names or (), fc.output_names or ()
        kernel_name = fc.kernel_name or re.sub(r"\W+", "_", fc.name_text)[:60] or "kernel"
        bodies = [(f"{h.loc.path}:{h.name}", h.loc, _pieces_of(h, reads.data(h.loc.path)), kernel_name)
                  for h in sources] or _chosen_bodies(fc, reads, kernel_name)
        for body, loc, pieces, name in bodies:
            text = "".join(p.text for p in pieces)
            build = BodyBuild(body=body, kernel_name=name, input_names=tuple(names), output_names=tuple(outputs),
                              source=pieces, header=header,
                              variants=variants(invocations, tuple(names), tuple(outputs), assume, text, reads))
            refusal, dirs = include_problem(pieces + header, registry.root, resolve)
            out.append(PlannedBody(build=build, body_loc=loc, factory_call=str(fc.loc), tables=tables,
                                   include_dirs=dirs, refusal=refusal))
    return out


_NAME_CHOICE = re.compile(r'\?\s*"([^"\\]*)"\s*:\s*"([^"\\]*)"\s*$')


def _chosen_bodies(fc, reads, kernel_name: str) -> list:
    """The branches of a local chosen by a condition (frontend/device/alternatives.py), each a body, with the
    kernel name of the same branch when the name is chosen the same way."""
    from kernel_ports.facts import Location

    if fc.source_literal is not None:
        return []
    names = _NAME_CHOICE.search(fc.name_text.strip())
    out = []
    for constant in fc.source_constants:
        for i, (pieces, condition) in enumerate(reads.choices(fc.loc.path, constant, fc.loc.line)):
            first = pieces[0]
            out.append((f"{fc.loc.path}:{constant}[{condition}]", Location(first.path, first.line, first.column), pieces,
                        names.group(i + 1) if names else kernel_name))
    return out
