"""Registry globs match in linear time: a hostile pattern cannot make the gate backtrack for hours."""

from __future__ import annotations

import random
import re
import subprocess
import sys

from kernel_ports.scope.globs import Glob
from tests.mutate import REGISTRY_KEY, Mutation, engine_copy
from tests.conftest import REPO

NESTED = "**/a/" * 12 + "x.cpp"  # as a backtracking regex: 2.5 s a path 40 deep at 8 levels, hours at 12


def backtracking(pattern: str) -> re.Pattern:
    """The plain translation the automaton must agree with."""
    out, i = "", 0
    while i < len(pattern):
        for glob, rx in (("**/", "(?:.*/)?"), ("**", ".*"), ("*", "[^/]*"), ("?", "[^/]")):
            if pattern.startswith(glob, i):
                out, i = out + rx, i + len(glob)
                break
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def test_the_automaton_agrees_with_the_regex_translation():
    rng = random.Random(7)
    parts = ["a", "b", "/", "*", "**", "**/", "?", "."]
    for _ in range(3000):
        pattern = "".join(rng.choice(parts) for _ in range(rng.randrange(1, 7)))
        path = "".join(rng.choice("ab/.") for _ in range(rng.randrange(0, 9)))
        glob = Glob(pattern)
        glob.regex = None  # the automaton, even where a regex would do
        assert glob.match(path) == bool(backtracking(pattern).match(path)), (pattern, path)


def test_everyday_patterns_stay_regexes_and_hostile_ones_do_not():
    assert Glob("src/**").regex is not None and Glob("**/*_tests.rs").regex is not None
    assert Glob(NESTED).regex is None and Glob("*a" * 20 + "*b").regex is None
    assert Glob(NESTED).match("a/" * 40 + "x.cpp") and not Glob(NESTED).match("a/" * 40 + "y.cpp")
    assert Glob("**/" * 15 + "x.cpp").tokens == Glob("**/x.cpp").tokens  # repeats of one wildcard collapse


def test_a_registry_glob_of_nested_double_stars_is_judged_promptly(tmp_path):
    copy = engine_copy(tmp_path, Mutation(REGISTRY_KEY, 'include: ["src/**"]', f'include: ["{NESTED}", "src/**"]'))
    deep = copy.root / "src" / "/".join(["a"] * 40)  # a path the pattern almost matches, at every depth
    deep.mkdir(parents=True)
    (deep / "y.cpp").write_text("int y;\n")
    proc = subprocess.run([sys.executable, "-m", "kernel_ports", "check", "--registry", str(copy.registry_path),
                           "--root", str(copy.root)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "22 files scanned" in proc.stdout.splitlines()[-1]
