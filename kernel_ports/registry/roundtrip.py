"""ruamel.yaml round-trip editing of a registry someone wrote by hand.

`round_trip_yaml` builds a loader/dumper that keeps the file's comments, key
order, quoting and indentation (guessed from the text, since ruamel does not
record it); the small helpers edit a loaded document the way its author would:
a new string quoted like its siblings, a missing key inserted where it
belongs, an empty `[]` that gains items turned into a block list. `sync`
refreshes kernels and launchers with them, `adopt` appends exemptions.
ruamel is imported inside each function so that commands which never rewrite
a registry do not pay for it.
"""

from __future__ import annotations

import re

from kernel_ports.registry.text import yaml_scalar


def _guess_indent(text: str) -> tuple:
    """(mapping, sequence, offset) indentation as the file writes it."""
    mapping, sequence, offset = 2, 4, 2
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        m = re.match(r"^(\w[^:#]*):\s*(#.*)?$", line)
        if not m:
            continue
        nxt = next((x for x in lines[i + 1:] if x.strip() and not x.lstrip().startswith("#")), "")
        lead = len(nxt) - len(nxt.lstrip(" "))
        if lead and not nxt.lstrip().startswith("- "):
            mapping = lead
            break
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)- ", line)
        if not m:
            continue
        parent = next((x for x in reversed(lines[:i]) if x.strip() and not x.lstrip().startswith("#")), "")
        if not parent.rstrip().endswith(":"):
            continue
        p = len(parent) - len(parent.lstrip(" "))
        offset = max(0, len(m.group(1)) - p)
        sequence = offset + 2
        break
    return mapping, sequence, offset


def round_trip_yaml(text: str):
    """A ruamel round-trip YAML that loads `text` and dumps it back with its own indentation and quotes."""
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    mapping, sequence, offset = _guess_indent(text)
    y.indent(mapping=mapping, sequence=max(sequence, offset + 2), offset=offset)
    y.width = 4096

    def none(representer, _):
        return representer.represent_scalar("tag:yaml.org,2002:null", "null")

    y.representer.add_representer(type(None), none)
    return y


def styled_like(value, siblings):
    """A new string in the style of its siblings (double-quoted if they are)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if value is None:
        return None
    for s in siblings:
        if isinstance(s, DoubleQuotedScalarString):
            return DoubleQuotedScalarString(value)
        if isinstance(s, SingleQuotedScalarString):
            return SingleQuotedScalarString(value)
    plain = yaml_scalar(value)
    return value if plain == value else DoubleQuotedScalarString(value)


def blank_line_before(seq, index: int) -> None:
    """An empty line above item `index` of a block list (between two kernels, as `init` writes them)."""
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    seq.ca.items[index] = [None, [CommentToken("\n", CommentMark(0), None)], None, None]


def as_block_list(seq) -> None:
    """An empty flow list (`[]`) that gains items is written as a block list."""
    if len(seq) == 0 and seq.fa.flow_style():
        seq.fa.set_block_style()


def set_key(mapping, key, value, after=None):
    """Set a key, adding it after `after` (or at the end) when missing."""
    if key in mapping:
        mapping[key] = value
        return
    keys = list(mapping.keys())
    pos = keys.index(after) + 1 if after in keys else len(keys)
    mapping.insert(pos, key, value)


def double_quoted(text):
    """`text` as a double-quoted scalar (the style a new string takes when it has no sibling to copy)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    return DoubleQuotedScalarString(text)
