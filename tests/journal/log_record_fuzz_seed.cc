// Writes one valid log record (two ops) to the file named by argv[1]: the
// seed corpus of log_record_fuzzer.
#include <cstdio>
#include <string>

#include "journal/log_format.h"

int main(int argc, char** argv) {
  using namespace walfs::journal;
  if (argc != 2) return 2;
  std::string payload;
  AppendOp(&payload, OpHeader{9, 0, kOpStart, ItemType::kNone}, "");
  AppendOp(&payload, OpHeader{9, 5, kOpCommit, ItemType::kBuffer}, "hello");
  RecordHeader h;
  h.cycle = 1;
  h.lsn = MakeLsn(1, 0);
  h.num_ops = 2;
  const std::string disk = EncodeRecord(h, payload);
  std::FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr) return 1;
  const bool ok = std::fwrite(disk.data(), 1, disk.size(), f) == disk.size();
  return std::fclose(f) == 0 && ok ? 0 : 1;
}
