#include "tools/walfs_sync.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "mount/sync_client.h"

namespace walfs::tools {
namespace {

void Usage() {
  fmt::print(
      "usage: walfs sync PATH...\n"
      "Makes every change made on the walfs mount that PATH is on (its mount point, or any file\n"
      "or directory in it) durable, and returns once it is: the log is forced and the image\n"
      "flushed (a write to MOUNTPOINT/.walfs/sync).  With -o writeback_cache, a file still open\n"
      "with cached writes needs its own fsync (the kernel does not wait for them to arrive).\n"
      "sync(1) cannot do this: sync(2) and syncfs(2) never reach a FUSE daemon.\n"
      "Exit status: 0 synced; 1 a PATH is not on walfs or its sync failed; 2 usage error.\n");
}

// One line on stderr for a failed PATH, in walfs's words.
int Fail(const std::string& path, const std::string& why) {
  fmt::print(stderr, "walfs sync: {}: {}\n", path, why);
  return 1;
}

int SyncOne(const std::string& path) {
  // O_NONBLOCK: a FIFO's open must not wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Fail(path, std::strerror(errno));
  int rc = 0;
  Result<mount::FsSyncer> syncer = mount::FsSyncer::OpenWalfs(fd, path);
  if (!syncer.ok()) {
    fmt::print(stderr, "walfs sync: {}\n", syncer.status().message());
    rc = 1;
  } else if (Status s = syncer->Sync(); !s.ok()) {
    rc = Fail(path, fmt::format("the sync failed: {} ({}); {}/.walfs/messages may say why",
                                std::strerror(s.ToErrno()), s.message(), syncer->mountpoint()));
  }
  close(fd);
  return rc;
}

}  // namespace

int SyncMain(int argc, char** argv) {
  std::vector<std::string> paths;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (!options_done && (a == "-h" || a == "--help")) {
      Usage();
      return 0;
    }
    if (!options_done && a == "--") {
      options_done = true;
      continue;
    }
    if (!options_done && a.size() > 1 && a[0] == '-') {
      fmt::print(stderr, "walfs sync: unknown option {} (see walfs sync --help)\n", a);
      return 2;
    }
    paths.emplace_back(a);
  }
  if (paths.empty()) {
    fmt::print(stderr, "walfs sync: no mount point given (usage: walfs sync PATH...)\n");
    return 2;
  }
  int rc = 0;
  for (const std::string& p : paths) rc |= SyncOne(p);
  return rc;
}

}  // namespace walfs::tools
