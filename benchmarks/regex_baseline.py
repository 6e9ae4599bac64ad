"""The cost floor of a lexical gate: a few regular expressions over the same files the check reads.

Reads every C-family and Rust file under ROOT, strips comments, and counts matches of the patterns a
regex dispatch/dtype gate looks for (factory calls, backend comparisons, holder access, template-args
initialisers, lane operations, backend-enumerating gates). Prints the count.

    python benchmarks/regex_baseline.py ROOT
"""

import os
import re
import sys

SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".cu", ".cuh", ".hip", ".mm", ".rs")
COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
PATTERNS = [re.compile(p) for p in (
    r"\b(?:metal|cuda|hip)_kernel\s*\(",
    r"gpu_kernel_backend\(\)\s*[!=]=|[!=]=\s*GpuKernelBackend::",
    r"\bget_\w+_kernel\w*\(\)\.get\(\)",
    r"\btemplate_args\s*(?:=\s*)?\{",
    r"__shfl\w*|__ballot\w*|\bwarpSize\b|__lane_id",
    r"(?:metal|cuda)_is_available\(\)\s*(?:\|\||&&)",
)]


def main(root: str) -> int:
    hits = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != ".git")
        for name in sorted(files):
            if name.endswith(SUFFIXES):
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as fh:
                    text = COMMENTS.sub("", fh.read())
                hits += sum(len(p.findall(text)) for p in PATTERNS)
    print(hits)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
