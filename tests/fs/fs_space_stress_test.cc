// The filesystem at its limits with many threads at once (issue 7's "full
// disk and log"): writers and creators filling the image to ENOSPC, and many
// writers on a log of the smallest size mkfs allows.  What must hold:
//  - every call either succeeds or fails with ENOSPC (never another error,
//    never a hang: ctest's timeout is the deadlock check);
//  - every byte a successful write returned is read back;
//  - space comes back after deletes, and writes succeed again;
//  - the image passes fsck after a clean unmount, and after a crash.
#include <sys/stat.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"

namespace walfs::fs {
namespace {

constexpr Caller kRoot{};

std::string Problems(const FsckReport& r) {
  std::string out;
  for (const auto& p : r.problems) out += p.message + "\n";
  return out;
}

void ExpectCleanFsck(BlockDevice* dev) {
  auto r = CheckImage(dev, {.replay = true, .repair = false});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->problems.empty()) << Problems(*r);
}

// The bytes of file `name` at `off` (a function of both, never zero).
char ByteOf(const std::string& name, std::uint64_t off) {
  const auto h = std::hash<std::string>{}(name) ^ (off * 0x9e3779b97f4a7c15ull);
  const char c = static_cast<char>(h >> 17);
  return c == 0 ? 'z' : c;
}
std::string BytesOf(const std::string& name, std::uint64_t off, std::size_t len) {
  std::string s(len, '\0');
  for (std::size_t i = 0; i < len; ++i) s[i] = ByteOf(name, off + i);
  return s;
}

// What the threads made: name -> bytes acknowledged (a prefix of BytesOf).
struct Made {
  std::mutex mu;
  std::map<std::string, std::uint64_t> files;
  std::vector<std::string> dirs;
  std::atomic<int> other_errors{0};
  std::string first_other;
  void Error(const Status& s, const std::string& what) {
    other_errors.fetch_add(1);
    std::lock_guard l(mu);
    if (first_other.empty()) first_other = what + ": " + s.ToString();
  }
};

bool IsNoSpace(const Status& s) { return s.ToErrno() == ENOSPC; }

// Appends `chunk`-byte pieces to its own file until `enospc_in_a_row`
// ENOSPCs in a row (space freed by others' deletes may let it go on).
void Writer(Filesystem* fs, std::uint64_t dir, const std::string& name, std::size_t chunk, Made* made) {
  auto st = fs->Mknod(kRoot, dir, name, S_IFREG | 0644, 0);
  if (!st.ok()) {
    if (!IsNoSpace(st.status())) made->Error(st.status(), "create " + name);
    return;
  }
  {
    std::lock_guard l(made->mu);
    made->files[name] = 0;
  }
  std::uint64_t size = 0;
  int enospc = 0;
  while (enospc < 3) {
    const std::string data = BytesOf(name, size, chunk);
    auto n = fs->Write(st->st_ino, size, data.data(), data.size());
    if (!n.ok()) {
      if (!IsNoSpace(n.status())) {
        made->Error(n.status(), "write " + name);
        return;
      }
      ++enospc;
      continue;
    }
    enospc = 0;
    size += *n;
    std::lock_guard l(made->mu);
    made->files[name] = size;
  }
  fs->Forget(st->st_ino, 1);  // as the kernel would, once the file is closed
}

// Creates small files and directories until ENOSPC.
void Creator(Filesystem* fs, std::uint64_t dir, int id, Made* made) {
  int enospc = 0;
  for (int i = 0; enospc < 3; ++i) {
    const std::string name = fmt::format("c{}-{}", id, i);
    auto st = (i % 10 == 9) ? fs->Mkdir(kRoot, dir, name, 0755) : fs->Mknod(kRoot, dir, name, S_IFREG | 0644, 0);
    if (!st.ok()) {
      if (!IsNoSpace(st.status())) {
        made->Error(st.status(), "create " + name);
        return;
      }
      ++enospc;
      continue;
    }
    enospc = 0;
    if (S_ISDIR(st->st_mode)) {
      fs->Forget(st->st_ino, 1);
      std::lock_guard l(made->mu);
      made->dirs.push_back(name);
      continue;
    }
    const std::string data = BytesOf(name, 0, 100 + static_cast<std::size_t>(i % 7) * 700);
    auto n = fs->Write(st->st_ino, 0, data.data(), data.size());
    fs->Forget(st->st_ino, 1);
    {
      std::lock_guard l(made->mu);
      made->files[name] = n.ok() ? *n : 0;
    }
    if (!n.ok() && !IsNoSpace(n.status())) {
      made->Error(n.status(), "write " + name);  // takes made->mu itself
      return;
    }
  }
}

void ExpectEverythingAcknowledgedReadsBack(Filesystem* fs, std::uint64_t dir, Made* made) {
  for (const auto& [name, size] : made->files) {
    auto st = fs->Lookup(dir, name);
    ASSERT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    ASSERT_EQ(static_cast<std::uint64_t>(st->st_size), size) << name;
    std::string got(size, '\0');
    auto n = fs->Read(st->st_ino, 0, size, got.data());
    ASSERT_TRUE(n.ok()) << name << ": " << n.status().ToString();
    ASSERT_EQ(*n, size) << name;
    ASSERT_TRUE(got == BytesOf(name, 0, size)) << name << ": other bytes than were written";
    fs->Forget(st->st_ino, 1);
  }
}

TEST(SpaceStress, WritersAndCreatorsFillTheImageToEnospcAndSpaceComesBackAfterDeletes) {
  MemoryDevice dev(24ull << 20);
  ASSERT_TRUE(MakeFilesystem(&dev, {.ag_count = 2}).ok());
  Made made;
  std::uint64_t dir;
  {
    auto fs = Filesystem::MountDevice(&dev, {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto d = (*fs)->Mkdir(kRoot, (*fs)->root(), "d", 0755);
    ASSERT_TRUE(d.ok());
    dir = d->st_ino;
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w)
      threads.emplace_back(Writer, fs->get(), dir, fmt::format("w{}", w), std::size_t{4096} * (w + 1) + 123, &made);
    for (int c = 0; c < 2; ++c) threads.emplace_back(Creator, fs->get(), dir, c, &made);
    for (auto& t : threads) t.join();
    ASSERT_EQ(made.other_errors.load(), 0) << made.first_other;
    auto sv = (*fs)->StatFs();
    ASSERT_TRUE(sv.ok());
    // Full: what is left is the pool kept for truncates and unlinks, and
    // runs too short for the last writes' worst-case reservations.
    EXPECT_LT(sv->f_bavail, sv->f_blocks / 20) << "the threads stopped at ENOSPC with space left";
    ExpectEverythingAcknowledgedReadsBack(fs->get(), dir, &made);
    // Deletes give the space back (all but the inode chunks, which are
    // never freed); a new writer goes far again.
    std::size_t data_blocks = 0;
    for (const auto& [name, size] : made.files) {
      data_blocks += (size + 4095) / 4096;
      const Status u = (*fs)->Unlink(dir, name);
      ASSERT_TRUE(u.ok()) << name << ": " << u.ToString();
    }
    made.files.clear();
    for (const std::string& sub : made.dirs) ASSERT_TRUE((*fs)->Rmdir(dir, sub).ok()) << sub;
    auto after = (*fs)->StatFs();
    ASSERT_TRUE(after.ok());
    EXPECT_GE(after->f_bfree, sv->f_bfree + data_blocks) << "every unlinked file's blocks came back";
    Writer(fs->get(), dir, "again", 65536, &made);
    ASSERT_EQ(made.other_errors.load(), 0) << made.first_other;
    ASSERT_EQ(made.files.count("again"), 1u) << "a create after the deletes";
    EXPECT_GE(made.files["again"] / 4096, data_blocks * 9 / 10) << "the freed space is usable again";
    ExpectEverythingAcknowledgedReadsBack(fs->get(), dir, &made);
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  ExpectCleanFsck(&dev);
  auto fs = Filesystem::MountDevice(&dev, {});
  ASSERT_TRUE(fs.ok());
  ExpectEverythingAcknowledgedReadsBack(fs->get(), dir, &made);
  ASSERT_TRUE((*fs)->Unmount().ok());
}

// Many threads on a log of the smallest size mkfs allows: every commit
// waits for log space, and the grant heads' queues must neither lose a
// waiter nor deadlock.  Then a crash: recovery and fsck.
TEST(SpaceStress, ManyWritersOnTheSmallestLogNeitherDeadlockNorCorrupt) {
  MemoryDevice dev(64ull << 20);
  ASSERT_TRUE(MakeFilesystem(&dev, {.ag_count = 4, .log_bytes = MinLogBytes(4096)}).ok());
  auto fs = Filesystem::MountDevice(&dev, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  constexpr int kThreads = 12;
  std::atomic<int> errors{0};
  std::mutex mu;
  std::string first;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      auto fail = [&](const Status& s, const std::string& what) {
        errors.fetch_add(1);
        std::lock_guard l(mu);
        if (first.empty()) first = what + ": " + s.ToString();
      };
      auto d = (*fs)->Mkdir(kRoot, (*fs)->root(), fmt::format("t{}", t), 0755);
      if (!d.ok()) return fail(d.status(), "mkdir");
      for (int i = 0; i < 60; ++i) {
        const std::string name = fmt::format("f{}", i % 12);
        auto st = (*fs)->Mknod(kRoot, d->st_ino, name, S_IFREG | 0644, 0);
        if (!st.ok() && st.status().ToErrno() == EEXIST) {
          const Status u = (*fs)->Unlink(d->st_ino, name);
          if (!u.ok()) return fail(u, "unlink");
          continue;
        }
        if (!st.ok()) return fail(st.status(), "create");
        const std::string data = BytesOf(name, 0, 1 + rng() % 9000);
        auto n = (*fs)->Write(st->st_ino, 0, data.data(), data.size());
        if (!n.ok()) return fail(n.status(), "write");
        if (Status s = (*fs)->SetXattr(st->st_ino, "user.t", data.substr(0, 64), 0); !s.ok())
          return fail(s, "setxattr");
        if (i % 5 == 0) {
          if (Status s = (*fs)->Fsync(st->st_ino, false); !s.ok()) return fail(s, "fsync");
        }
        if (i % 7 == 0) {
          const Status r = (*fs)->Rename(d->st_ino, name, d->st_ino, fmt::format("f{}", (i + 5) % 12), 0);
          if (!r.ok() && r.ToErrno() != ENOENT) return fail(r, "rename");
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(errors.load(), 0) << first;
  const std::string stats = (*fs)->StatsText();
  fs->reset();  // a crash: the log halts with whatever it holds
  ExpectCleanFsck(&dev);  // replays first
  auto again = Filesystem::MountDevice(&dev, {});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE((*again)->Unmount().ok());
  auto r = CheckImage(&dev, {.replay = false, .repair = false});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->problems.empty()) << Problems(*r);
  RecordProperty("stats", stats);
}

}  // namespace
}  // namespace walfs::fs
