"""Seeded mutations of the sample engine and its registry, for the fuzz test (tests/test_fuzz.py).

Every case is a pure function of the seed: `source_cases(seed, n)` and `registry_cases(seed, n)` return the
same list each time, so a failure is reproduced by its name alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import yaml

from tests.mutate import ENGINE, REGISTRY

SOURCES = sorted(p.relative_to(ENGINE).as_posix() for p in (ENGINE / "src").rglob("*")
                 if p.is_file() and p.suffix in (".cpp", ".h", ".rs"))
LAUNCHERS = tuple(p for p in SOURCES if p.endswith(".cpp") and "/turbo/" in p and "kernel_port" not in p
                  and "gpu_backend" not in p)
TEN_MB = 10 * 1024 * 1024


@dataclass(frozen=True)
class Case:
    name: str
    path: str = ""  # the file changed ("" for a registry case)
    data: bytes = b""  # its new content
    registry: str = ""  # the registry's new text, for a registry case
    damages: bool = False  # the change certainly breaks what the file declares
    flags: tuple = field(default=())


def _truncate(rng, data: bytes):
    """Cut a launcher before its port table: what it declares is certainly gone."""
    table = data.find(b"KernelPorts")
    return data[:rng.randrange(1, table if table > 1 else len(data))], table > 1


def _delete_brace(rng, data: bytes):
    at = [i for i, b in enumerate(data) if b in b"{}"]
    i = rng.choice(at)
    return data[:i] + data[i + 1:], False


def _random_bytes(rng, data: bytes):
    i = rng.randrange(len(data))
    return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))) + data[i:], False


def _random_ascii(rng, data: bytes):
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 200))
    junk = bytes(rng.choice(b"{}()[]<>;,:\"'#\\/*+-=!&|?~ \nabcXYZ0129") for _ in range(j - i))
    return data[:i] + junk + data[j:], False


def _deep_nesting(rng, data: bytes):
    depth = rng.choice((300, 3000, 30000))
    opener, closer = rng.choice(((b"{", b"}"), (b"(", b")"), (b"[", b"]"), (b"<", b">")))
    body = b"\nint deep_nesting_probe = " + opener * depth + b"0" + closer * depth + b";\n"
    return data + body, False


def _ten_mb_line(rng, data: bytes):
    filler = rng.choice((b"/*" + b"x" * TEN_MB + b"*/", b"int a" + b"=a" * (TEN_MB // 2) + b";"))
    return data + b"\n" + filler + b"\n", False


def _duplicate_chunk(rng, data: bytes):
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 400))
    return data[:j] + data[i:j] + data[j:], False


MUTATORS = (_truncate, _delete_brace, _random_bytes, _random_ascii, _deep_nesting, _duplicate_chunk, _ten_mb_line)


def source_cases(seed: int, n: int) -> list:
    rng = random.Random(seed)
    out = []
    for k in range(n):
        mutate = MUTATORS[k % len(MUTATORS)]
        path = rng.choice(LAUNCHERS if mutate is _truncate else SOURCES)
        data, damages = mutate(rng, (ENGINE / path).read_bytes())
        out.append(Case(f"src{k:02d}-{mutate.__name__.strip('_')}-{path.rsplit('/', 1)[-1]}", path, data,
                        damages=damages))
    return out


# -- the registry ---------------------------------------------------------------------------------------------

def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


VALUES = (None, True, 0, -1, 10**30, 1.5, "", "x", "../../etc/passwd", "/abs/path", "**", "[", "KP999", "\u00e9\u4e2d",
          "a" * 5000, [], {}, [1, "two", None], {"k": "v"}, [[[[[]]]]])


def _edit(rng, doc):
    paths = [p for p in _paths(doc) if p]
    path = rng.choice(paths)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    action = rng.choice(("value", "value", "type", "rename", "delete", "duplicate"))
    if action == "rename" and isinstance(parent, dict):
        parent[rng.choice(("name", "file", "tables", "Kernel", "ports", "x" * rng.randrange(1, 9)))] = parent.pop(last)
    elif action == "delete":
        del parent[last]
    elif action == "duplicate" and isinstance(parent, list):
        parent.append(parent[last])
    elif action == "type":
        value = parent[last]
        parent[last] = [value] if not isinstance(value, list) else {"k": value}
    else:
        parent[last] = rng.choice(VALUES)
    return f"{action}-{'.'.join(map(str, path))}"


class _NoAliases(yaml.SafeDumper):
    """A value the edits made twice is written out twice: an alias would only test the alias refusal again."""

    def ignore_aliases(self, data):
        return True


def registry_cases(seed: int, n: int) -> list:
    rng = random.Random(seed)
    base = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
    out = []
    for k in range(n):
        doc = yaml.safe_load(yaml.safe_dump(base))  # a deep copy
        edits = [_edit(rng, doc) for _ in range(rng.randrange(1, 4))]
        out.append(Case(f"reg{k:02d}-{edits[0][:60]}", registry=yaml.dump(doc, Dumper=_NoAliases, sort_keys=False)))
    return out
