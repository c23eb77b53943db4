// libFuzzer target: the superblock decoder, and the AG header (with its
// superblock copy) and bitmap decoders against a fixed geometry, on
// arbitrary bytes.  They must refuse with a reason, never crash or read
// out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fs/format/ag_format.h"
#include "fs/format/superblock_format.h"
#include "fs/mkfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace walfs::fs;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  auto sb = format::DecodeSuperblock(std::span<const std::byte>(bytes, size), 1ull << 40);
  if (sb.ok()) {
    (void)format::SuperblockString(*sb);
    // Derived geometry must be computable without faults.
    for (std::uint32_t agno = 0; agno < sb->ag_count && agno < 4; ++agno) (void)sb->AgLength(agno);
  }
  static const format::Superblock fixed = *PlanFilesystem(64ull << 20, {.block_size = 1024});
  if (size >= fixed.block_size) {
    std::span<const std::byte> block(bytes, fixed.block_size);
    (void)format::DecodeAgHeader(block, fixed, 0);
    if (auto copy = format::DecodeAgSuperCopy(block, 1ull << 40); copy.ok())
      (void)format::SuperblockCopyMismatch(*copy, fixed);
    (void)format::VerifyBitmapBlock(block, fixed, 0, 0);
    (void)format::VerifyImapBlock(block, fixed, 0, 0);
  }
  return 0;
}
