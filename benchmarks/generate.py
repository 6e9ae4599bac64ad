"""Generate a benchmark tree of realistic size from the sample engine.

The tree holds N launcher files of about L lines each: every launcher is one
of the sample engine's launchers with its kernel-specific names suffixed
(`fused_norm_ports` -> `fused_norm_ports_g7`) so tables stay unique, padded
with ordinary host code (shape checks, loops, small structs) to the target
length. The helper files, HIP headers and Rust crate are copied as they are.
A registry describing the generated kernels is written beside the tree, so
`kernel-ports check` on it is clean and does the full work.

    python benchmarks/generate.py OUT_DIR [--launchers 40] [--lines 600]
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import yaml

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


def generate(out: Path, launchers: int = 40, lines: int = 600) -> Path:
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
    for i in range(launchers):
        template = templates[i % len(templates)]
        tag = f"g{i}"
        text = (ENGINE / template).read_text(encoding="utf-8")
        names = set().union(*(_kernel_names(k) for k in by_file[template]))
        pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
        text = pattern.sub(lambda m: f"{m.group(1)}_{tag}", text)
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
        rel = template.replace(".cpp", f"_{tag}.cpp")
        (engine_out / rel).write_text(text, encoding="utf-8")
        launcher_files.append(rel)
        for kernel in by_file[template]:
            clone = yaml.safe_load(yaml.safe_dump(kernel))
            clone["name"] = f"{kernel['name']}_{tag}"
            clone["file"] = rel
            clone["table"] = f"{kernel['table']}_{tag}"
            clone["predicates"] = [f"{p}_{tag}" for p in kernel.get("predicates", ())]
            clone["ports"] = {
                b: (None if a is None else re.sub(r"^([A-Za-z_0-9]+)", rf"\1_{tag}", a)) for b, a in (kernel.get("ports") or {}).items()
            }
            kernels.append(clone)
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
    args = parser.parse_args(argv)
    path = generate(args.out, args.launchers, args.lines)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
