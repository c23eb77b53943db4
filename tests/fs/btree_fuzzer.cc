// libFuzzer target: the B+tree node verifier (fs/format/btree_format.h),
// and, for what it accepts, the accessors and changes that trust it.
//
// The input is a whole node; its first byte also picks the node size (bits
// 2-3).  Unless that byte's low bit is set, the harness gives the node the
// magic bit 1 selects (leaf or internal), the block number and uuid the
// verifier expects and a valid CRC, so that the fuzzer spends its time on
// the structural checks rather than on guessing magics and CRCs.  A node that verifies must read without
// going out of bounds, and must still verify after a record is removed and
// another inserted.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "base/coding.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"

namespace {
using namespace walfs::fs::format;

constexpr std::uint64_t kBlkno = 1234;
constexpr Uuid kUuid{0xde, 0xad, 0xbe, 0xef};

bool Verifies(std::span<const std::byte> block) { return VerifyBtreeNode(block, kBlkno, kUuid).ok(); }

void ExerciseLeaf(std::vector<std::byte> block) {
  const std::uint32_t n = DecodeBtreeNodeHeader(block).nrecs;
  if (n > 1) {
    BtreeLeafRemove(block, n / 2);
    SealBlock(block);
    if (!Verifies(block)) __builtin_trap();
  }
  const std::uint64_t key = BtreeKey(block, 0) == 0 ? BtreeKey(block, 0) + 1 : BtreeKey(block, 0) - 1;
  const std::uint32_t i = BtreeLowerBound(block, key);
  const bool present = i < DecodeBtreeNodeHeader(block).nrecs && BtreeKey(block, i) == key;
  if (!present && BtreeLeafFree(block) >= BtreeRecordCost(7)) {
    BtreeLeafInsert(block, i, key, "fuzzed!");
    SealBlock(block);
    if (!Verifies(block)) __builtin_trap();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool raw = (data[0] & 1) != 0;
  // Node sizes the verifier accepts, and a few it must refuse.
  const std::size_t block_size = std::size_t{512} << ((data[0] >> 2) % 4);
  std::vector<std::byte> block(block_size);
  std::memcpy(block.data(), data, std::min(size, block_size));
  if (!raw) {
    char* p = reinterpret_cast<char*>(block.data());
    walfs::EncodeFixed32(p, (data[0] & 2) != 0 ? kBtreeLeafMagic : kBtreeNodeMagic);
    walfs::EncodeFixed64(p + 16, kBlkno);
    std::memcpy(p + 32, kUuid.data(), kUuid.size());
    SealBlock(block);
  }
  if (!Verifies(block)) return 0;
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < h.nrecs; ++i) {
    sum += BtreeKey(block, i);
    if (h.level == 0) sum += BtreeValue(block, i).size();
    else sum += BtreeChild(block, i);
  }
  sum += BtreeLowerBound(block, sum);
  if (h.level == 0) {
    sum += BtreeLeafFree(block) + BtreeLeafContiguousFree(block);
    ExerciseLeaf(block);
  }
  [[maybe_unused]] static volatile std::uint64_t sink;  // keeps the reads
  sink = sum;
  return 0;
}
