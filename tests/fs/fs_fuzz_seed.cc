// Writes fuzzer seeds from a fresh mkfs: DIR/superblock/seed (block 0) and
// DIR/inode/seed (the root directory's inode).
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/block_device_memory.h"
#include "fs/format/superblock_format.h"
#include "fs/mkfs.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  walfs::MemoryDevice dev(64ull << 20);
  auto sb = walfs::fs::MakeFilesystem(&dev, {.label = "seed"});
  if (!sb.ok()) return 1;
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir / "superblock");
  std::filesystem::create_directories(dir / "inode");
  std::vector<char> b(sb->block_size);
  if (!dev.Read(0, b.data(), b.size()).ok()) return 1;
  std::ofstream(dir / "superblock" / "seed", std::ios::binary).write(b.data(), walfs::fs::format::kSuperSize);
  const std::uint64_t off = sb->root_ino * sb->inode_size;
  std::vector<char> inode(sb->inode_size);
  if (!dev.Read(off, inode.data(), inode.size()).ok()) return 1;
  std::ofstream(dir / "inode" / "seed", std::ios::binary).write(inode.data(), static_cast<std::streamsize>(inode.size()));
  return 0;
}
