"""A parse leaves nothing of its translation unit behind: the walk and its extractors hold each other, and a cycle
through the walk would keep libclang's memory for the unit (hundreds of MiB with the real MLX headers) alive until a
full garbage collection — in a parser worker, parse after parse."""

import gc
import weakref

from kernel_ports.frontend import clang
from kernel_ports.frontend.clang import walk as walk_mod
from tests.frontend.test_prelude import DIRECT
from tests.frontend.test_walk_isolation import _parse


def _parse_watched(tmp_path, monkeypatch):
    """Parse with the cyclic collector off; weak references to the walk and its translation unit."""
    seen = []
    real_init = walk_mod.Walk.__init__

    def watched(self, tu, job, res):
        real_init(self, tu, job, res)
        seen.append((weakref.ref(self), weakref.ref(tu)))

    monkeypatch.setattr(walk_mod.Walk, "__init__", watched)
    gc.collect()
    gc.disable()
    try:
        res = _parse(tmp_path, DIRECT)
        alive = [(w() is not None, t() is not None) for w, t in seen]
    finally:
        gc.enable()
    return res, alive


def test_the_walk_and_its_translation_unit_are_freed_when_the_parse_returns(tmp_path, monkeypatch):
    res, alive = _parse_watched(tmp_path, monkeypatch)
    assert res.ok and [fc.kernel_name for fc in res.factory_calls] == ["k"]  # the walk did its work
    assert alive == [(False, False)]


def test_without_closing_the_walk_the_cycle_keeps_the_unit(tmp_path, monkeypatch):
    """The control: the same watch sees the unit kept when the walk's close() leaves the cycle in place."""
    monkeypatch.setattr(walk_mod.Walk, "close", lambda self: None)
    res, alive = _parse_watched(tmp_path, monkeypatch)
    assert res.ok and alive == [(True, True)]
    assert clang.TUResult  # the package's public names are unchanged by the watch
