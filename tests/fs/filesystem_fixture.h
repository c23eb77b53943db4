// The fixture of the Filesystem specs (filesystem_*_test.cc): the mounted
// filesystem (fs/filesystem.h) in process, without FUSE -- a fresh image on
// a MemoryDevice, mounted with MountDevice.  Every spec ends with a clean
// Unmount and an fsck of the device (with replay) that must find nothing.
// Errors are checked as the errno a POSIX caller would see
// (Status::ToErrno); the helpers below each assert success.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"

namespace walfs::fs::testing {

inline constexpr std::uint64_t kBs = 4096;

// `n` bytes of a pseudo-random pattern, the same for the same `seed`.
inline std::string Pattern(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

// Byte strings compared without printing megabytes on a mismatch.
inline ::testing::AssertionResult SameBytes(const std::string& got, const std::string& want) {
  if (got == want) return ::testing::AssertionSuccess();
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return ::testing::AssertionFailure() << "sizes " << got.size() << " and " << want.size()
                                       << ", first difference at byte " << i;
}

inline int Err(const Status& s) { return s.ToErrno(); }
template <typename T>
int Err(const Result<T>& r) {
  return r.status().ToErrno();
}

class FilesystemTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(64ull << 20); }
  void TearDown() override {
    if (fs_) {
      Status s = fs_->Unmount();
      EXPECT_TRUE(s.ok()) << s.ToString();
      fs_.reset();
    }
    if (dev_) ExpectFsckClean();
  }

  void Make(std::uint64_t bytes, MkfsOptions o = {.ag_count = 2}) {
    fs_.reset();
    dev_ = std::make_unique<MemoryDevice>(bytes);
    auto sb = MakeFilesystem(dev_.get(), o);
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    Mount();
  }
  void Mount() {
    // No timed pushes: specs here count pushes, flushes and checkpoints,
    // and a slow (sanitized) run could otherwise pass the 5 s interval or
    // the lazy push's 5 ms (under TSan a lazy push once emptied the CIL
    // before the spec's Sync, which then had nothing to push).
    MountOptions o;
    o.commit_interval_s = 0;
    o.lazy_commit_ms = 0;
    o.zeroout_kb = zeroout_kb_;
    auto fs = Filesystem::MountDevice(dev_.get(), o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(fs).value();
    root_ = fs_->root();
  }
  void Unmount() {
    Status s = fs_->Unmount();
    ASSERT_TRUE(s.ok()) << s.ToString();
    fs_.reset();
  }
  void Remount() {
    Unmount();
    Mount();
  }
  // Destroying the Filesystem without Unmount: the log halts, as in a crash.
  void Crash() { fs_.reset(); }
  void ExpectFsckClean() {
    auto r = CheckImage(dev_.get(), {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::string all;
    for (const FsckProblem& p : r->problems) all += "  " + p.message + "\n";
    EXPECT_TRUE(r->problems.empty()) << "fsck found:\n" << all;
  }

  // ---- helpers (each asserts success) ----
  std::uint64_t Create(std::uint64_t parent, std::string_view name, std::uint32_t mode = S_IFREG | 0644) {
    auto st = fs_->Mknod(caller_, parent, name, mode, 0);
    EXPECT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    return st.ok() ? st->st_ino : 0;
  }
  std::uint64_t Mkdir(std::uint64_t parent, std::string_view name) {
    auto st = fs_->Mkdir(caller_, parent, name, 0755);
    EXPECT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    return st.ok() ? st->st_ino : 0;
  }
  void Write(std::uint64_t ino, std::uint64_t off, std::string_view data) {
    auto n = fs_->Write(ino, off, data.data(), data.size());
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, data.size());
  }
  std::string Read(std::uint64_t ino, std::uint64_t off, std::size_t size) {
    std::string out(size, '\xEE');
    auto n = fs_->Read(ino, off, size, out.data());
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    out.resize(n.ok() ? *n : 0);
    return out;
  }
  std::string ReadAll(std::uint64_t ino) { return Read(ino, 0, Stat(ino).st_size); }
  struct stat Stat(std::uint64_t ino) {
    auto st = fs_->GetAttr(ino);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (st.ok()) return *st;
    struct stat empty {};
    return empty;
  }
  std::uint64_t Ino(std::uint64_t parent, std::string_view name) {
    auto st = fs_->Lookup(parent, name);
    EXPECT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    if (!st.ok()) return 0;
    fs_->Forget(st->st_ino, 1);  // the lookup's reference
    return st->st_ino;
  }
  bool Exists(std::uint64_t parent, std::string_view name) {
    auto st = fs_->Lookup(parent, name);
    if (!st.ok()) {
      EXPECT_EQ(Err(st), ENOENT) << st.status().ToString();
      return false;
    }
    fs_->Forget(st->st_ino, 1);
    return true;
  }
  std::map<std::string, std::uint64_t> List(std::uint64_t dir) {
    std::map<std::string, std::uint64_t> out;
    Status s = fs_->ReadDir(dir, 0, [&](std::string_view name, std::uint64_t ino, std::uint32_t, std::uint64_t) {
      EXPECT_TRUE(out.emplace(std::string(name), ino).second) << "listed twice: " << name;
      return true;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  void Truncate(std::uint64_t ino, std::uint64_t size) {
    struct stat a {};
    a.st_size = static_cast<off_t>(size);
    auto st = fs_->SetAttr(ino, a, kSetSize);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(static_cast<std::uint64_t>(st->st_size), size);
  }
  // Unlink as the kernel does it: a lookup holds the inode, the unlink
  // drops the name, and the forget that follows frees it.  (An inode with
  // no lookups left when its last name goes stays on the unlinked list
  // until the next mount.)
  void UnlinkAndForget(std::uint64_t parent, std::string_view name) {
    auto st = fs_->Lookup(parent, name);
    ASSERT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    Status s = fs_->Unlink(parent, name);
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
    fs_->Forget(st->st_ino, 1);
  }
  struct statvfs StatFs() {
    auto st = fs_->StatFs();
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (st.ok()) return *st;
    struct statvfs empty {};
    return empty;
  }
  std::uint64_t FreeBlocks() { return StatFs().f_bfree; }

  // The records of a file's extent map, as the image holds them after an
  // unmount (mounted again after).
  std::uint32_t ExtentRecords(std::uint64_t ino) {
    Unmount();
    auto on_disk = format::DecodeSuperblock(ReadBytes(0, format::kSuperSize), dev_->size_bytes());
    EXPECT_TRUE(on_disk.ok()) << on_disk.status().ToString();
    const format::Superblock sb = on_disk.ok() ? *on_disk : format::Superblock{};
    const std::uint64_t block = ino / sb.inodes_per_block(), slot = ino % sb.inodes_per_block();
    auto core = format::DecodeInode(ReadBytes(block * sb.block_size + slot * sb.inode_size, sb.inode_size), ino);
    EXPECT_TRUE(core.ok()) << core.status().ToString();
    Mount();
    return core.ok() ? core->nextents : 0;
  }
  std::vector<std::byte> ReadBytes(std::uint64_t at, std::size_t n) {
    std::vector<std::byte> b(n);
    EXPECT_TRUE(dev_->Read(at, b.data(), n).ok());
    return b;
  }
  // A counter of .walfs/stats.
  std::uint64_t Counter(std::string_view name) {
    const std::string text = fs_->StatsText(), key = std::string("\n") + std::string(name) + " ";
    const std::size_t at = text.find(key);
    EXPECT_NE(at, std::string::npos) << name;
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + key.size()));
  }

  std::unique_ptr<MemoryDevice> dev_;
  std::unique_ptr<Filesystem> fs_;
  std::uint64_t root_ = 0;
  std::uint32_t zeroout_kb_ = 32;  // MountOptions::zeroout_kb for Mount()
  Caller caller_{1000, 1000};
};

}  // namespace walfs::fs::testing
