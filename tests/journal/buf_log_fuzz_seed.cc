// Writes two valid buffer log bodies into the directory named by argv[1]
// ("buffer": chunks 0 and 31 of a 4 KiB block with an LSN stamp; "cancel"):
// the seed corpus of buf_log_fuzzer.
#include <cstdio>
#include <string>

#include "journal/buf_log_format.h"

namespace {

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace walfs::journal;
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  BufLogFormat buf;
  buf.blkno = 12;
  buf.lsn_offset = 8;
  buf.chunk_map.assign(BufMapWords(buf.block_size), 0);
  SetChunks(&buf.chunk_map, 0, 127);
  SetChunks(&buf.chunk_map, 4000, 4095);
  buf.data.assign(2 * kBufChunkSize, 'b');
  BufLogFormat cancel;
  cancel.flags = kBufCancel;
  cancel.blkno = 12;
  cancel.chunk_map.assign(BufMapWords(cancel.block_size), 0);
  return WriteFile(dir + "/buffer", EncodeBufLog(buf)) &&
                 WriteFile(dir + "/cancel", EncodeBufLog(cancel))
             ? 0
             : 1;
}
