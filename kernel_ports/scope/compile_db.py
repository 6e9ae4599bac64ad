"""Reading compile_commands.json, which the pull request controls, within bounds.

The file is read up to `MAX_BYTES`, parsed as JSON (too deep a nesting is an
error, not a crash), and every entry must be an object whose `directory`,
`file` and `command` are strings and whose `arguments` is a list of strings.
Anything else stops the run with one line naming the entry (exit 2): an entry
skipped silently would parse its file without the flags it needs.
Which flags are then kept is decided by the caller (`index.plan.load_compile_commands` keeps include,
define and standard flags only, so no entry can load a plugin).
"""

from __future__ import annotations

import json
import shlex

from kernel_ports.scope.limits import InputError

MAX_BYTES = 256 * 1024 * 1024


def load_entries(path) -> list:
    """[(directory, file, argv)] from a compilation database; raises InputError with one line."""
    name = f"{path}: compile_commands.json"
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(f"kernel-ports: {name}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise InputError(f"kernel-ports: {name}: larger than {MAX_BYTES} bytes")
    try:
        entries = json.loads(data)
    except RecursionError:
        raise InputError(f"kernel-ports: {name}: nested too deeply") from None
    except ValueError as exc:
        raise InputError(f"kernel-ports: {name}: not JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(entries, list):
        raise InputError(f"kernel-ports: {name}: expected a list of entries")
    out = []
    for i, e in enumerate(entries):
        out.append(_entry(name, i, e))
    return out


def _entry(name: str, i: int, e) -> tuple:
    def bad(what):
        return InputError(f"kernel-ports: {name}: entry {i}: {what}")

    if not isinstance(e, dict):
        raise bad("expected an object")
    for key in ("directory", "file", "command"):
        if key in e and not isinstance(e[key], str):
            raise bad(f"`{key}` must be a string")
    args = e.get("arguments")
    if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise bad("`arguments` must be a list of strings")
    if "\0" in "".join([e.get("directory", ""), e.get("file", ""), e.get("command", "")] + list(args or ())):
        raise bad("a NUL character")
    if not args:
        try:
            args = shlex.split(e.get("command", ""))
        except ValueError as exc:
            raise bad(f"`command` cannot be split into arguments ({exc})") from None
    return e.get("directory", "."), e.get("file", ""), args
