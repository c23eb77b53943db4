// Specs of the Filesystem (fs/filesystem.h) under threads: four workers
// creating, renaming, unlinking, writing and listing leave a clean image,
// and a lookup racing an unlink never returns a freed inode.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fs/filesystem_fixture.h"

namespace walfs::fs {
namespace {

using testing::FilesystemTest;
using testing::kBs;
using testing::Pattern;

TEST_F(FilesystemTest, FourThreadsCreatingRenamingUnlinkingAndWritingLeaveACleanImage) {
  const std::uint64_t shared = Mkdir(root_, "shared");
  std::vector<std::uint64_t> own;
  for (int t = 0; t < 4; ++t) own.push_back(Mkdir(root_, "t" + std::to_string(t)));
  // The kernel's VFS holds a directory's lock shared across a lookup in it
  // (until the daemon's reply) and exclusive across changes to it; the
  // workers do the same, so every lookup reference is counted before the
  // name can go (see ALookupRacingAnUnlinkNeverReturnsAFreedInode).
  std::shared_mutex shared_mu;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<std::uint64_t> ops{0};
  auto fail = [&](const std::string& what, const Status& s) {
    if (failures.fetch_add(1) < 20) ADD_FAILURE() << what << ": " << s.ToString();
  };
  auto worker = [&](int t) {
    std::mt19937_64 rng(t + 1);
    const std::uint64_t mine = own[t];
    int next = 0;
    std::vector<std::string> names;  // names of mine in `mine`
    while (!stop.load()) {
      ops.fetch_add(1);
      switch (rng() % 8) {
        case 0:
        case 1: {  // create and write
          const std::string name = "f" + std::to_string(next++);
          auto st = fs_->Mknod(caller_, mine, name, S_IFREG | 0644, 0);
          if (!st.ok()) { fail("mknod " + name, st.status()); break; }
          const std::string data = Pattern(1 + rng() % (3 * kBs), rng());
          auto n = fs_->Write(st->st_ino, rng() % (2 * kBs), data.data(), data.size());
          if (!n.ok()) fail("write", n.status());
          fs_->Forget(st->st_ino, 1);
          names.push_back(name);
          break;
        }
        case 2: {  // rename within my directory
          if (names.empty()) break;
          const std::size_t i = rng() % names.size();
          const std::string to = "r" + std::to_string(next++);
          Status s = fs_->Rename(mine, names[i], mine, to, 0);
          if (!s.ok()) { fail("rename " + names[i], s); break; }
          names[i] = to;
          break;
        }
        case 3: {  // move one of mine into the shared directory, maybe over another
          if (names.empty()) break;
          const std::size_t i = rng() % names.size();
          const std::string to = "s" + std::to_string(rng() % 16);
          std::unique_lock dl(shared_mu);
          auto victim = fs_->Lookup(shared, to);  // the kernel would hold the target
          Status s = fs_->Rename(mine, names[i], shared, to, 0);
          if (!s.ok()) fail("rename to shared " + to, s);
          else names.erase(names.begin() + i);
          if (victim.ok()) fs_->Forget(victim->st_ino, 1);
          break;
        }
        case 4: {  // unlink from the shared directory (others race for the same names)
          const std::string name = "s" + std::to_string(rng() % 16);
          std::unique_lock dl(shared_mu);
          auto victim = fs_->Lookup(shared, name);
          if (!victim.ok()) break;
          Status s = fs_->Unlink(shared, name);
          if (!s.ok() && s.ToErrno() != ENOENT) fail("unlink shared " + name, s);
          fs_->Forget(victim->st_ino, 1);
          break;
        }
        case 5: {  // unlink one of mine
          if (names.empty()) break;
          const std::size_t i = rng() % names.size();
          auto victim = fs_->Lookup(mine, names[i]);
          if (!victim.ok()) { fail("lookup " + names[i], victim.status()); break; }
          Status s = fs_->Unlink(mine, names[i]);
          if (!s.ok()) fail("unlink " + names[i], s);
          names.erase(names.begin() + i);
          fs_->Forget(victim->st_ino, 1);
          break;
        }
        case 6: {  // write into something in the shared directory
          const std::string name = "s" + std::to_string(rng() % 16);
          Result<struct stat> st = [&] {
            std::shared_lock dl(shared_mu);
            return fs_->Lookup(shared, name);
          }();
          if (!st.ok()) break;
          const std::string data = Pattern(1 + rng() % kBs, rng());
          auto n = fs_->Write(st->st_ino, rng() % (4 * kBs), data.data(), data.size());
          if (!n.ok()) fail("write shared", n.status());
          fs_->Forget(st->st_ino, 1);
          break;
        }
        case 7: {  // readdir both directories
          for (std::uint64_t d : {mine, shared}) {
            Status s = fs_->ReadDir(d, 0, [](std::string_view, std::uint64_t, std::uint32_t, std::uint64_t) {
              return true;
            });
            if (!s.ok()) fail("readdir", s);
          }
          break;
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  stop = true;
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(ops.load(), 100u);
  // The image is consistent now, and again once the next mount has freed
  // whatever was unlinked while referenced.
  Unmount();
  ExpectFsckClean();
  Mount();
}

// Lookup counts its reference before it lets go of the directory, so an
// Unlink and the Forget of the last other reference cannot free the inode
// in between (the FUSE kernel serialises lookup and unlink in one
// directory; an in-process caller does not).
TEST_F(FilesystemTest, ALookupRacingAnUnlinkNeverReturnsAFreedInode) {
  std::atomic<bool> stop{false};
  std::atomic<int> freed_seen{0}, lookups{0};
  std::thread churn([&] {
    while (!stop.load()) {
      auto st = fs_->Mknod(caller_, root_, "x", S_IFREG | 0644, 0);
      if (!st.ok()) continue;
      (void)fs_->Unlink(root_, "x");
      fs_->Forget(st->st_ino, 1);
    }
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < end) {
    auto st = fs_->Lookup(root_, "x");
    if (!st.ok()) continue;
    lookups.fetch_add(1);
    if (st->st_mode == 0) freed_seen.fetch_add(1);
    fs_->Forget(st->st_ino, 1);
  }
  stop = true;
  churn.join();
  EXPECT_EQ(freed_seen.load(), 0) << "of " << lookups.load() << " successful lookups";
}

}  // namespace
}  // namespace walfs::fs
