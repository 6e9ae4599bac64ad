"""Text edits of existing source files, anchored on locations from the facts.

A generated port changes the engine's files by inserting lines after lines
the facts located (an accessor's definition, a factory call, a table slot).
Every anchor is verified before it is used: the text at the fact's line and
column must be what the fact says (an accessor's name, a factory's callee, a
slot's initializer). When it is not, the file changed since it was read or
the construct is written in a shape the generator does not know, and the edit
is refused (`AnchorError`) rather than guessed.

The scanner below skips comments, string, character and raw string literals,
so braces inside a kernel body or a comment do not end a function.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

_RAW = re.compile(r'R"([^()\\\s]{0,16})\(')


class AnchorError(Exception):
    """An anchor is not where the facts put it (one line for the user)."""


def _skip(text: str, i: int) -> int:
    """If a comment or literal starts at i, the offset just after it; else i."""
    two = text[i:i + 2]
    if two == "//":
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if two == "/*":
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    m = _RAW.match(text, i)
    if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
        close = ")" + m.group(1) + '"'
        j = text.find(close, m.end())
        return len(text) if j < 0 else j + len(close)
    ch = text[i]
    if ch in "\"'":
        j = i + 1
        while j < len(text) and text[j] != ch and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def scan_to(text: str, start: int, stop: str) -> int:
    """Offset of the first `stop` character at nesting depth 0 from `start` (code only)."""
    depth = 0
    i = start
    while i < len(text):
        j = _skip(text, i)
        if j != i:
            i = j
            continue
        ch = text[i]
        if ch == stop and depth == 0:
            return i
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return -1
        i += 1
    return -1


def matching_brace(text: str, open_at: int) -> int:
    """Offset of the `}` closing the `{` at open_at."""
    if text[open_at:open_at + 1] != "{":
        return -1
    end = scan_to(text, open_at + 1, "}")
    return end


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def line_end(text: str, offset: int) -> int:
    """Offset just after the newline ending the line that holds offset."""
    j = text.find("\n", offset)
    return len(text) if j < 0 else j + 1


def offset_of(text: str, line: int, column: int) -> int:
    """Offset of a 1-based (line, byte column) as Clang reports it."""
    at = 0
    for _ in range(line - 1):
        at = text.find("\n", at)
        if at < 0:
            raise AnchorError(f"line {line} is past the end of the file")
        at += 1
    head = text[at:line_end(text, at)].encode("utf-8")[: max(0, column - 1)]
    return at + len(head.decode("utf-8", "replace"))


def line_number(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def expect(text: str, offset: int, wanted: str, what: str, where: str) -> None:
    if text[offset:offset + len(wanted)] != wanted:
        found = text[offset:offset + max(len(wanted), 20)].split("\n")[0]
        raise AnchorError(f"{where}: expected {what} {wanted!r} here, found {found!r}; "
                          "the file changed since it was read, or is written in a shape `port` does not know")


def replace_word(text: str, old: str, new: str, count_expected: int | None = None, what: str = "") -> str:
    """Replace whole-word `old` in code (not inside comments or literals)."""
    out, i, n = [], 0, 0
    word = re.compile(r"\b" + re.escape(old) + r"\b")
    while i < len(text):
        j = _skip(text, i)
        if j != i:
            out.append(text[i:j])
            i = j
            continue
        m = word.match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            out.append(new)
            i = m.end()
            n += 1
            continue
        out.append(text[i])
        i += 1
    if count_expected is not None and n != count_expected:
        raise AnchorError(f"{what}: expected {count_expected} use(s) of {old!r}, found {n}")
    return "".join(out)


@dataclass
class FileEdit:
    """Insertions into one existing file, keyed by the offset they go at."""

    path: str
    original: str
    inserts: list = field(default_factory=list)  # (offset, text)

    def insert(self, offset: int, text: str) -> None:
        self.inserts.append((offset, text))

    def result(self) -> str:
        out = self.original
        # stable: inserts at one offset keep the order they were added in
        for _, (offset, text) in sorted(enumerate(self.inserts), key=lambda p: (p[1][0], p[0]), reverse=True):
            out = out[:offset] + text + out[offset:]
        return out


def unified(path: str, old: str | None, new: str) -> str:
    """A unified diff of one file (old None: a new file)."""
    a = "/dev/null" if old is None else f"a/{path}"
    lines = difflib.unified_diff((old or "").splitlines(True), new.splitlines(True), fromfile=a, tofile=f"b/{path}")
    return "".join(lines)
