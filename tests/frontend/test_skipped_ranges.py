"""The lines the preprocessor skipped, per file of a unit (``toolchain.skipped_ranges``): they keep a witness
candidate under ``#if 0`` from being a KP902. libclang is asked only about a file whose text may hold a
conditional directive (``toolchain.may_hold_conditional``), since each question costs ~0.3 ms whatever the file."""

from __future__ import annotations

import pytest

from helpers import make_registry, write_tree
from kernel_ports.frontend import clang
from kernel_ports.frontend.clang import toolchain

MAY_HOLD = [
    b"#if 0\n#endif\n",
    b"  #  ifdef X\n#endif\n",
    b"#ifndef X\n#endif\n",
    b"#if 1\n#elif 2\n#endif\n",
    b"#if 1\n#else\n#endif\n",
    b"%:if 0\n%:endif\n",  # a digraph
    b"# /* a comment */ if 0\n#endif\n",
    b"# /* a comment\n over lines */ if 0\n#endif\n",
    b"#\\\nif 0\n#endif\n",  # spliced after the `#`
    b"#i\\\nf 0\n#endif\n",  # spliced inside the name
    b"#i\\  \r\nfdef X\n#endif\n",  # a splice with blanks before its line end
    b"#i\\\rf 0\n#endif\n",  # a splice with a lone carriage return
    b"??=if 0\n??=endif\n",  # a trigraph (any `??` counts)
]
MAY_NOT_HOLD = [
    b"",
    b"#pragma once\n#include <vector>\nint f(int x) { if (x) return 1; else return 2; }\n",
    b"#define IF_ELSE 1\nconst char* s = \"# define\";\n",
]


@pytest.mark.parametrize("text", MAY_HOLD)
def test_a_conditional_directive_in_any_spelling_is_seen(text):
    assert toolchain.may_hold_conditional(text)


@pytest.mark.parametrize("text", MAY_NOT_HOLD)
def test_a_file_without_one_is_not_asked_about(text):
    assert not toolchain.may_hold_conditional(text)


HEADER_SKIPPING = "#pragma once\nint h1();\n%:if 0\nint off_in_header();\n%:endif\nint h2();\n"
HEADER_PLAIN = "#pragma once\nint h3();\n"
UNIT = ('#include "skip.h"\n#include "plain.h"\nint u1();\n#i\\\nf 0\nint off_in_unit();\n#endif\n'
        "int u2() { return h1() + h2() + h3(); }\n")


def _parse(tmp_path):
    write_tree(tmp_path, {"src/skip.h": HEADER_SKIPPING, "src/plain.h": HEADER_PLAIN, "src/u.cpp": UNIT})
    reg = make_registry(tmp_path, include_dirs=("src",))
    conf = reg.compile.configurations[0]
    rel = "src/u.cpp"
    job = clang.ParseJob(abspath=str(tmp_path / rel), relpath=rel, configuration=conf.name,
                         args=tuple(clang.build_args(reg, conf, rel)), root=str(reg.root),
                         project_files=frozenset({rel, "src/skip.h", "src/plain.h"}),
                         conventions=clang.Conventions.from_registry(reg))
    res = clang.parse_translation_unit(job)
    assert res.ok, res.error
    assert set(res.files_walked) == {rel, "src/skip.h", "src/plain.h"}
    return res


def test_the_skipped_lines_of_the_unit_and_of_its_header_are_reported(tmp_path):
    res = _parse(tmp_path)
    assert res.skipped == {"src/u.cpp": [(4, 7)], "src/skip.h": [(3, 5)]}


def test_the_files_libclang_is_asked_about(tmp_path, monkeypatch):
    asked = []
    real = toolchain.may_hold_conditional

    def recording(data):
        asked.append(data)
        return real(data)

    monkeypatch.setattr(toolchain, "may_hold_conditional", recording)
    _parse(tmp_path)
    assert sorted(asked) == sorted(t.encode() for t in (HEADER_SKIPPING, HEADER_PLAIN, UNIT))


def test_a_gate_that_missed_a_directive_would_lose_the_lines(tmp_path, monkeypatch):
    # negative control: the first test observes the gate, not only libclang
    monkeypatch.setattr(toolchain, "may_hold_conditional", lambda data: False)
    assert _parse(tmp_path).skipped == {}
