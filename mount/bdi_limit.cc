#include "mount/bdi_limit.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace walfs::mount {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int v = 0;
      if (std::from_chars(field.data() + i + 1, field.data() + i + 4, v, 8).ec == std::errc()) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

Result<std::string> ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return Status::NotFound(fmt::format("cannot read {}", path));
  return line;
}

}  // namespace

Result<std::string> MountDeviceNumber(const std::string& mountpoint) {
  // Compared as given: resolving it would stat the mountpoint, a request
  // to the mount itself, which the daemon may not serve yet (libfuse has
  // made the path absolute with realpath before mounting).
  const std::filesystem::path want = std::filesystem::path(mountpoint).lexically_normal();
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return Status::NotFound("cannot read /proc/self/mountinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    // id parent MAJ:MIN root mountpoint ...
    std::istringstream fields(line);
    std::string id, parent, dev, root, mnt;
    if (!(fields >> id >> parent >> dev >> root >> mnt)) continue;
    if (Unescape(mnt) == want.string()) found = dev;  // the last one is on top
  }
  if (found.empty()) return Status::NotFound(fmt::format("nothing is mounted on {}", want.string()));
  return found;
}

Result<std::uint64_t> BdiDirtyBound(const std::string& device_number) {
  const std::string dir = "/sys/class/bdi/" + device_number;
  WALFS_ASSIGN_OR_RETURN(std::string strict, ReadLine(dir + "/strict_limit"));
  if (strict != "1") return Status::NotSupported(fmt::format("{}/strict_limit is {}", dir, strict));
  WALFS_ASSIGN_OR_RETURN(std::string max, ReadLine(dir + "/max_bytes"));
  std::uint64_t bytes = 0;
  if (std::from_chars(max.data(), max.data() + max.size(), bytes).ec != std::errc() || bytes == 0)
    return Status::Corruption(fmt::format("{}/max_bytes reads '{}'", dir, max));
  return bytes;
}

}  // namespace walfs::mount
