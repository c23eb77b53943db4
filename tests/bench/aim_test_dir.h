// TempDir: a fresh directory for one test, removed with everything in it;
// and ListTree, for checking that a recipe left nothing behind.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace walfs::bench::aim {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "aim_test.XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
    fd_ = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~TempDir() {
    close(fd_);
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Every path below `root`, relative to it.
inline std::set<std::string> ListTree(const std::string& root) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root))
    out.insert(std::filesystem::relative(e.path(), root).string());
  return out;
}

}  // namespace walfs::bench::aim
