// BitmapView: an AG's free-space bitmap across its bitmap blocks, for the
// allocator's searches (alloc.cc) and FITRIM's walk (alloc_trim.cc).
// Internal to the allocator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/thread_annotations.h"
#include "fs/buf_cache.h"
#include "fs/format/ag_format.h"

namespace walfs::fs {

// The caller holds the AG header lock, which serializes every change to the
// bitmap blocks (held in `blocks` or not).
struct BitmapView {
  const format::Superblock& sb;
  std::vector<BufRef> blocks;
  // The first agblock in [from, to) that is `used`, or `to`.
  std::uint64_t Find(std::uint64_t from, std::uint64_t to, bool used) const NO_THREAD_SAFETY_ANALYSIS {
    const std::uint64_t bits = format::BitsPerBitmapBlock(sb.block_size);
    while (from < to) {
      const std::uint64_t index = from / bits, base = index * bits;
      const std::uint64_t stop = std::min(to, base + bits);
      const std::uint64_t hit = base + format::BitmapFind(blocks[index]->data(), from - base, stop - base, used);
      if (hit < stop) return hit;
      from = stop;
    }
    return to;
  }
};

}  // namespace walfs::fs
