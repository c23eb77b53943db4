// libFuzzer target for the buffer log body decoder: whatever the bytes,
// DecodeBufLog never reads out of bounds or crashes; a body it accepts
// re-encodes to the same bytes and applies cleanly to a block of its size.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "journal/buf_log_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace walfs::journal;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  walfs::Result<BufLogFormat> f = DecodeBufLog(bytes);
  if (!f.ok()) return 0;
  if (EncodeBufLog(*f) != bytes) __builtin_trap();  // one encoding per body
  std::vector<std::byte> block(f->block_size);
  if (!ApplyBufLog(*f, block).ok()) __builtin_trap();
  if (f->lsn_offset != kBufNoLsn) {
    StampBufLsn(block, f->lsn_offset, MakeLsn(1, 2));
    if (BufStampedLsn(block, f->lsn_offset) != MakeLsn(1, 2)) __builtin_trap();
  }
  return 0;
}
