// libFuzzer target: the inode decoder and, for what it accepts, the local
// directory and extent decoders of its literal area.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/coding.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace walfs::fs::format;
  if (size < kInodeSize) return 0;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  // Claim whatever inode number the bytes say, to get past that check.
  const std::uint64_t ino = walfs::DecodeFixed64(reinterpret_cast<const char*>(data) + 104);
  auto inode = DecodeInode(std::span<const std::byte>(bytes, kInodeSize), ino);
  if (!inode.ok()) return 0;
  if ((inode->mode & S_IFMT) == S_IFDIR && inode->format == ForkFormat::kLocal) {
    std::uint64_t parent = 0;
    std::vector<DirEntry> entries;
    (void)DecodeLocalDir(std::string_view(inode->literal).substr(0, inode->size), &parent, &entries);
  }
  if (inode->format == ForkFormat::kExtents)
    for (std::uint32_t i = 0; i < inode->nextents; ++i) (void)DecodeExtent(inode->literal.data() + i * kExtentSize);
  return 0;
}
