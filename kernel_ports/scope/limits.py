"""Bounds on the work a tree may ask of the check, and what is said when one is reached.

A pull request controls every file the check reads, so each kind of work has
a limit: the number of files in scope and their total size (past either the
run stops with exit 2 before anything is parsed), the size of one file, and
per parse a timeout and an address-space budget for the parser process. The
registry's `limits:` section sets them and `--limit NAME=VALUE` overrides one
for a run; every message about a limit names it and says how to raise it.

A parse that hits the memory budget fails inside libclang (its crash
recovery, an `LLVM ERROR: out of memory`, or `std::bad_alloc` ending the
process). The parser process writes its standard error to a file of its own,
so the pool can tell a memory limit from any other crash and say which.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_files: int = 20_000  # source files in scope
    max_total_bytes: int = 256 * MIB  # their total size
    max_file_bytes: int = 2 * MIB  # one file; larger ones are KP901 (size)
    parse_timeout_s: float = 120.0  # one Clang parse
    # address space one parser process may add to what it starts with (libclang itself is ~120 MiB of it); a
    # launcher of the sample engine parsed against the real MLX headers peaks ~160 MiB above the start; 0: none
    parser_memory_mib: int = 4096

    @classmethod
    def of(cls, registry) -> "Limits":
        return cls(**dict(getattr(registry, "limits", None) or {}))


NAMES = tuple(f.name for f in dataclasses.fields(Limits))


class InputError(Exception):
    """An input the tree supplies (compile_commands.json ...) that cannot be used: one line, exit 2."""


class LimitError(InputError):
    """The tree is larger than a limit allows: one line, exit 2."""


def how_to_raise(name: str) -> str:
    return f"raise it with `limits: {{{name}: N}}` in the registry or `--limit {name}=N`"


def parse_overrides(items) -> dict:
    """`--limit NAME=VALUE` flags -> {name: number}; raises ValueError with a one-line message."""
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in NAMES:
            raise ValueError(f"--limit: expected NAME=VALUE with NAME one of {', '.join(NAMES)}, got {item!r}")
        kind = float if name == "parse_timeout_s" else int
        try:
            number = kind(value)
        except ValueError:
            raise ValueError(f"--limit {name}: not a number: {value!r}") from None
        if number < 0 or (number == 0 and name != "parser_memory_mib"):
            raise ValueError(f"--limit {name}: must be positive, got {value!r}")
        out[name] = number
    return out


# -- what a lost file means --------------------------------------------------

# The causes a file can be lost to; a reason string is "<cause>: <detail>".
CAUSES = ("timeout", "memory limit", "crash", "parse failure", "encoding", "binary", "size", "unreadable", "outside root",
          "nesting")
VERDICT = "no rule could judge it, so the check fails closed until it can be analyzed"


def lost(cause: str, detail: str) -> str:
    return f"{cause}: {detail}"


def lost_message(reason: str) -> str:
    """The one-line KP901 message for an unanalyzable file's reason."""
    cause, sep, detail = reason.partition(": ")
    if not sep or cause not in CAUSES:
        cause, detail = "crash", reason
    return f"not analyzed ({cause}): {detail}; {VERDICT}"


# -- in the parser process ---------------------------------------------------

OOM_MARKERS = ("out of memory", "std::bad_alloc", "Allocation failed", "MemoryError", "Cannot allocate memory")


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def apply_memory_limit(budget_mib: int) -> bool:
    """Bound this process's address space to what it uses now plus the budget; False where there is no RLIMIT_AS."""
    if not budget_mib:
        return False
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = _address_space() + budget_mib * MIB
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, soft)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        return True
    except (ImportError, OSError, ValueError, AttributeError):
        return False


class StderrLog:
    """The parser process's standard error, in a file the pool reads when a parse fails."""

    def __init__(self, path: str):
        self.path = path
        self.offset = 0

    @classmethod
    def create(cls, folder=None) -> "StderrLog":
        """A new log in ``folder`` (made if need be; None or one that cannot be made: the temporary folder)."""
        import tempfile

        if folder is not None:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError:
                folder = None
        fd, path = tempfile.mkstemp(prefix="kernel-ports-parser-", suffix=".log", dir=folder)
        os.close(fd)
        return cls(path)

    def attach(self) -> None:
        """In the parser process: fd 2 goes to the file (libclang's own messages too)."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)

    def since_last(self) -> str:
        """What was written since the last call (at most the last 4 KiB of it)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                end = fh.tell()
                start = max(self.offset, end - 4096)
                fh.seek(start)
                text = fh.read(end - start).decode("utf-8", "replace")
        except OSError:
            return ""
        self.offset = end
        return text

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


def ran_out_of_memory(stderr_text: str) -> bool:
    return any(m in stderr_text for m in OOM_MARKERS)


def memory_detail(budget_mib: int) -> str:
    return f"the parser ran out of memory under the {budget_mib} MiB address-space limit of a parser process"


def timeout_detail(seconds: float) -> str:
    return f"the parser timed out after {seconds:g} s"


def crash_detail(stderr_text: str, what: str) -> str:
    """A crash, with the last line the parser wrote, if any."""
    def telling(line: str) -> bool:  # not a line of libclang's crash dump (`{`, `'key' : value,`, `}`)
        line = line.strip()
        return bool(line) and line not in "{}" and not line.startswith("'") and LIBCLANG_CRASH not in line

    last = next((line.strip() for line in reversed(stderr_text.splitlines()) if telling(line)), "")
    return f"{what} ({last[:160]})" if last else what


# -- the pool's verdict on one job -------------------------------------------

REPLACE_AFTER = ("memory", "crash")  # statuses after which a parser process is not reused
LIBCLANG_CRASH = "crash detected during parsing"


def judge_reply(reply: tuple, stderr_text: str, budget_mib: int) -> tuple:
    """In the parser process: a reply whose failure the standard error explains is reported by its cause."""
    status, out = reply
    failed = status != "ok" or getattr(out, "ok", True) is False
    if not failed:
        return reply
    if budget_mib and (ran_out_of_memory(stderr_text) or (status == "error" and str(out).startswith("MemoryError"))):
        return "memory", memory_detail(budget_mib)
    if LIBCLANG_CRASH in stderr_text:
        return "crash", crash_detail(stderr_text, "libclang crashed while parsing")
    return reply


def judge_death(exitcode, stderr_text: str, budget_mib: int) -> tuple:
    """In the pool: a parser process that died during a job."""
    if budget_mib and ran_out_of_memory(stderr_text):
        return "memory", memory_detail(budget_mib)
    if isinstance(exitcode, int) and exitcode < 0:
        import signal

        try:
            name = f" ({signal.Signals(-exitcode).name})"
        except ValueError:
            name = ""
        what = f"the parser process died of signal {-exitcode}{name}"
    else:
        what = f"the parser process exited with code {exitcode}"
    return "crash", crash_detail(stderr_text, what)


_STATUS_CAUSE = {"timeout": "timeout", "memory": "memory limit", "crash": "crash", "error": "crash"}


def pool_reason(status: str, detail: str, configuration: str) -> str:
    """An unanalyzable reason for a job the pool could not finish."""
    if status == "error":
        detail = f"the front end raised {detail}"
    raise_it = {"memory": "parser_memory_mib", "timeout": "parse_timeout_s"}.get(status)
    tail = f" (limits.{raise_it}; {how_to_raise(raise_it)})" if raise_it else ""
    return lost(_STATUS_CAUSE.get(status, "crash"), f"{detail} in configuration {configuration}{tail}")


def parse_reason(error: str, configuration: str) -> str:
    """An unanalyzable reason for a parse that ended without a usable AST."""
    cause = "nesting" if "too deep" in (error or "") else "crash" if "crashed" in (error or "") else "parse failure"
    return lost(cause, f"{error} in configuration {configuration}")


# tree-sitter parses run in this process: each parser gives up after this long (a 2 MiB file of `a<a<a<...` takes
# tree-sitter's error recovery a minute; an ordinary 2 MiB file takes well under a second)
SYNTAX_TIMEOUT_S = 20


def bounded_parser(parser):
    """A tree-sitter parser that raises ValueError("Parsing failed") past SYNTAX_TIMEOUT_S."""
    import warnings

    with warnings.catch_warnings():  # the attribute is deprecated for progress_callback, which crashes 0.25.2
        warnings.simplefilter("ignore")
        parser.timeout_micros = int(SYNTAX_TIMEOUT_S * 1_000_000)
    return parser


def guarded(lost_files: list, path: str, what: str, run, *args):
    """`run(*args)`, or None with `path` recorded as lost when it raises: one file's input never ends the run."""
    try:
        return run(*args)
    except ValueError as exc:
        if str(exc) != "Parsing failed":
            lost_files.append((path, lost("crash", f"{what} failed: ValueError: {str(exc)[:160]}")))
        else:
            lost_files.append((path, lost("timeout", f"{what} gave up after {SYNTAX_TIMEOUT_S:g} s (a fixed bound: an "
                                                     f"ordinary file of the size limit takes well under a second)")))
    except RecursionError:
        lost_files.append((path, lost("nesting", f"{what} found the file nested too deeply to walk")))
    except Exception as exc:  # a front-end defect on this input: the file is lost, not the run
        lost_files.append((path, lost("crash", f"{what} failed: {type(exc).__name__}: {str(exc)[:160]}")))
    return None
