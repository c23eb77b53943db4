// Writes the seeds of image_fuzzer and log_region_fuzzer into DIR:
//   DIR/image/<flavour>-<kind>: a patch of each block kind's header (the
//     block's first 8 bytes set to themselves, then one byte changed), so
//     the fuzzer starts from every kind;
//   DIR/log_region/crashed: the written part of the log of a small image
//     whose filesystem was abandoned without unmounting (a dirty log with
//     committed transactions), and DIR/log_region/clean after an unmount.
// Generated from the current code at build time, so they never go stale.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/block_device_memory.h"
#include "base/coding.h"
#include "fs/filesystem.h"
#include "fs/mkfs.h"
#include "journal/log_head.h"
#include "journal/log_region.h"
#include "tests/hostile/hostile_image.h"

namespace {
using namespace walfs;

bool Write(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// The log of a small image up to its head, plus 16 zero sectors.
bool WriteLog(const std::filesystem::path& p, bool crash) {
  MemoryDevice dev(8ull << 20);
  auto sb = fs::MakeFilesystem(&dev, {.block_size = 1024, .ag_count = 1, .now_s = 1});
  if (!sb.ok()) return false;
  {
    auto fs = fs::Filesystem::MountDevice(&dev, {});
    if (!fs.ok()) return false;
    const std::uint64_t root = (*fs)->root();
    auto d = (*fs)->Mkdir({}, root, "d", 0755);
    auto f = (*fs)->Mknod({}, root, "f", S_IFREG | 0644, 0);
    if (!d.ok() || !f.ok()) return false;
    (void)(*fs)->Write(f->st_ino, 0, "data", 4);
    (void)(*fs)->SetXattr(f->st_ino, "user.a", "b", 0);
    (void)(*fs)->Rename(root, "f", d->st_ino, "g", 0);
    if (!(*fs)->Fsync(d->st_ino, false).ok()) return false;
    if (!crash && !(*fs)->Unmount().ok()) return false;
  }
  const journal::LogRegion region{.device = &dev, .offset = sb->log_offset(), .sectors = sb->log_sectors()};
  auto pos = journal::FindLogPosition(region);
  if (!pos.ok()) return false;
  const std::uint32_t n = std::min(region.sectors, journal::SectorOf(pos->head) + 16);
  auto bytes = region.ReadSectors(0, n);
  return bytes.ok() && Write(p, *bytes);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir / "image");
  std::filesystem::create_directories(dir / "log_region");
  for (int f = 0; f < 2; ++f) {
    auto base = hostile::BuildBaseImage(static_cast<hostile::Flavour>(f));
    if (!base.ok()) return 1;
    for (int k = 0; k < hostile::kBlockKinds; ++k) {
      const hostile::MetaBlock& t = base->blocks[k].front();
      std::string in = {static_cast<char>(f), static_cast<char>(k), 0, 0};
      for (std::uint16_t off = 0; off < 8; ++off) {
        PutFixed16(&in, off);
        in.push_back(static_cast<char>(base->image[t.offset + off]));
      }
      PutFixed16(&in, 52);
      in.push_back('\x7f');
      if (!Write(dir / "image" / fmt::format("{}-{}", hostile::FlavourName(base->flavour),
                                             hostile::BlockKindName(static_cast<hostile::BlockKind>(k))),
                 in))
        return 1;
    }
  }
  return WriteLog(dir / "log_region" / "crashed", true) && WriteLog(dir / "log_region" / "clean", false) ? 0 : 1;
}
