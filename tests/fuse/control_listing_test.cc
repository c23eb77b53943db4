// Listing MNT/.walfs and the directories below it: every directory lists
// exactly its entries, whatever buffer size getdents asks with (so both the
// kernel's READDIRPLUS, used for the first chunk, and READDIR, used after
// it, are exercised), through readdir(3), `ls -l` and `find`.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

// The names getdents64 returns for `dir`, asking with `buf_size` bytes a call.
std::vector<std::string> ListWith(const std::string& dir, size_t buf_size) {
  std::vector<std::string> names;
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    ADD_FAILURE() << "open " << dir << ": " << strerror(errno);
    return names;
  }
  std::vector<char> buf(buf_size);
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf.data(), buf.size());
    if (n < 0) {
      ADD_FAILURE() << "getdents64 " << dir << " with " << buf_size << " bytes: " << strerror(errno);
      break;
    }
    if (n == 0) break;
    for (long pos = 0; pos < n;) {
      // glibc's dirent64 has the kernel's linux_dirent64 layout.
      const auto* d = reinterpret_cast<const struct dirent64*>(buf.data() + pos);
      names.emplace_back(d->d_name);
      pos += d->d_reclen;
    }
  }
  close(fd);
  return names;
}

bool IsPlainName(const std::string& n) {
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

// A command's output (stderr too: an error shows up in the comparison).
std::string Output(const std::string& cmd) { return RunTool(cmd).out; }

class ControlListing : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
    ctl_ = Root() + "/.walfs";
  }
  // Lists `rel` at several buffer sizes: the same names each time, no
  // duplicates, "." and "..", only plain names, every one of them there to
  // stat, and every name of `required` among them.
  void ExpectListsExactly(const std::string& rel, const std::set<std::string>& required) {
    const std::string dir = ctl_ + rel;
    const std::vector<std::string> first = ListWith(dir, 32768);
    for (size_t size : {64, 100, 256, 1024, 4096}) {
      EXPECT_EQ(ListWith(dir, size), first) << dir << " listed with " << size << "-byte buffers";
    }
    const std::set<std::string> names(first.begin(), first.end());
    EXPECT_EQ(names.size(), first.size()) << dir << ": a name listed twice";
    EXPECT_TRUE(names.count(".") && names.count("..")) << dir;
    for (const std::string& n : first) {
      EXPECT_TRUE(IsPlainName(n)) << dir << " lists a garbled name of " << n.size() << " bytes";
      struct stat st {};
      EXPECT_EQ(lstat((dir + "/" + n).c_str(), &st), 0) << dir << "/" << n << " is listed but not there";
    }
    for (const std::string& r : required) EXPECT_TRUE(names.count(r)) << dir << " does not list " << r;
  }
  std::string ctl_;
};

TEST_F(ControlListing, TheControlDirectoryListsEveryFileAtAnyBufferSize) {
  ExpectListsExactly("", {"README", "stats", "trace", "trace_pipe", "trace_pipe_raw", "tracing_on", "events", "options", "messages"});
}

TEST_F(ControlListing, OptionsListsEveryOption) {
  ExpectListsExactly("/options", {"wakeup", "wakeup_delay_us", "buffer_percent", "safety_timeout_ms", "recursion",
                                  "overwrite", "buffer_size_kb", "trace_clock", "grant_wake"});
}

TEST_F(ControlListing, EventsListsEverySubsystemAndItsEvents) {
  ExpectListsExactly("/events", {"enable", "fs", "journal"});
  ExpectListsExactly("/events/fs", {"enable", "lookup_enter", "lookup_exit", "write_enter", "write_exit"});
  ExpectListsExactly("/events/fs/lookup_enter", {"enable", "format"});
}

TEST_F(ControlListing, FindAndLsSeeTheSameTree) {
  const std::string found = Output("find '" + ctl_ + "' -maxdepth 1 -printf '%f\\n' | sort");
  const std::string listed = Output("ls -A1 '" + ctl_ + "' | sort");
  EXPECT_EQ("\n" + found, "\n.walfs\n" + listed) << "find:\n" << found << "ls:\n" << listed;
  const std::string long_listing = Output("ls -l '" + ctl_ + "/options'");
  EXPECT_NE(long_listing.find("grant_wake"), std::string::npos) << long_listing;
  EXPECT_EQ(long_listing.find('?'), std::string::npos) << "ls -l could not stat an entry:\n" << long_listing;
}

TEST_F(ControlListing, ReadmeNamesEveryTopLevelFile) {
  const std::string readme = ReadFile(ctl_ + "/README");
  for (const std::string& n : ListWith(ctl_, 4096)) {
    if (n == "." || n == ".." || n == "events" || n == "options") continue;
    EXPECT_NE(readme.find("  " + n + " "), std::string::npos) << "README does not describe " << n << ":\n" << readme;
  }
}

}  // namespace
}  // namespace walfs::testing
