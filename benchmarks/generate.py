"""Generate a benchmark tree of realistic size from the sample engine.

The tree holds N launcher files of about L lines each: every launcher is one
of the sample engine's launchers with its kernel-specific names suffixed
(`fused_norm_ports` -> `fused_norm_ports_g7`) so tables stay unique, padded
with ordinary host code (shape checks, loops, small structs) to the target
length. The helper files, HIP headers and Rust crate are copied as they are.
Beside them, in the shape of a real engine (benchmarks/shapes.py): a bridge
unit of ~300k characters (hundreds of FFI-shaped functions and three embedded
launchers) and a ~170k-character header of kernel bodies included by the
first 20 launchers. A registry describing the generated kernels is written beside the tree, so
`kernel-ports check` on it is clean and does the full work.

    python benchmarks/generate.py OUT_DIR [--launchers 40] [--lines 600] [--bridge-chars N] [--kernels-chars N]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shapes  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / "cpp_fixtures" / "engine"
REGISTRY = REPO / "registry.yaml"


def _padding(tag: str, index: int) -> str:
    """One block of plain host code, distinct per file and block."""
    name = f"{tag}_shape_rule_{index}"
    return f"""
// Validates the {index}th layout rule of this launcher before any kernel runs.
struct {name.title().replace('_', '')}Layout {{
  int rows = 0;
  int cols = 0;
  int stride = 0;
}};

inline bool {name}(const std::vector<int>& dims, int align) {{
  if (dims.empty() || align <= 0) {{
    return false;
  }}
  long long elements = 1;
  for (int d : dims) {{
    if (d <= 0) {{
      return false;
    }}
    elements *= d;
  }}
  const int last = dims.back();
  const bool aligned = (last % align) == 0;
  return aligned && elements < (1LL << 40) + {index};
}}

inline {name.title().replace('_', '')}Layout {name}_layout(const std::vector<int>& dims) {{
  {name.title().replace('_', '')}Layout layout;
  layout.cols = dims.empty() ? 0 : dims.back();
  layout.rows = 1;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) {{
    layout.rows *= dims[i];
  }}
  layout.stride = layout.cols + ({index} % 4);
  return layout;
}}
"""


def _kernel_names(kernel: dict) -> set[str]:
    names = {kernel["table"], *kernel.get("predicates", ())}
    for accessor in (kernel.get("ports") or {}).values():
        if accessor:
            names.add(accessor.split("<")[0])
    return names


def _renamed(template: str, tag: str, kernels: list) -> tuple[str, list]:
    """A sample launcher's text with its kernel-specific names suffixed by ``tag``, and its registry kernels so renamed."""
    text = (ENGINE / template).read_text(encoding="utf-8")
    names = set().union(*(_kernel_names(k) for k in kernels))
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    text = pattern.sub(lambda m: f"{m.group(1)}_{tag}", text)
    clones = []
    for kernel in kernels:
        clone = yaml.safe_load(yaml.safe_dump(kernel))
        clone["name"] = f"{kernel['name']}_{tag}"
        clone["table"] = f"{kernel['table']}_{tag}"
        clone["predicates"] = [f"{p}_{tag}" for p in kernel.get("predicates", ())]
        clone["ports"] = {
            b: (None if a is None else re.sub(r"^([A-Za-z_0-9]+)", rf"\1_{tag}", a)) for b, a in (kernel.get("ports") or {}).items()
        }
        clones.append(clone)
    return text, clones


BRIDGE = "src/lib/mlx-cpp/bridge/generated_bridge.cpp"
KERNELS_HEADER = "src/lib/mlx-cpp/turbo/generated_kernels.h"
BRIDGE_TEMPLATES = ("src/lib/mlx-cpp/turbo/fused_norm.cpp", "src/lib/mlx-cpp/turbo/rope.cpp", "src/lib/mlx-cpp/turbo/kv_cache.cpp")


def generate(out: Path, launchers: int = 40, lines: int = 600, bridge_chars: int = 0, kernels_chars: int = 0,
             kernels_includers: int = 20) -> Path:
    """The tree under ``out``: ``launchers`` generated launchers of ~``lines`` lines, a bridge unit of ~``bridge_chars``
    characters with a few launches, and a kernels header of ~``kernels_chars`` characters included by the first
    ``kernels_includers`` launchers (0 characters: no such file)."""
    registry = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
    if out.exists():
        shutil.rmtree(out)
    engine_out = out / "engine"
    shutil.copytree(ENGINE, engine_out, ignore=shutil.ignore_patterns("target"))
    templates = sorted({k["file"] for k in registry["kernels"]})
    by_file = {f: [k for k in registry["kernels"] if k["file"] == f] for f in templates}
    # The originals stay (their tables are still declared); generated copies add to them.
    kernels = list(registry["kernels"])
    launcher_files = list(registry.get("launchers", []))
    if kernels_chars:
        (engine_out / KERNELS_HEADER).write_text(shapes.kernels_header(kernels_chars), encoding="utf-8")
    for i in range(launchers):
        template = templates[i % len(templates)]
        tag = f"g{i}"
        text, clones = _renamed(template, tag, by_file[template])
        block = 0
        pad = []
        while text.count("\n") + sum(p.count("\n") for p in pad) < lines:
            pad.append(_padding(tag, block))
            block += 1
        # Padding goes inside the file's namespace so it parses like the rest.
        head, _, tail = text.rpartition("}  // namespace mlxcel")
        text = head + "".join(pad) + "\n}  // namespace mlxcel" + tail if head else text + "".join(pad)
        text = text.replace("#include <vector>", "#include <cstddef>\n#include <vector>", 1)
        if "#include <vector>" not in text:
            text = "#include <cstddef>\n#include <vector>\n" + text
        if kernels_chars and i < kernels_includers:
            text = text.replace('#include "mlx/mlx.h"', '#include "mlx/mlx.h"\n#include "turbo/generated_kernels.h"', 1)
        rel = template.replace(".cpp", f"_{tag}.cpp")
        (engine_out / rel).write_text(text, encoding="utf-8")
        launcher_files.append(rel)
        kernels += [dict(c, file=rel) for c in clones]
    if bridge_chars:
        texts = []
        for template in BRIDGE_TEMPLATES:
            text, clones = _renamed(template, "bridge", by_file[template])
            texts.append(text)
            kernels += [dict(c, file=BRIDGE) for c in clones]
        (engine_out / BRIDGE).write_text(shapes.bridge_unit(texts, bridge_chars), encoding="utf-8")
        launcher_files.append(BRIDGE)
    registry["root"] = "engine"
    registry["kernels"] = kernels
    registry["launchers"] = sorted(set(launcher_files))
    reg_path = out / "registry.yaml"
    reg_path.write_text(yaml.safe_dump(registry, sort_keys=False), encoding="utf-8")
    return reg_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--launchers", type=int, default=40)
    parser.add_argument("--lines", type=int, default=600)
    parser.add_argument("--bridge-chars", type=int, default=300_000, help="size of the bridge unit (0: none)")
    parser.add_argument("--kernels-chars", type=int, default=170_000, help="size of the kernels header (0: none)")
    args = parser.parse_args(argv)
    path = generate(args.out, args.launchers, args.lines, args.bridge_chars, args.kernels_chars)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
