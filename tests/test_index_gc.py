"""build_index pauses the cyclic garbage collector only while it runs, and leaves it as it found it."""

import gc

from kernel_ports.index import build_index
from kernel_ports.registry.load import load_registry
from tests.conftest import REGISTRY


def test_collector_state_is_restored(tmp_path):
    registry = load_registry(REGISTRY)
    seen = []
    import kernel_ports.index.build as build_mod

    real = build_mod.merge_results

    def spy(*args):
        seen.append(gc.isenabled())
        return real(*args)

    build_mod.merge_results, saved = spy, build_mod.merge_results
    try:
        assert gc.isenabled()
        build_index(registry, [], jobs=1, cache_dir=tmp_path)
        assert gc.isenabled() and seen == [False]
        gc.disable()
        try:
            build_index(registry, [], jobs=1, cache_dir=tmp_path)
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        build_mod.merge_results = saved
