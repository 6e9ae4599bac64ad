"""What the compiler said, read back: errors mapped to the body and variant, resource-usage remarks, and the
cross-lane intrinsics of each variant's kernel in the device IR.

Formats, as HIP 5.2's hipcc (clang 15) prints them (checked by experiment; tests/frontend/test_device_reports.py
pins them):

* errors: ``<file>:<line>:<col>: error: <message>`` (``fatal error:`` when clang stops; ``#error x`` prints
  ``error: x``), the file being what the last ``#line`` named;
* remarks: ``remark: <file>:<line>:0: Function Name: <mangled>`` followed by ``SGPRs: 8``, ``VGPRs: 6``,
  ``ScratchSize [bytes/lane]: 0``, ``Occupancy [waves/SIMD]: 16``, ``SGPRs Spill: 0``, ``VGPRs Spill: 0``,
  ``LDS Size [bytes/block]: 0``, each with ``[-Rpass-analysis=kernel-resource-usage]``;
* IR: ``define ... amdgpu_kernel void @<mangled>(...)``, calls ``@llvm.amdgcn.<op>(...)``; ``__shfl_xor`` is a
  call of a linkonce helper that calls ``llvm.amdgcn.ds.bpermute``, so a kernel's intrinsics are those of every
  function it reaches.
"""

from __future__ import annotations

import os
import re

import networkx as nx

from kernel_ports.frontend.device import source
from kernel_ports.frontend.device.build_model import Diagnostic, KernelUsage

_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error): (?P<msg>.*)$", re.M)
_REMARK = re.compile(r"^remark: .*?: \s*(?P<key>[A-Za-z][A-Za-z ]*[A-Za-z](?: \[[^\]]+\])?): (?P<value>\S+) "
                     r"\[-Rpass-analysis=kernel-resource-usage\]$", re.M)
_VARIANT = re.compile(rf"(\d+){source.VARIANT_NAMESPACE}(\d+)")
_USAGE_FIELDS = {"SGPRs": "sgprs", "VGPRs": "vgprs", "SGPRs Spill": "sgpr_spill", "VGPRs Spill": "vgpr_spill",
                 "ScratchSize [bytes/lane]": "scratch_bytes", "LDS Size [bytes/block]": "lds_bytes",
                 "Occupancy [waves/SIMD]": "occupancy"}
# the cross-lane operations (SPEC §3 KP502); mbcnt only when it counts every lane below this one: a lane id
LANE_INTRINSICS = re.compile(r"llvm\.amdgcn\.(ds\.bpermute|ds\.permute|ds\.swizzle|mov\.dpp8?|update\.dpp|readlane|"
                             r"writelane|permlane[a-z0-9.]*|ballot|icmp|fcmp|wave\.reduce\.[a-z]+|mbcnt\.(?:lo|hi))\b")
_DEFINE = re.compile(r"^define\b[^@]*@(?P<name>\"[^\"]+\"|[\w.$]+)\(", re.M)
_CALLED = re.compile(r"@(\"[^\"]+\"|[\w.$]+)\(")
# device-library services a body reaches through assert/printf: their hostcall picks a lane to talk to the host,
# which is the library's lane exchange, not the body's
_RUNTIME_SERVICES = ("__ockl_hostcall", "__ockl_fprintf", "__ockl_printf", "__assert_fail", "__assertfail")
_MBCNT_LANE_ID = re.compile(r"llvm\.amdgcn\.mbcnt\.(?:lo|hi)\(i32 -1,")


def variant_of(mangled: str):
    """The variant index in a kernel's mangled name: ``5kp_v015custom_kernel_k`` is namespace ``kp_v0`` (its
    length prefix says how many of the digits are the namespace's)."""
    for m in _VARIANT.finditer(mangled):
        digits = int(m.group(1)) - len(source.VARIANT_NAMESPACE)
        if 0 < digits <= len(m.group(2)):
            return int(m.group(2)[:digits])
    return None


_BACKEND_ERROR = re.compile(r"^error: (?P<msg>.*?) in function '(?P<fn>[^']+)'$", re.M)


def _backend_errors(stderr: str, build) -> list:
    """Errors code generation reports without a place (``error: local memory (66560) exceeds limit (65536) in
    function '<mangled>'``): at the body, for the variant the function is."""
    first = build.source[0] if build.source else None
    where = (first.path, first.line, first.column) if first is not None else ("", 0, 0)
    return [Diagnostic(*where, message=m.group("msg").strip(), variant=variant_of(m.group("fn")))
            for m in _BACKEND_ERROR.finditer(stderr)]


def diagnostics(stderr: str, root_files: set, build) -> list:
    """The errors, in order, each at its file:line:col in the tree (a file outside it named only by its base
    name, so no path or text from outside the tree is echoed) and with the variant it belongs to."""
    out = []
    for m in _DIAG.finditer(stderr):
        path, variant, in_header = source.read_tag(m.group("file"))
        line, col = int(m.group("line")), int(m.group("col"))
        message = m.group("msg").strip()
        if m.group("sev") == "fatal error":
            variant = None
        if path is None:
            first = build.source[0] if build.source else None
            where = (first.path, first.line, first.column) if first is not None else ("", 0, 0)
            if m.group("file").startswith(source.WRAPPER_TAG) or m.group("file").startswith(source.DEFAULT_HEADER_TAG):
                message = f"{message} (in the code the runtime wraps the body in)"
            else:
                message = f"{message} (in <{os.path.basename(m.group('file'))}>)"
            out.append(Diagnostic(*where, message=message, variant=variant))
            continue
        pieces = build.header if in_header else build.source
        text = source.piece_line_text(pieces, line)
        directive = text is not None and re.match(r"\s*#\s*error\b", text) is not None
        out.append(Diagnostic(path, line, col, message, None if in_header else variant, directive))
    return out + _backend_errors(stderr, build)


def resource_usage(stderr: str) -> dict:
    """variant index -> KernelUsage, from the remarks of the kernels the unit defines."""
    out: dict = {}
    current = None
    values: dict = {}
    for line in stderr.splitlines():
        if "Function Name: " in line:
            if current is not None:
                out[current] = KernelUsage(**values)
            current, values = variant_of(line.split("Function Name: ", 1)[1]), {}
            continue
        m = _REMARK.match(line)
        if m and current is not None and m.group("key") in _USAGE_FIELDS:
            try:
                values[_USAGE_FIELDS[m.group("key")]] = int(m.group("value"))
            except ValueError:
                pass
    if current is not None:
        out[current] = KernelUsage(**values)
    return out


def _functions(ir: str) -> dict:
    """function name -> its body's text, for every function the module defines."""
    out = {}
    starts = list(_DEFINE.finditer(ir))
    for m in starts:
        end = ir.find("\n}\n", m.end())
        out[m.group("name").strip('"')] = ir[m.start(): end if end >= 0 else len(ir)]
    return out


def lane_intrinsics(ir: str) -> dict:
    """variant index -> the sorted cross-lane intrinsics its kernel reaches (through the functions it calls)."""
    functions = _functions(ir)
    calls = nx.DiGraph()
    for name, body in functions.items():
        calls.add_node(name)
        for callee in _CALLED.findall(body):
            callee = callee.strip('"')
            if callee in functions and callee != name:
                calls.add_edge(name, callee)
    out = {}
    for name, body in functions.items():
        if "amdgpu_kernel" not in body.split("\n", 1)[0]:
            continue
        variant = variant_of(name)
        if variant is None:
            continue
        found = set()
        for f in {name} | nx.descendants(calls.subgraph(n for n in calls if not n.startswith(_RUNTIME_SERVICES)), name):
            found |= _intrinsics_of(functions[f])
        out[variant] = tuple(sorted(found))
    return out


def _intrinsics_of(body: str) -> set:
    found = set()
    for line in body.splitlines():
        if " call " not in line and "call " not in line.lstrip()[:20]:
            continue
        for m in LANE_INTRINSICS.finditer(line):
            op = m.group(1)
            if op.startswith("mbcnt"):
                if not _MBCNT_LANE_ID.search(line):
                    continue
                op = "mbcnt (lane id)"
            elif op in ("icmp", "fcmp"):
                op = f"{op} (wave mask)"
            found.add(op)
    return found
