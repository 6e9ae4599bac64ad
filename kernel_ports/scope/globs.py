"""Registry globs over POSIX paths, matched in time linear in the path whatever the pattern.

`*` matches within a segment, `?` one character of a segment, `**/` zero or
more whole segments, and `**` elsewhere anything. The registry is the pull
request's, so a pattern such as `**/**/**/**/**/**/**/**/**/**/x` must not
make a backtracking regex try every way to split a path (seven seconds a path
at ten levels, hours at fifteen). A pattern with at most two wildcards is
compiled to a regex (at worst quadratic in a path's length); any other runs
as a set-of-states automaton, which reads each character once per state.
"""

from __future__ import annotations

import re

LIT, ONE, STAR, DSTAR, DSLASH = range(5)
_REGEX = {ONE: "[^/]", STAR: "[^/]*", DSTAR: ".*", DSLASH: "(?:.*/)?"}


def tokens(pattern: str) -> tuple:
    """The pattern as (kind, char) tokens; runs of `*` and of `**/` that mean the same are collapsed."""
    out: list = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            tok, i = (DSLASH, ""), i + 3
        elif pattern.startswith("**", i):
            tok, i = (DSTAR, ""), i + 2
        elif pattern[i] == "*":
            tok, i = (STAR, ""), i + 1
        elif pattern[i] == "?":
            tok, i = (ONE, ""), i + 1
        else:
            tok, i = (LIT, pattern[i]), i + 1
        if tok[0] in (STAR, DSLASH, DSTAR) and out and out[-1] == tok:
            continue
        out.append(tok)
    return tuple(out)


class Glob:
    """`Glob(pattern).match(path)` is true when the whole path matches (like `re.match` with `\\Z`)."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.tokens = tokens(pattern)
        wild = sum(kind in (STAR, DSTAR, DSLASH) for kind, _ in self.tokens)
        self.regex = re.compile("".join(_REGEX.get(k, re.escape(c)) for k, c in self.tokens) + r"\Z") if wild <= 2 else None

    def match(self, path: str) -> bool:
        if self.regex is not None:
            return self.regex.match(path) is not None
        end = len(self.tokens)
        states = self._closure({(0, False)})
        for c in path:
            states = self._closure(self._step(states, c))
            if not states:
                return False
        return (end, False) in states

    def _step(self, states, c: str) -> set:
        out = set()
        for i, inside in states:
            if inside:  # within the `.*/` of a `**/`: any character, and a '/' may end it
                out.add((i, True))
                if c == "/":
                    out.add((i + 1, False))
                continue
            if i == len(self.tokens):
                continue
            kind, ch = self.tokens[i]
            if kind == LIT and c == ch or kind == ONE and c != "/":
                out.add((i + 1, False))
            elif kind == STAR and c != "/" or kind == DSTAR:
                out.add((i, False))
            elif kind == DSLASH:
                out.add((i, True))
                if c == "/":
                    out.add((i + 1, False))
        return out

    def _closure(self, states) -> set:
        """Add the states reached by letting a wildcard match nothing."""
        out = set(states)
        todo = [s for s in states if not s[1]]
        while todo:
            i, _ = todo.pop()
            if i < len(self.tokens) and self.tokens[i][0] in (STAR, DSTAR, DSLASH) and (i + 1, False) not in out:
                out.add((i + 1, False))
                todo.append((i + 1, False))
        return out
