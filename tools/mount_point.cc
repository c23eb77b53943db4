#include "tools/mount_point.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

namespace walfs::tools {

std::string MountSource(const char* image) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(image, ec);
  const std::string path = ec ? std::string(image) : canonical.string();
  std::string escaped;
  for (char c : path) {
    if (c == ',' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

std::string ResolveMountpoint(const char* mountpoint, std::string* resolved) {
  if (std::string_view(mountpoint).starts_with("/dev/fd/")) {
    *resolved = mountpoint;
    return "";
  }
  char* real = realpath(mountpoint, nullptr);
  if (real == nullptr) {
    if (errno == ENOENT) return fmt::format("{}: the mount point does not exist (create it with mkdir)", mountpoint);
    return fmt::format("{}: the mount point: {}", mountpoint, std::strerror(errno));
  }
  *resolved = real;
  free(real);
  struct stat st {};
  if (stat(resolved->c_str(), &st) != 0)
    return fmt::format("{}: the mount point: {}", mountpoint, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fmt::format("{}: the mount point is not a directory", mountpoint);
  return "";
}

std::string HidesImage(const char* image, const char* mountpoint) {
  std::error_code ec;
  const std::filesystem::path img = std::filesystem::weakly_canonical(image, ec);
  if (ec) return "";
  const std::filesystem::path mnt = std::filesystem::weakly_canonical(mountpoint, ec);
  if (ec) return "";
  if (img == mnt) return fmt::format("{}: the image cannot be its own mountpoint", image);
  const auto [m, i] = std::mismatch(mnt.begin(), mnt.end(), img.begin(), img.end());
  if (m == mnt.end())
    return fmt::format("{}: mounting on {} would hide the image under its own mount; mount it elsewhere", image,
                       mountpoint);
  return "";
}

}  // namespace walfs::tools
