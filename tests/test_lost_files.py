"""What is said about a file that could not be judged: one line, the cause first, what it means for the verdict."""

from __future__ import annotations

import pytest

from kernel_ports.scope import limits

VERDICT = "; no rule could judge it, so the check fails closed until it can be analyzed"


@pytest.mark.parametrize("reason, cause, detail", [
    (limits.pool_reason("timeout", limits.timeout_detail(120), "default"), "timeout",
     "the parser timed out after 120 s in configuration default (limits.parse_timeout_s; raise it with "
     "`limits: {parse_timeout_s: N}` in the registry or `--limit parse_timeout_s=N`)"),
    (limits.pool_reason("memory", limits.memory_detail(4096), "rocm"), "memory limit",
     "the parser ran out of memory under the 4096 MiB address-space limit of a parser process in configuration "
     "rocm (limits.parser_memory_mib; raise it with `limits: {parser_memory_mib: N}` in the registry or "
     "`--limit parser_memory_mib=N`)"),
    (limits.pool_reason(*limits.judge_death(-11, "", 4096), "default"), "crash",
     "the parser process died of signal 11 (SIGSEGV) in configuration default"),
    (limits.pool_reason("error", "ArgumentError: bad cursor", "default"), "crash",
     "the front end raised ArgumentError: bad cursor in configuration default"),
    (limits.parse_reason("Clang could not parse the file: Error parsing translation unit.", "default"),
     "parse failure", "Clang could not parse the file: Error parsing translation unit. in configuration default"),
    (limits.parse_reason("AST too deep to walk", "default"), "nesting", "AST too deep to walk in configuration default"),
    (limits.lost("encoding", "not UTF-8 text (byte 6)"), "encoding", "not UTF-8 text (byte 6)"),
    (limits.lost("size", "file is 3 bytes, over the 2-byte limit"), "size", "file is 3 bytes, over the 2-byte limit"),
])
def test_each_cause_is_named_first_in_one_line(reason, cause, detail):
    message = limits.lost_message(reason)
    assert message == f"not analyzed ({cause}): {detail}{VERDICT}"
    assert "\n" not in message


def test_a_reason_without_a_known_cause_is_called_a_crash_not_dropped():
    assert limits.lost_message("something odd") == f"not analyzed (crash): something odd{VERDICT}"


def test_the_explain_text_lists_every_cause():
    from kernel_ports.checkers.explain import explain_text

    text = explain_text("KP901")
    assert all(f"`{cause}`" in text for cause in limits.CAUSES)
