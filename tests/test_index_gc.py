"""build_index pauses the cyclic garbage collector only while it runs, and leaves it as it found it."""

import gc

from kernel_ports.index import build_index
from kernel_ports.registry.load import load_registry
from tests.conftest import REGISTRY


def test_collector_state_is_restored(tmp_path):
    registry = load_registry(REGISTRY)
    seen = []
    import kernel_ports.index as index_mod

    real = index_mod._merge

    def spy(*args):
        seen.append(gc.isenabled())
        return real(*args)

    index_mod._merge, saved = spy, index_mod._merge
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
        index_mod._merge = saved
