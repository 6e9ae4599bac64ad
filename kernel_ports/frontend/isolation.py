"""An exception while walking one declaration loses that declaration, never the file.

The walk of a translation unit runs declaration by declaration; a failure in
one (a libclang binding raising on a cursor it did not expect, a recursion too
deep) is recorded at that declaration as a ``walk_failure`` entry among the
result's untyped constructs, which the index turns into a KP902 finding there,
and the walk goes on with the next declaration. A failure in a phase that joins
the whole unit (invocations, taint, refusals) is recorded at the unit's first
line: what that phase would have added is missing, and the finding says so.
"""

from __future__ import annotations

WALK_FAILURE = "walk_failure"


def walk_isolated(walker, cursor, fn, *args) -> None:
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - any failure of one declaration is reported, never fatal
        walker.res.untyped.append(_failure(walker, cursor, fn, exc))


def finish_isolated(walker, phase: str, fn) -> None:
    """A phase that joins the whole unit (``phase`` names it in the finding)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - a failed phase is reported, never fatal
        walker.res.untyped.append(_phase_failure(walker, phase, f"{type(exc).__name__}: {exc}"[:300]))


def _phase_failure(walker, name: str, reason: str) -> tuple:
    return (walker.job.relpath, 1, 1, WALK_FAILURE, name, f"the {name} phase of the walk failed ({reason})")


def _failure(walker, cursor, fn, exc) -> tuple:
    reason = f"{type(exc).__name__}: {exc}"[:300]
    if cursor is None:
        return _phase_failure(walker, fn.__name__.lstrip("_").replace("_", " "), reason)
    try:
        loc = walker.loc(cursor)
        name = walker.qname(cursor) or cursor.spelling
    except Exception:  # noqa: BLE001 - the cursor itself may be what fails
        return (walker.job.relpath, 1, 1, WALK_FAILURE, "a declaration", f"the walk failed ({reason})")
    return (loc.path, loc.line, loc.column, WALK_FAILURE, name, f"the walk of this declaration failed ({reason})")
