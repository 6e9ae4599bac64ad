"""The precompiled prelude: the standard headers (and the resolved MLX and cxx headers) built once per argument set.

A precompiled prelude (the standard headers the stubs and engines use, and
the resolved MLX and cxx headers, stubs or real, when no include directory
holds one of its own: ``with_stubs`` below) is built once per argument set
into the cache directory, with the templates it uses instantiated, and passed with ``-include-pch``; it cuts
per-file parse time several-fold.  It adds two spurious ``__va_list_tag``
diagnostics per file, which are filtered.  The prelude's declarations are not
listed among a unit's (``excludeDecls``); what the walk needs of the stubs'
is written beside the prelude (``prelude_api``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Optional

from kernel_ports.frontend import headers
from kernel_ports.frontend.clang.toolchain import FrontEndError, builtin_include_dir, cindex, libclang

PRELUDE_STD_HEADERS = (
    "algorithm", "array", "atomic", "cstddef", "cstdint", "cstring", "functional", "initializer_list",
    "map", "memory", "mutex", "optional", "stdexcept", "string", "string_view", "tuple",
    "type_traits", "unordered_map", "utility", "variant", "vector",
)


# Code that uses the MLX API the way launchers do (SPEC section 1: a kernel built by each factory, held in a
# std::optional under std::call_once, launched with inputs, shapes, dtypes, grid, threadgroup and template args of
# each alternative). Precompiled with the stubs, it makes the prelude hold the template instantiations that use
# needs (std::function's call, the TemplateArg variant's conversions, the argument vectors ...), which every unit
# otherwise made again: half of a launcher's parse. Its namespace is nobody's; the walk never lists the
# prelude's declarations. Its functions return ``auto``: Clang never skips the body of a function whose result
# type it must deduce (PRELUDE_PARSE_OPTIONS), so these bodies, and the instantiations they ask for, are kept.
PRELUDE_WARM_UP = r"""
namespace kernel_ports_prelude_warm_up {
inline auto launch(mlx::core::fast::CustomKernelFunction& k, const mlx::core::array& x, int n) {
  std::vector<std::pair<std::string, mlx::core::fast::TemplateArg>> targs;
  targs.push_back({"T", x.dtype()});
  targs.emplace_back("N", n);
  return k({x, x}, {x.shape()}, {x.dtype()}, {n, 1, 1}, {256, 1, 1}, {{"T", x.dtype()}, {"N", n}, {"B", true}},
           std::nullopt, false, {});
}
inline auto make() {
  return mlx::core::fast::metal_kernel("k", {"x"}, {"out"}, "src", "", true, false);
}
inline auto& hold() {
  static std::once_flag once;
  static std::optional<mlx::core::fast::CustomKernelFunction> kernel;
  std::call_once(once, [] { kernel.emplace(mlx::core::fast::cuda_kernel("k", {"x"}, {"out"}, "src")); });
  static mlx::core::fast::CustomKernelFunction other = mlx::core::fast::hip_kernel("k", {"x"}, {"out"}, std::string("src"));
  return *kernel;
}
inline auto use(const mlx::core::array& x) {
  auto y = mlx::core::astype(x, mlx::core::float32);
  auto out = launch(hold(), mlx::core::contiguous(mlx::core::reshape(y, y.shape())), static_cast<int>(x.size()));
  return out[0];
}
}  // namespace kernel_ports_prelude_warm_up
"""

# A launch is written in several ways, and each asks for instantiations of its own: its arguments braced or
# named (a named vector is copied, which instantiates its copy constructor: half of a launch's cost in a unit),
# the grid a braced list or ``std::make_tuple``, values plain, ``const`` or computed. ``launch_named`` and
# ``launch_const`` write the common ones (the generated benchmark tree's Clang time -24 %). They are a part of
# their own, so that headers one of them does not compile against (an older MLX) keep the first part. Not every
# form pays: a template argument's name is a string literal whose length is part of its type, but warming a pair
# for each length made units dearer, since libclang 18 reads every specialization of a template from the prelude
# once a unit uses one.
PRELUDE_WARM_UP_FORMS = r"""
namespace kernel_ports_prelude_warm_up {
inline auto launch_named(mlx::core::fast::CustomKernelFunction& k, const mlx::core::array& x, int n) {
  const int m = n / 2;
  std::vector<mlx::core::array> inputs = {x, x};
  std::vector<mlx::core::Shape> output_shapes = {x.shape()};
  std::vector<mlx::core::Dtype> output_dtypes = {x.dtype()};
  std::vector<std::pair<std::string, mlx::core::fast::TemplateArg>> template_args;
  template_args.push_back({"T", x.dtype()});
  template_args.push_back({"N", m});
  auto results = k(inputs, output_shapes, output_dtypes, std::make_tuple(32, m, n), std::make_tuple(32, 4, 1),
                   template_args, std::nullopt, false, {});
  return results[0];
}
inline auto launch_const(mlx::core::fast::CustomKernelFunction& k, const mlx::core::array& x, const mlx::core::array& y) {
  const int a = x.shape(0);
  const int b = x.shape(-1);
  const bool c = a > b;
  const mlx::core::array s{1.0f};
  return k({x, y, s}, {x.shape()}, {x.dtype()}, {a, b, 1}, {b, 1, 1},
           {{"T", x.dtype()}, {"D", a}, {"FLAG", c}, {"N", b}},
           std::nullopt, false, {});
}
}  // namespace kernel_ports_prelude_warm_up
"""

# the warm-up's parts, in the order they are given up when the headers do not compile one (the last first)
WARM_UPS = (PRELUDE_WARM_UP, PRELUDE_WARM_UP_FORMS)


# How the prelude is parsed. Skipping function bodies: the bodies of the standard and MLX headers' functions are
# not parsed (a third of the prelude's build and of the file it writes). The walk never reads them: it lists no
# prelude declaration, and a unit's own calls resolve to their declarations. Clang keeps every body it may need to
# type or evaluate the units' code (a constexpr function's, one with a deduced result type); what is lost is a
# diagnostic inside a system header's function. The detailed preprocessing record must match the parses that use
# the prelude (session.py).
# (CXTranslationUnit_ flags: DetailedPreprocessingRecord 0x01, Incomplete 0x02, SkipFunctionBodies 0x40; a
# number, so that the prelude's key is computed without loading libclang)
PRELUDE_PARSE_OPTIONS = 0x01 | 0x02 | 0x40


def prelude_text(with_stubs: bool = False, warm_up: int | None = None) -> str:
    """The prelude's source, with the first ``warm_up`` parts of the warm-up (all of them by default) when it
    holds the MLX headers."""
    # The standard headers, and the package's MLX stubs when they are what the
    # units would include anyway (``stubs_shadowed``): a tree with its own (real
    # or different) MLX headers must never meet a precompiled copy of ours.
    lines = [f"#include <{h}>" for h in PRELUDE_STD_HEADERS]
    if with_stubs:  # (the resolved MLX and cxx headers, real or stubs)
        lines += ['#include "mlx/mlx.h"', '#include "rust/cxx.h"']
    text = "\n".join(lines) + "\n"
    return text + "".join(WARM_UPS[:warm_up]) if with_stubs else text


def stubs_shadowed(args) -> bool:
    """Whether an include directory of this command line (or a standard system one, or one the CPATH variables
    name) other than the resolved header set's holds a header at one of its paths, so that units would read it
    rather than the set's."""
    return headers.shadowed(args, ("/usr/include", "/usr/local/include"))


def _prelude_header_args(args, with_stubs: bool = True) -> list:
    # -fpch-instantiate-templates: the template instantiations the standard headers need are made once, in the
    # prelude, instead of at the end of every unit that loads it (~40 ms a parse)
    args = [a for a in args if a != "-x" and a != "c++"]
    if not with_stubs and "-include" in args:
        # a prelude of the standard headers alone: a force-included header (the ROCm shim, which reads mlx/fast.h)
        # is read by each unit instead, so the MLX declarations stay the unit's own
        i = args.index("-include")
        args = args[:i] + args[i + 2:]
    return ["-x", "c++-header", "-fpch-instantiate-templates"] + args


def prelude_path(args, cache_dir: Path, with_stubs: bool = False) -> Path:
    """Where the prelude for an argument set is (or will be) stored; computed without loading libclang. A
    precompiled header is read only by the Clang that wrote it, so the library's identity is in the name."""
    text = "\0".join(_prelude_header_args(list(args), with_stubs) + [f"options={PRELUDE_PARSE_OPTIONS}"]) + prelude_text(with_stubs) \
        + headers.args_digest(args, _builtin_dirs()) + libclang().key
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    return Path(cache_dir) / f"prelude-{key}.pch"


def build_prelude(args: list, cache_dir: Path, with_stubs: bool = False) -> Optional[str]:
    """Build (or reuse) the precompiled prelude for an argument set; None if it fails.

    With the stubs in it, their declarations are among the prelude's, which the
    walk does not list; what it needs of them (the kernel type a factory
    returns, Dtype ...) is written beside the prelude (``prelude_api``)."""
    ci = cindex()
    out = prelude_path(args, cache_dir, with_stubs)
    if out.is_file():
        return str(out)
    src = out.with_suffix(".h")
    hdr_args = _prelude_header_args(args, with_stubs)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)  # (a folder that cannot be made: no prelude, parses go on)
        index = ci.Index.create()
        for warm_up in (range(len(WARM_UPS), -1, -1) if with_stubs else (0,)):
            src.write_text(prelude_text(with_stubs, warm_up))
            tu = index.parse(str(src), args=hdr_args, options=PRELUDE_PARSE_OPTIONS)
            if not any(d.severity >= 3 for d in tu.diagnostics):
                break  # (a warm-up part the headers do not compile is left out rather than losing the prelude)
        else:
            return None
        if with_stubs:
            api = out.with_suffix(".api.json")
            tmp_api = api.with_name(f"{api.name}.{os.getpid()}.tmp")
            tmp_api.write_text(json.dumps(_stub_api(tu, headers.header_dirs_in(args, _builtin_dirs()))))
            os.replace(tmp_api, api)
        tmp = out.with_name(f"{out.stem}.{os.getpid()}.tmp")
        tu.save(str(tmp))
        os.replace(tmp, out)
    except Exception:
        return None
    return str(out)


def _builtin_dirs() -> tuple:
    try:
        return (builtin_include_dir(),)
    except FrontEndError:
        return ()


def _stub_api(tu, header_dirs) -> dict:
    """Canonical types of what the resolved headers (stubs or real) declare: functions' results (with whether it
    is an enum), and types."""
    ci = cindex()
    K = ci.CursorKind
    stubs = tuple(d.rstrip("/") + "/" for d in header_dirs)
    functions, types = {}, {}

    wanted = (K.NAMESPACE, K.FUNCTION_DECL, K.STRUCT_DECL, K.CLASS_DECL, K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL)

    def visit(c, prefix):
        for ch in c.get_children():
            if ch.kind not in wanted:
                continue  # the prelude's top level is mostly macros (~20k of 21k cursors), whose location costs
            f = ch.location.file
            if f is None or not os.path.normpath(f.name).startswith(stubs):
                continue
            q = f"{prefix}::{ch.spelling}" if prefix else ch.spelling
            if ch.kind == K.NAMESPACE:
                visit(ch, q)
            elif ch.kind == K.FUNCTION_DECL:
                rt = ch.result_type.get_canonical()
                functions.setdefault(q, {"result": rt.spelling, "enum": rt.kind == ci.TypeKind.ENUM})
            elif ch.kind in (K.STRUCT_DECL, K.CLASS_DECL, K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL):
                types.setdefault(q, ch.type.get_canonical().spelling)

    visit(tu.cursor, "")
    return {"functions": functions, "types": types}


def prelude_api(args) -> dict:
    """What ``build_prelude`` wrote beside the prelude a command line loads, if it holds the stubs."""
    args = list(args)
    if "-include-pch" not in args:
        return {}
    pch = Path(args[args.index("-include-pch") + 1])
    try:
        return json.loads(pch.with_suffix(".api.json").read_text())
    except (OSError, ValueError):
        return {}
