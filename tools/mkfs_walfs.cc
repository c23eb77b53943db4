// mkfs.walfs: makes a walfs filesystem on an image file or a block device.
//
//   mkfs.walfs IMAGE SIZE            create (or resize) an image file of SIZE and format it
//   mkfs.walfs IMAGE                 format an existing file or block device, whole
//   mkfs.walfs -f IMAGE              ... even if it already holds a filesystem
//   mkfs.walfs -b 4096 -a 8 -L data -l size=64m IMAGE 10g
//   mkfs.walfs -l concurrency=16 IMAGE 1g   size the log for 16 concurrent transactions
//
// It refuses to overwrite an image that holds a walfs filesystem, or any
// other filesystem or partition table libblkid recognises, unless -f is
// given, and an image a walfs daemon has mounted (or fsck.walfs is checking)
// in any case: they hold its lock (base/file_lock.h).  Exit status: 0 made,
// 1 refused or failed (with a one-line reason), 2 a usage error (an unknown
// option, a value out of its range).
#include <blkid/blkid.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/block_device_file.h"
#include "base/file_lock.h"
#include "fs/format/superblock_format.h"
#include "fs/mkfs.h"
#include "tools/cli.h"

namespace walfs {
namespace {

constexpr int kExitOk = 0, kExitFail = 1;

using cli::ParseSize;

// What is on the image now: a walfs superblock, or whatever libblkid finds.
std::optional<std::string> ExistingFilesystem(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<std::byte> sb(fs::format::kSuperSize);
  const ssize_t n = ::pread(fd, sb.data(), sb.size(), 0);
  ::close(fd);
  if (n == static_cast<ssize_t>(sb.size())) {
    auto decoded = fs::format::DecodeSuperblock(sb);
    if (decoded.ok())
      return fmt::format("a walfs filesystem (uuid {}{})", fs::format::UuidString(decoded->uuid),
                         decoded->label.empty() ? "" : ", label \"" + decoded->label + "\"");
  }
  blkid_probe pr = blkid_new_probe_from_filename(path.c_str());
  if (pr == nullptr) return std::nullopt;
  blkid_probe_enable_superblocks(pr, 1);
  blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_LABEL);
  blkid_probe_enable_partitions(pr, 1);
  std::optional<std::string> found;
  if (blkid_do_safeprobe(pr) == 0) {
    const char* type = nullptr;
    const char* label = nullptr;
    if (blkid_probe_lookup_value(pr, "TYPE", &type, nullptr) == 0 && type != nullptr) {
      std::string what = fmt::format("a filesystem of type {}", type);
      if (blkid_probe_lookup_value(pr, "LABEL", &label, nullptr) == 0 && label != nullptr)
        what += fmt::format(" (label \"{}\")", label);
      found = what;
    } else if (blkid_probe_lookup_value(pr, "PTTYPE", &type, nullptr) == 0 && type != nullptr) {
      found = fmt::format("a {} partition table", type);
    }
  }
  blkid_free_probe(pr);
  return found;
}

int Run(int argc, char** argv) {
  CLI::App app{"mkfs.walfs: make a walfs filesystem on an image file or a block device", "mkfs.walfs"};
  cli::AddVersion(app, "mkfs.walfs");
  std::string image, size_text, log_text, label;
  bool force = false, quiet = false;
  fs::MkfsOptions o;
  app.add_option("IMAGE", image, "image file or block device")->required();
  app.add_option("SIZE", size_text, "create or resize IMAGE (a file) to this size: 1g, 512m, ...");
  app.add_flag("-f,--force", force, "overwrite an existing filesystem");
  app.add_option("-b,--block-size", o.block_size, "block size in bytes (default 4096)");
  app.add_option("-a,--agcount", o.ag_count, "number of allocation groups (default: from the size)")
      ->check(CLI::Range(std::uint32_t{1}, fs::format::kMaxAgCount));
  app.add_option("-l,--log", log_text, "size=BYTES (e.g. size=8m) or concurrency=N");
  app.add_option("-L,--label", label, "filesystem label (up to 64 bytes)");
  app.add_flag("-q,--quiet", quiet, "print nothing on success");
  bool full_init = false;
  app.add_flag("--full-init", full_init,
               "write every AG's free-space bitmap and inode map now (default: as they are first used, "
               "the uninit_ag feature)");
  if (auto code = cli::Parse(app, argc, argv)) return *code;
  o.uninit_ag = !full_init;
  auto fail = [&](const std::string& why) {
    fmt::print(stderr, "mkfs.walfs: {}: {}\n", image, why);
    return kExitFail;
  };
  o.label = label;
  if (!log_text.empty()) {
    if (log_text.rfind("size=", 0) == 0) {
      auto v = ParseSize(log_text.substr(5));
      if (!v.ok()) return fail(fmt::format("-l {}: {}", log_text, v.status().message()));
      o.log_bytes = *v;
    } else if (log_text.rfind("concurrency=", 0) == 0) {
      auto v = ParseSize(log_text.substr(12));
      if (!v.ok() || *v == 0 || *v > 1024)
        return fail(fmt::format("-l {}: concurrency is a number from 1 to 1024", log_text));
      o.log_concurrency = static_cast<std::uint32_t>(*v);
    } else {
      return fail(fmt::format("-l {}: expected size=BYTES or concurrency=N", log_text));
    }
  }
  std::optional<std::uint64_t> size;
  if (!size_text.empty()) {
    auto v = ParseSize(size_text);
    if (!v.ok()) return fail(std::string(v.status().message()));
    size = *v;
  }

  struct stat st{};
  const bool exists = ::stat(image.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return fail(std::strerror(errno));
  if (!exists && !size) return fail("does not exist; give a SIZE to create it");
  if (exists && S_ISBLK(st.st_mode) && size) return fail("is a block device: its size is its own, drop SIZE");
  if (exists && !S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
    return fail("is neither a regular file nor a block device");
  // The lock is held on its own descriptor until mkfs exits (flock belongs
  // to the open file, so the device below must not ask for it again).
  int lock_fd = -1;
  if (exists) {
    lock_fd = ::open(image.c_str(), O_RDONLY | O_CLOEXEC);
    if (lock_fd < 0) return fail(std::strerror(errno));
    Status locked = LockImage(lock_fd, image);
    if (!locked.ok()) {
      ::close(lock_fd);
      return fail(std::string(locked.message()));
    }
  }
  struct LockCloser {
    int fd;
    ~LockCloser() {
      if (fd >= 0) ::close(fd);
    }
  } lock_closer{lock_fd};
  if (exists && !force) {
    if (auto what = ExistingFilesystem(image))
      return fail(fmt::format("contains {}; use -f to overwrite it", *what));
  }
  // Check the geometry before touching the file.
  const std::uint64_t bytes = size ? *size : static_cast<std::uint64_t>(st.st_size);
  if (!exists || !S_ISBLK(st.st_mode)) {
    auto planned = fs::PlanFilesystem(bytes, o);
    if (!planned.ok()) return fail(std::string(planned.status().message()));
  }
  if (size) {
    const int fd = ::open(image.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail(fmt::format("cannot create: {}", std::strerror(errno)));
    const int r = ::ftruncate(fd, static_cast<off_t>(*size));
    const int err = errno;
    ::close(fd);
    if (r != 0) return fail(fmt::format("cannot size to {} bytes: {}", *size, std::strerror(err)));
  }
  auto dev = FileDevice::Open(image, {});
  if (!dev.ok()) return fail(std::string(dev.status().message()));
  auto sb = fs::MakeFilesystem(dev->get(), o);
  if (!sb.ok()) return fail(std::string(sb.status().message()));
  if (!quiet) {
    fmt::print("mkfs.walfs: made {} on {} ({})\n", fs::format::UuidString(sb->uuid), image,
               (*dev)->Describe());
    fmt::print("{}\n", fs::format::SuperblockString(*sb));
  }
  return kExitOk;
}

}  // namespace
}  // namespace walfs

int main(int argc, char** argv) { return walfs::Run(argc, argv); }
