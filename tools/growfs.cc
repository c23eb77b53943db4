#include "tools/growfs.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "mount/growfs_ioctl.h"
#include "tools/cli.h"

namespace walfs::tools {
namespace {

constexpr int kExitOk = 0, kExitFail = 1;
constexpr long kFuseSuperMagic = 0x65735546;

// xfs_growfs's geometry lines, in walfs's terms.
void PrintGeometry(const std::string& mnt, const mount::GrowfsArgs& g, std::uint64_t blocks, std::uint32_t agcount) {
  fmt::print("meta-data={:<22} agcount={}, agsize={} blks\n", mnt, agcount, g.ag_blocks);
  fmt::print("data     ={:<22} bsize={:<6} blocks={} ({} bytes)\n", "", g.block_size, blocks,
             blocks * g.block_size);
  fmt::print("log      =internal log           bsize={:<6} blocks={}\n", g.block_size, g.log_blocks);
}

int Fail(std::string_view program, const std::string& what) {
  fmt::print(stderr, "{}: {}\n", program, what);
  return kExitFail;
}

}  // namespace

int GrowfsMain(int argc, char** argv, std::string_view program) {
  CLI::App app{fmt::format(
      "{}: grow a mounted walfs filesystem to SIZE (default: the size of its image file or device), "
      "as xfs_growfs does.  The last allocation group is lengthened, then groups are added; a remainder "
      "too small for a group is left unused.  An image file shorter than SIZE is extended.  walfs does not "
      "shrink.  Root only (-n: anyone).",
      program)};
  app.name(std::string(program));  // "walfs grow" names itself so in usage lines
  cli::AddVersion(app, program);
  bool query = false;
  std::string mnt, size_text;
  app.add_flag("-n,--no-change", query, "print the geometry only; change nothing");
  app.add_option("MNT", mnt, "the walfs mount point")->required();
  app.add_option("SIZE", size_text, "the new size: bytes, or with K, M, G or T (as mkfs.walfs)");
  app.footer("Exit status: 0 grown (or nothing to do); 1 failure; 2 usage error.");
  if (auto code = cli::Parse(app, argc, argv)) return *code;
  std::uint64_t new_bytes = 0;
  if (!size_text.empty()) {
    Result<std::uint64_t> v = cli::ParseSize(size_text);
    if (!v.ok()) return cli::UsageError(program, v.status().message());
    if (*v == 0) return cli::UsageError(program, "SIZE must be above 0; leave it out for the device's size");
    new_bytes = *v;
  }

  const int fd = open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Fail(program, fmt::format("{}: {}", mnt, std::strerror(errno)));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct statfs sfs {};
  if (fstatfs(fd, &sfs) != 0) return Fail(program, fmt::format("{}: {}", mnt, std::strerror(errno)));
  if (sfs.f_type != kFuseSuperMagic)
    return Fail(program, fmt::format("{} is not a walfs mount point (not even a FUSE mount)", mnt));

  mount::GrowfsArgs g{};
  g.flags = mount::kGrowfsQuery;
  if (ioctl(fd, mount::kIocGrowfs, &g) != 0) {
    if (errno == ENOTTY || errno == ENOSYS || errno == EINVAL)
      return Fail(program, fmt::format("{} is not a walfs mount point, or its daemon predates walfs-growfs "
                                       "(the ioctl is unknown there)",
                                       mnt));
    return Fail(program, fmt::format("{}: reading the geometry: {}", mnt, std::strerror(errno)));
  }
  PrintGeometry(mnt, g, g.old_blocks, g.old_ag_count);
  if (query) return kExitOk;
  if (new_bytes != 0 && new_bytes / g.block_size < g.old_blocks)
    return Fail(program, fmt::format("{} ({} blocks) is smaller than the filesystem ({} blocks, {} bytes): walfs "
                                     "cannot shrink; give a larger SIZE",
                                     size_text, new_bytes / g.block_size, g.old_blocks,
                                     g.old_blocks * g.block_size));

  mount::GrowfsArgs req{};
  req.new_bytes = new_bytes;
  if (ioctl(fd, mount::kIocGrowfs, &req) != 0) {
    const int err = errno;
    switch (err) {
      case EPERM:
      case EACCES:
        return Fail(program, fmt::format("{}: only root may grow a filesystem; run it as root (sudo {} ...)", mnt,
                                         program));
      case EINVAL:
        return Fail(program, fmt::format("{}: the size is smaller than the filesystem: walfs cannot shrink", mnt));
      case EROFS:
        return Fail(program, fmt::format("{} is mounted read-only; remount it read-write to grow it", mnt));
      case ENOSPC:
        return Fail(program, fmt::format("{}: the device is smaller than {}; grow the device first (losetup -c, "
                                         "lvextend, ...) or give a smaller SIZE",
                                         mnt, size_text.empty() ? "asked" : size_text));
      case EOPNOTSUPP:
        return Fail(program, fmt::format("{}: the image cannot be extended to {}; extend it first", mnt,
                                         size_text.empty() ? "that size" : size_text));
      default:
        return Fail(program, fmt::format("{}: growing failed: {}; {}/.walfs/messages may say why", mnt,
                                         std::strerror(err), mnt));
    }
  }
  if (req.new_blocks == req.old_blocks) {
    fmt::print("data size unchanged, skipping{}\n",
               req.unused_blocks ? fmt::format(" ({} blocks past the end are too few for an allocation group)",
                                               req.unused_blocks)
                                 : std::string());
    return kExitOk;
  }
  fmt::print("data blocks changed from {} to {} ({} to {} allocation groups)\n", req.old_blocks, req.new_blocks,
             req.old_ag_count, req.new_ag_count);
  if (req.unused_blocks)
    fmt::print("{} blocks at the end are left unused: too few for an allocation group\n", req.unused_blocks);
  return kExitOk;
}

}  // namespace walfs::tools
