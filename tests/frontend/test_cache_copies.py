"""A copy of the tree elsewhere reuses the cached parses of its unchanged files."""

from helpers import files_under
from kernel_ports.index import build_index
from kernel_ports.registry.load import load_registry
from tests.mutate import Mutation, engine_copy


def test_copy_of_the_engine_reuses_every_parse(engine_index, tmp_path):
    copy = engine_copy(tmp_path, Mutation("src/lib/mlx-cpp/turbo/rope.cpp", "const int dims = x.shape(-1);",
                                          "const int dims = x.shape(-1);  // changed in the copy"))
    registry = load_registry(copy.registry_path, root_override=str(copy.root))
    index = build_index(registry, files_under(copy.root), jobs=2, cache_dir=engine_index._test_cache_dir)
    reparsed = sorted((q.path, q.configuration) for q in index.parse_quality if not q.cached)
    assert reparsed == [("src/lib/mlx-cpp/turbo/rope.cpp", "default"), ("src/lib/mlx-cpp/turbo/rope.cpp", "rocm")]
    assert len(index.invocations) == len(engine_index.invocations)
