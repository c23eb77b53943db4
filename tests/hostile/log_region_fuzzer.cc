// libFuzzer target: a whole log region as recovery reads it -- the head
// and tail search (journal/log_head.h), the record reader across the
// region (journal/log_reader.h), transaction reassembly and buffer replay
// (journal/log_recover.h) onto a scratch metadata device, with the
// filesystem's block sealing and stamp checks.  The log record and buffer
// body fuzzers cover one record or body alone; this one the sequence.
//
// Input: the log's bytes (padded with zeros to whole sectors, 8 at least).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/block_device_memory.h"
#include "fs/format/block_types.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "journal/log_recover.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace walfs::journal;
  const std::size_t sectors = std::max<std::size_t>(8, (size + kLogSectorSize - 1) / kLogSectorSize);
  if (sectors > 2048) return 0;
  std::vector<std::byte> log(sectors * kLogSectorSize);
  std::memcpy(log.data(), data, size);
  walfs::MemoryDevice dev(std::move(log));
  const LogRegion region{.device = &dev, .offset = 0, .sectors = static_cast<std::uint32_t>(sectors)};
  auto pos = FindLogPosition(region);
  if (!pos.ok()) return 0;
  (void)LogPositionString(*pos);
  LogReader reader(region, pos->tail, pos->head);
  LogRecordAt rec;
  std::size_t n = 0;
  while (reader.Next(&rec))
    if (++n > sectors) __builtin_trap();  // every record takes a sector at least
  walfs::MemoryDevice metadata(1 << 20);
  auto report = RecoverLog({.log = region, .metadata = &metadata, .seal = walfs::fs::format::SealMetadataBlock,
                            .stamp_valid = walfs::fs::format::BlockStampValid});
  if (report.ok()) (void)RecoverReportString(*report);
  return 0;
}
