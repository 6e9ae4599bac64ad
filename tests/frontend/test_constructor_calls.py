"""A constructor call with nine arguments assigned to a member (``rope_ = SomeRoPE(dims, base, ...)``, a class with
a call operator declared in a header) is the typed call the witness saw, not a lost kernel invocation: the type
name Clang lists among the call's children is no argument. In a launcher and in a header alike."""

from helpers import index_tree, marker_line
from snippets import PORTS_H


ROTARY_H = r'''#pragma once
#include "eng/ports.h"
namespace eng {
// a functor: the witness cannot tell its construction from a call of it
struct RotaryEmbedding {
  RotaryEmbedding() = default;
  RotaryEmbedding(int dims, float base, bool traditional, float scale, int offset, int rows, int cols, int heads,
                  int groups);
  mlx::core::array operator()(const mlx::core::array& x, int offset = 0) const;
};
struct HeaderBlock {
  RotaryEmbedding rope_;
  void reset(int dims, float base) {
    rope_ = RotaryEmbedding(dims, base, false, 1.0f, 0, 1, 2, 3, 4);  // @header-member
  }
};
}  // namespace eng
'''

BLOCK_CPP = r'''#include "eng/rotary.h"
namespace eng {
struct Block {
  RotaryEmbedding rope_;
  void reset(int dims, float base) {
    rope_ = RotaryEmbedding(dims, base, true, 1.0f, 0, 1, 2, 3, 4);  // @launcher-member
  }
  void reset_lost(int dims) {
    rope_ = UndeclaredEmbedding(dims, 1.0f, true, 1.0f, 0, 1, 2, 3, 4);  // @lost
  }
  mlx::core::array apply(const mlx::core::array& x) const { return rope_(x); }
};
}  // namespace eng
'''

TREE = {"src/eng/ports.h": PORTS_H, "src/eng/rotary.h": ROTARY_H, "src/eng/block.cpp": BLOCK_CPP}


def _line(path, marker):
    return marker_line(TREE[path], marker)


def test_a_constructor_assigned_to_a_member_is_not_a_lost_invocation(tmp_path):
    idx = index_tree(tmp_path, TREE)
    lost = {(u.loc.path, u.loc.line) for u in idx.unconfirmed}
    # negative control: the same shape naming a class Clang does not know is still a lost candidate
    assert ("src/eng/block.cpp", _line("src/eng/block.cpp", "lost")) in lost
    assert ("src/eng/block.cpp", _line("src/eng/block.cpp", "launcher-member")) not in lost, idx.unconfirmed
    assert ("src/eng/rotary.h", _line("src/eng/rotary.h", "header-member")) not in lost, idx.unconfirmed
    assert len(lost) == 1, idx.unconfirmed
