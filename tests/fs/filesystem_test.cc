// Specs of the mounted filesystem (fs/filesystem.h) in process, without
// FUSE: a fresh image on a MemoryDevice, mounted with MountDevice.  Every
// spec ends with a clean Unmount and an fsck of the device (with replay)
// that must find nothing.  Errors are checked as the errno a POSIX caller
// would see (Status::ToErrno).
#include "fs/filesystem.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"

namespace walfs::fs {
namespace {

constexpr std::uint64_t kBs = 4096;

std::string Pattern(std::size_t n, std::uint64_t seed) {
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
::testing::AssertionResult SameBytes(const std::string& got, const std::string& want) {
  if (got == want) return ::testing::AssertionSuccess();
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return ::testing::AssertionFailure() << "sizes " << got.size() << " and " << want.size()
                                       << ", first difference at byte " << i;
}

int Err(const Status& s) { return s.ToErrno(); }
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

// ================================================================ namespace

TEST_F(FilesystemTest, AFreshImageHasAnEmptyRoot) {
  struct stat st = Stat(root_);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_nlink, 2u);
  auto l = List(root_);
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(l.at("."), root_);
  EXPECT_EQ(l.at(".."), root_);
  EXPECT_EQ(Ino(root_, ".."), root_);
}

TEST_F(FilesystemTest, MknodCreatesANodeThatLookupAndReadDirFind) {
  auto st = fs_->Mknod(caller_, root_, "file", S_IFREG | 0640, 0);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(S_ISREG(st->st_mode));
  EXPECT_EQ(st->st_mode & 07777, 0640u);
  EXPECT_EQ(st->st_nlink, 1u);
  EXPECT_EQ(st->st_uid, 1000u);
  EXPECT_EQ(st->st_gid, 1000u);
  EXPECT_EQ(st->st_size, 0);
  EXPECT_EQ(Ino(root_, "file"), st->st_ino);
  EXPECT_EQ(List(root_).at("file"), st->st_ino);
  // Mode 0 means a regular file; fifos, sockets and devices keep their type and rdev.
  EXPECT_TRUE(S_ISREG(Stat(Create(root_, "plain", 0644)).st_mode));
  auto fifo = fs_->Mknod(caller_, root_, "fifo", S_IFIFO | 0600, 0);
  ASSERT_TRUE(fifo.ok());
  EXPECT_TRUE(S_ISFIFO(fifo->st_mode));
  auto chr = fs_->Mknod(caller_, root_, "null", S_IFCHR | 0666, makedev(1, 3));
  ASSERT_TRUE(chr.ok());
  EXPECT_TRUE(S_ISCHR(Stat(chr->st_ino).st_mode));
  EXPECT_EQ(Stat(chr->st_ino).st_rdev, makedev(1, 3));
  auto sock = fs_->Mknod(caller_, root_, "sock", S_IFSOCK | 0600, 0);
  ASSERT_TRUE(sock.ok());
  EXPECT_TRUE(S_ISSOCK(sock->st_mode));
}

TEST_F(FilesystemTest, MknodRefusesBadNamesTypesAndExistingNames) {
  Create(root_, "taken");
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "taken", S_IFREG | 0644, 0)), EEXIST);
  EXPECT_EQ(Err(fs_->Mkdir(caller_, root_, "taken", 0755)), EEXIST);
  EXPECT_EQ(Err(fs_->Symlink(caller_, root_, "taken", "x")), EEXIST);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "d", S_IFDIR | 0755, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "l", S_IFLNK | 0777, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, ".", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "..", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "a/b", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, std::string(256, 'n'), S_IFREG, 0)), ENAMETOOLONG);
  EXPECT_TRUE(fs_->Mknod(caller_, root_, std::string(255, 'n'), S_IFREG, 0).ok());
  const std::uint64_t file = Create(root_, "file");
  EXPECT_EQ(Err(fs_->Mknod(caller_, file, "child", S_IFREG, 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Mkdir(caller_, file, "child", 0755)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Lookup(file, "child")), ENOTDIR);
  EXPECT_EQ(Err(fs_->Lookup(root_, "missing")), ENOENT);
  EXPECT_EQ(Err(fs_->Lookup(root_, std::string(256, 'n'))), ENAMETOOLONG);
  EXPECT_EQ(Err(fs_->GetAttr(file + 1)), ESTALE) << "a free inode is a stale handle";
  EXPECT_EQ(Err(fs_->GetAttr(3)), ESTALE) << "an inode number outside the inode space";
}

TEST_F(FilesystemTest, MkdirLinksTheNewDirectoryToItsParent) {
  const std::uint64_t a = Mkdir(root_, "a");
  struct stat st = Stat(a);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
  const std::uint64_t b = Mkdir(a, "b");
  EXPECT_EQ(Stat(a).st_nlink, 3u);
  EXPECT_EQ(Ino(b, ".."), a);
  EXPECT_EQ(Ino(b, "."), b);
  auto l = List(b);
  EXPECT_EQ(l.at(".."), a);
  EXPECT_EQ(l.at("."), b);
  EXPECT_EQ(l.size(), 2u);
}

TEST_F(FilesystemTest, ANewDirectoryInheritsTheSetgidGroup) {
  const std::uint64_t a = Mkdir(root_, "a");
  struct stat attr {};
  attr.st_mode = 02775;
  attr.st_gid = 4242;
  ASSERT_TRUE(fs_->SetAttr(a, attr, kSetMode | kSetGid).ok());
  const std::uint64_t sub = Mkdir(a, "sub");
  EXPECT_EQ(Stat(sub).st_gid, 4242u);
  EXPECT_TRUE(Stat(sub).st_mode & S_ISGID);
  EXPECT_EQ(Stat(Create(a, "f")).st_gid, 4242u);
}

TEST_F(FilesystemTest, SymlinksKeepShortAndLongTargets) {
  const std::uint64_t free_before = FreeBlocks();
  const std::string short_target = "a/b/c";
  const std::string long_target = std::string(1000, 'x') + "/end";
  const std::string longest(4095, 'y');
  auto s = fs_->Symlink(caller_, root_, "short", short_target);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(S_ISLNK(s->st_mode));
  EXPECT_EQ(s->st_size, static_cast<off_t>(short_target.size()));
  auto l = fs_->Symlink(caller_, root_, "long", long_target);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto l2 = fs_->Symlink(caller_, root_, "longest", longest);
  ASSERT_TRUE(l2.ok()) << l2.status().ToString();
  EXPECT_EQ(*fs_->Readlink(s->st_ino), short_target);
  EXPECT_EQ(*fs_->Readlink(l->st_ino), long_target);
  EXPECT_EQ(*fs_->Readlink(l2->st_ino), longest);
  EXPECT_EQ(free_before - FreeBlocks(), 2u) << "one block per long target";
  EXPECT_EQ(Err(fs_->Symlink(caller_, root_, "empty", "")), ENOENT);
  EXPECT_EQ(Err(fs_->Symlink(caller_, root_, "huge", std::string(4096, 'z'))), ENAMETOOLONG);
  EXPECT_EQ(Err(fs_->Readlink(Create(root_, "file"))), EINVAL);
  EXPECT_EQ(Err(fs_->Readlink(root_)), EINVAL);
  Remount();
  EXPECT_EQ(*fs_->Readlink(Ino(root_, "short")), short_target);
  EXPECT_EQ(*fs_->Readlink(Ino(root_, "long")), long_target);
  // Removing a long symlink gives its block back (once the kernel's
  // reference from its lookup goes).
  UnlinkAndForget(root_, "long");
  UnlinkAndForget(root_, "longest");
  EXPECT_EQ(FreeBlocks(), free_before);
}

TEST_F(FilesystemTest, SymlinkTargetsAroundTheInlineLimitReadBackAfterARemount) {
  // The data fork has kDataForkRoom (336) bytes; the xattr fork follows it.
  std::map<std::string, std::string> targets;
  for (std::size_t n : {1, 335, 336, 337, 352, 4095}) targets["l" + std::to_string(n)] = Pattern(n, n);
  for (auto& [name, t] : targets) {
    for (char& ch : t)
      if (ch == '\0') ch = 'z';  // a target is a C string
    auto st = fs_->Symlink(caller_, root_, name, t);
    ASSERT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    ASSERT_TRUE(fs_->SetXattr(st->st_ino, "user.near", "the data fork", 0).ok()) << name;
  }
  Remount();
  for (const auto& [name, t] : targets) {
    const std::uint64_t ino = Ino(root_, name);
    auto got = fs_->Readlink(ino);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status().ToString();
    EXPECT_TRUE(SameBytes(*got, t)) << name;
    EXPECT_EQ(*fs_->GetXattr(ino, "user.near"), "the data fork") << name;
  }
}

TEST_F(FilesystemTest, AFragmentedFileGetsAnExtentTreeAndGivesItBack) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "frag");
  ASSERT_TRUE(fs_->SetXattr(f, "user.x", "beside a tree", 0).ok());
  std::string model(119 * kBs, '\0');  // the last block written is 118
  // Every other block first: 60 separate extents, well past the 21 inline.
  for (int b = 0; b < 120; b += 2) {
    const std::string d = Pattern(kBs, b);
    Write(f, b * kBs, d);
    model.replace(b * kBs, kBs, d);
  }
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  // Then the holes, unaligned.
  for (int b = 1; b < 120; b += 4) {
    const std::string d = Pattern(kBs + 100, 1000 + b);
    Write(f, b * kBs - 50, d);
    model.replace(b * kBs - 50, d.size(), d);
  }
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  auto hole = fs_->Lseek(f, 0, SEEK_HOLE);
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(*hole, 3 * kBs);
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(*fs_->GetXattr(f, "user.x"), "beside a tree");
  Truncate(f, 37 * kBs + 5);
  model.resize(37 * kBs + 5);
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * kBs, 20 * kBs).ok());
  std::fill(model.begin() + 3 * kBs, model.begin() + 23 * kBs, '\0');
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  UnlinkAndForget(root_, "frag");
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
}

TEST_F(FilesystemTest, LinkAddsANameAndUnlinkKeepsTheDataUntilTheLastOne) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "hello");
  const std::uint64_t d = Mkdir(root_, "d");
  auto st = fs_->Link(f, d, "g");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->st_nlink, 2u);
  EXPECT_EQ(Ino(d, "g"), f);
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_FALSE(Exists(root_, "f"));
  EXPECT_EQ(Stat(f).st_nlink, 1u);
  EXPECT_TRUE(SameBytes(ReadAll(f), "hello"));
  ASSERT_TRUE(fs_->Unlink(d, "g").ok());
  EXPECT_EQ(Stat(f).st_nlink, 0u) << "unlinked but still referenced";
}

TEST_F(FilesystemTest, LinkRefusesDirectoriesExistingNamesAndNonDirectories) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t d = Mkdir(root_, "d");
  EXPECT_EQ(Err(fs_->Link(d, root_, "d2")), EPERM);
  EXPECT_EQ(Err(fs_->Link(f, root_, "d")), EEXIST);
  EXPECT_EQ(Err(fs_->Link(f, f, "x")), ENOTDIR);
  EXPECT_EQ(Err(fs_->Link(f, root_, "")), EINVAL);
  EXPECT_EQ(Stat(f).st_nlink, 1u);
  // A file with no links left cannot get one back.
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_EQ(Err(fs_->Link(f, root_, "again")), ENOENT);
}

TEST_F(FilesystemTest, UnlinkAndRmdirRefuseTheWrongKindAndMissingNames) {
  Create(root_, "f");
  const std::uint64_t d = Mkdir(root_, "d");
  Create(d, "inside");
  EXPECT_EQ(Err(fs_->Unlink(root_, "missing")), ENOENT);
  EXPECT_EQ(Err(fs_->Rmdir(root_, "missing")), ENOENT);
  EXPECT_EQ(Err(fs_->Unlink(root_, "d")), EISDIR);
  EXPECT_EQ(Err(fs_->Rmdir(root_, "f")), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rmdir(root_, "d")), ENOTEMPTY);
  EXPECT_EQ(Err(fs_->Rmdir(d, ".")), EINVAL);
  EXPECT_EQ(Err(fs_->Rmdir(d, "..")), ENOTEMPTY);
  EXPECT_EQ(Err(fs_->Unlink(Ino(root_, "f"), "x")), ENOTDIR);
  EXPECT_TRUE(Exists(root_, "d"));
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
  ASSERT_TRUE(fs_->Unlink(d, "inside").ok());
  ASSERT_TRUE(fs_->Rmdir(root_, "d").ok());
  EXPECT_EQ(Stat(root_).st_nlink, 2u);
  EXPECT_FALSE(Exists(root_, "d"));
  // A removed directory still referenced takes no new entries.
  EXPECT_EQ(Err(fs_->Mknod(caller_, d, "late", S_IFREG | 0644, 0)), ENOENT);
  EXPECT_EQ(Err(fs_->Mkdir(caller_, d, "late", 0755)), ENOENT);
}

TEST_F(FilesystemTest, ALargeDirectoryListsEveryNameOnceAcrossResumedReadDirs) {
  const std::uint64_t d = Mkdir(root_, "big");
  std::set<std::string> names;
  for (int i = 0; i < 1500; ++i) {
    names.insert("entry-" + std::to_string(i));
    Create(d, "entry-" + std::to_string(i));
  }
  // Pages of 10, each resumed from the last entry's "next" cookie, while
  // names that existed throughout must each appear exactly once.
  std::multiset<std::string> seen;
  std::uint64_t off = 0;
  int page = 0;
  for (bool more = true; more; ++page) {
    int n = 0;
    more = false;
    Status s = fs_->ReadDir(d, off, [&](std::string_view name, std::uint64_t, std::uint32_t, std::uint64_t next) {
      if (n == 10) {
        more = true;
        return false;
      }
      seen.insert(std::string(name));
      off = next;
      ++n;
      return true;
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    // Churn between pages: new names and removals of names created here.
    Create(d, "churn-" + std::to_string(page));
    if (page % 2 == 1) {
      ASSERT_TRUE(fs_->Unlink(d, "churn-" + std::to_string(page - 1)).ok());
    }
    ASSERT_LT(page, 10000);
  }
  for (const std::string& n : names) EXPECT_EQ(seen.count(n), 1u) << n;
  EXPECT_EQ(seen.count("."), 1u);
  EXPECT_EQ(seen.count(".."), 1u);
  // Everything goes, then the directory.
  for (const std::string& n : names) ASSERT_TRUE(fs_->Unlink(d, n).ok()) << n;
  for (const auto& [n, ino] : List(d))
    if (n != "." && n != "..") {
      ASSERT_TRUE(fs_->Unlink(d, n).ok()) << n;
    }
  ASSERT_TRUE(fs_->Rmdir(root_, "big").ok());
}

// ================================================================ rename

TEST_F(FilesystemTest, RenameWithinADirectoryMovesTheName) {
  const std::uint64_t f = Create(root_, "a");
  Write(f, 0, "data");
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_FALSE(Exists(root_, "a"));
  EXPECT_EQ(Ino(root_, "b"), f);
  EXPECT_TRUE(SameBytes(ReadAll(f), "data"));
  EXPECT_EQ(Stat(f).st_nlink, 1u);
}

TEST_F(FilesystemTest, RenameOverAnExistingFileFreesTheTargetWhenItsLastLinkGoes) {
  const std::uint64_t a = Create(root_, "a");
  Write(a, 0, "new");
  const std::uint64_t free_before = FreeBlocks();
  const std::uint64_t b = Create(root_, "b");
  Write(b, 0, Pattern(8 * kBs, 1));
  EXPECT_EQ(free_before - FreeBlocks(), 8u);
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_EQ(Ino(root_, "b"), a);
  EXPECT_FALSE(Exists(root_, "a"));
  EXPECT_EQ(Stat(b).st_nlink, 0u);
  EXPECT_TRUE(SameBytes(Read(b, 0, 10), Pattern(10, 1))) << "still readable while referenced";
  fs_->Forget(b, 1);  // the kernel's reference from the create
  EXPECT_EQ(FreeBlocks(), free_before);
  EXPECT_EQ(Err(fs_->GetAttr(b)), ESTALE);
}

TEST_F(FilesystemTest, RenameOverAnotherLinkOfTheSameFileDoesNothing) {
  const std::uint64_t f = Create(root_, "a");
  ASSERT_TRUE(fs_->Link(f, root_, "b").ok());
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_EQ(Ino(root_, "a"), f);
  EXPECT_EQ(Ino(root_, "b"), f);
  EXPECT_EQ(Stat(f).st_nlink, 2u);
}

TEST_F(FilesystemTest, RenameNoreplaceRefusesAnExistingTarget) {
  const std::uint64_t a = Create(root_, "a");
  const std::uint64_t b = Create(root_, "b");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_NOREPLACE)), EEXIST);
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(root_, "b"), b);
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "c", RENAME_NOREPLACE).ok());
  EXPECT_EQ(Ino(root_, "c"), a);
}

TEST_F(FilesystemTest, RenameRefusesBadFlagsNamesAndMissingSources) {
  Create(root_, "a");
  const std::uint64_t f = Create(root_, "f");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_NOREPLACE | RENAME_EXCHANGE)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", 1u << 10)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "missing", root_, "b", 0)), ENOENT);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, ".", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "x/y", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, std::string(256, 'q'), 0)), ENAMETOOLONG);
  EXPECT_EQ(Err(fs_->Rename(f, "a", root_, "b", 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", f, "b", 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "nothere", RENAME_EXCHANGE)), ENOENT);
  EXPECT_TRUE(Exists(root_, "a"));
}

TEST_F(FilesystemTest, RenameOfADirectoryOverAFileIsENOTDIRAndTheReverseEISDIR) {
  Mkdir(root_, "d");
  Create(root_, "f");
  EXPECT_EQ(Err(fs_->Rename(root_, "d", root_, "f", 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rename(root_, "f", root_, "d", 0)), EISDIR);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
}

TEST_F(FilesystemTest, RenameOfADirectoryOverANonEmptyDirectoryIsENOTEMPTY) {
  const std::uint64_t a = Mkdir(root_, "a");
  const std::uint64_t b = Mkdir(root_, "b");
  Create(b, "inside");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", 0)), ENOTEMPTY);
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(root_, "b"), b);
}

TEST_F(FilesystemTest, RenameOfADirectoryOverAnEmptyOneReplacesItAndFixesLinkCounts) {
  const std::uint64_t a = Mkdir(root_, "a");
  const std::uint64_t b = Mkdir(root_, "b");
  Create(a, "child");
  EXPECT_EQ(Stat(root_).st_nlink, 4u);
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_EQ(Ino(root_, "b"), a);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
  EXPECT_EQ(Stat(b).st_nlink, 0u);
  fs_->Forget(b, 1);
  EXPECT_EQ(Err(fs_->GetAttr(b)), ESTALE);
  // Across parents: the replaced directory's ".." goes, the moved one's comes.
  const std::uint64_t p = Mkdir(root_, "p");
  const std::uint64_t q = Mkdir(p, "q");
  ASSERT_TRUE(fs_->Rename(root_, "b", p, "q", 0).ok());
  EXPECT_EQ(Ino(p, "q"), a);
  EXPECT_EQ(Ino(a, ".."), p);
  EXPECT_EQ(Stat(p).st_nlink, 3u);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);  // "p" only
  fs_->Forget(q, 1);
}

TEST_F(FilesystemTest, RenameOfADirectoryAcrossParentsMovesDotDotAndLinkCounts) {
  const std::uint64_t src = Mkdir(root_, "src");
  const std::uint64_t dst = Mkdir(root_, "dst");
  const std::uint64_t d = Mkdir(src, "d");
  Create(d, "file");
  EXPECT_EQ(Stat(src).st_nlink, 3u);
  EXPECT_EQ(Stat(dst).st_nlink, 2u);
  ASSERT_TRUE(fs_->Rename(src, "d", dst, "moved", 0).ok());
  EXPECT_EQ(Stat(src).st_nlink, 2u);
  EXPECT_EQ(Stat(dst).st_nlink, 3u);
  EXPECT_EQ(Stat(d).st_nlink, 2u);
  EXPECT_EQ(Ino(d, ".."), dst);
  EXPECT_EQ(List(d).at(".."), dst);
  EXPECT_FALSE(Exists(src, "d"));
  EXPECT_TRUE(Exists(d, "file"));
  Remount();
  EXPECT_EQ(Ino(d, ".."), dst);
  EXPECT_EQ(Stat(dst).st_nlink, 3u);
}

TEST_F(FilesystemTest, RenameOfAFileAcrossParentsLeavesLinkCountsAlone) {
  const std::uint64_t src = Mkdir(root_, "src");
  const std::uint64_t dst = Mkdir(root_, "dst");
  const std::uint64_t f = Create(src, "f");
  ASSERT_TRUE(fs_->Rename(src, "f", dst, "g", 0).ok());
  EXPECT_EQ(Ino(dst, "g"), f);
  EXPECT_EQ(Stat(src).st_nlink, 2u);
  EXPECT_EQ(Stat(dst).st_nlink, 2u);
}

TEST_F(FilesystemTest, RenameOfADirectoryIntoItsOwnSubtreeIsEINVAL) {
  const std::uint64_t a = Mkdir(root_, "a");
  const std::uint64_t b = Mkdir(a, "b");
  const std::uint64_t c = Mkdir(b, "c");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", c, "a", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", a, "self", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(a, "b", c, "x", 0)), EINVAL);
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(b, ".."), a);
  // Exchanging a directory with something inside it is refused the same way.
  Create(c, "leaf");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", c, "leaf", RENAME_EXCHANGE)), EINVAL);
  const std::uint64_t x = Mkdir(c, "x");
  EXPECT_EQ(Err(fs_->Rename(c, "x", root_, "a", RENAME_EXCHANGE)), EINVAL);
  EXPECT_EQ(Ino(c, "x"), x);
}

TEST_F(FilesystemTest, RenameExchangeSwapsTwoFiles) {
  const std::uint64_t a = Create(root_, "a");
  const std::uint64_t b = Create(root_, "b");
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(root_, "a"), b);
  EXPECT_EQ(Ino(root_, "b"), a);
  EXPECT_EQ(Stat(a).st_nlink, 1u);
  EXPECT_EQ(Stat(b).st_nlink, 1u);
}

TEST_F(FilesystemTest, RenameExchangeOfAFileAndADirectoryAcrossParentsFixesLinkCountsAndDotDot) {
  const std::uint64_t p = Mkdir(root_, "p");
  const std::uint64_t q = Mkdir(root_, "q");
  const std::uint64_t d = Mkdir(p, "d");
  const std::uint64_t f = Create(q, "f");
  EXPECT_EQ(Stat(p).st_nlink, 3u);
  EXPECT_EQ(Stat(q).st_nlink, 2u);
  ASSERT_TRUE(fs_->Rename(p, "d", q, "f", RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(p, "d"), f);
  EXPECT_EQ(Ino(q, "f"), d);
  EXPECT_EQ(Ino(d, ".."), q);
  EXPECT_EQ(Stat(p).st_nlink, 2u);
  EXPECT_EQ(Stat(q).st_nlink, 3u);
  // The directory entries carry the right types.
  std::map<std::string, std::uint32_t> types;
  ASSERT_TRUE(fs_->ReadDir(q, 0, [&](std::string_view n, std::uint64_t, std::uint32_t t, std::uint64_t) {
    types[std::string(n)] = t;
    return true;
  }).ok());
  EXPECT_EQ(types.at("f"), static_cast<std::uint32_t>(DT_DIR));
}

TEST_F(FilesystemTest, RenameExchangeOfTwoDirectoriesAcrossParentsSwapsDotDot) {
  const std::uint64_t p = Mkdir(root_, "p");
  const std::uint64_t q = Mkdir(root_, "q");
  const std::uint64_t a = Mkdir(p, "a");
  const std::uint64_t b = Mkdir(q, "b");
  ASSERT_TRUE(fs_->Rename(p, "a", q, "b", RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(p, "a"), b);
  EXPECT_EQ(Ino(q, "b"), a);
  EXPECT_EQ(Ino(a, ".."), q);
  EXPECT_EQ(Ino(b, ".."), p);
  EXPECT_EQ(Stat(p).st_nlink, 3u);
  EXPECT_EQ(Stat(q).st_nlink, 3u);
}

TEST_F(FilesystemTest, RenameIntoABigDirectoryAndOutAgain) {
  const std::uint64_t big = Mkdir(root_, "big");
  for (int i = 0; i < 300; ++i) Create(big, "n" + std::to_string(i));
  const std::uint64_t d = Mkdir(root_, "d");
  ASSERT_TRUE(fs_->Rename(root_, "d", big, "d", 0).ok());
  EXPECT_EQ(Ino(d, ".."), big);
  EXPECT_EQ(Stat(big).st_nlink, 3u);
  ASSERT_TRUE(fs_->Rename(big, "n7", root_, "n7", 0).ok());
  ASSERT_TRUE(fs_->Rename(big, "d", root_, "d", 0).ok());
  EXPECT_EQ(Ino(d, ".."), root_);
  EXPECT_EQ(Stat(big).st_nlink, 2u);
  EXPECT_EQ(List(big).size(), 2u + 299u);
}

// RENAME_WHITEOUT (overlayfs asks for it on its upper layer): the old name
// becomes a whiteout -- a 0/0 character device owned by the caller -- in
// the rename's own transaction.
TEST_F(FilesystemTest, RenameWhiteoutLeavesAZeroZeroCharacterDeviceOwnedByTheCallerAtTheOldName) {
  const std::uint64_t f = Create(root_, "a");
  Write(f, 0, "data");
  const std::uint64_t d = Mkdir(root_, "d");
  const Caller who{1234, 5678};
  ASSERT_TRUE(fs_->Rename(root_, "a", d, "b", RENAME_WHITEOUT, who).ok());
  EXPECT_EQ(Ino(d, "b"), f);
  EXPECT_TRUE(SameBytes(ReadAll(f), "data"));
  auto expect_whiteout = [&](std::uint64_t dir, const std::string& name) {
    const std::uint64_t w = Ino(dir, name);
    ASSERT_NE(w, 0u);
    const struct stat st = Stat(w);
    EXPECT_EQ(st.st_mode, static_cast<mode_t>(S_IFCHR)) << name << ": mode " << std::oct << st.st_mode;
    EXPECT_EQ(st.st_rdev, 0u);
    EXPECT_EQ(st.st_uid, who.uid);
    EXPECT_EQ(st.st_gid, who.gid);
    EXPECT_EQ(st.st_nlink, 1u);
    std::map<std::string, std::uint32_t> types;
    ASSERT_TRUE(fs_->ReadDir(dir, 0, [&](std::string_view n, std::uint64_t, std::uint32_t t, std::uint64_t) {
      types[std::string(n)] = t;
      return true;
    }).ok());
    EXPECT_EQ(types[name], static_cast<std::uint32_t>(DT_CHR));
  };
  expect_whiteout(root_, "a");
  EXPECT_EQ(Stat(d).st_nlink, 2u);
  // Over an existing target in the same directory: the target goes, as in
  // any rename.
  const std::uint64_t x = Create(d, "x");
  const std::uint64_t y = Create(d, "y");
  ASSERT_TRUE(fs_->Rename(d, "x", d, "y", RENAME_WHITEOUT, who).ok());
  EXPECT_EQ(Ino(d, "y"), x);
  EXPECT_EQ(Stat(y).st_nlink, 0u);
  fs_->Forget(y, 1);
  expect_whiteout(d, "x");
  // A directory moved out leaves one too, and its old parent loses the link.
  const std::uint64_t sub = Mkdir(d, "sub");
  ASSERT_TRUE(fs_->Rename(d, "sub", root_, "sub", RENAME_WHITEOUT, who).ok());
  EXPECT_EQ(Ino(sub, ".."), root_);
  EXPECT_EQ(Stat(d).st_nlink, 2u);
  expect_whiteout(d, "sub");
  Remount();
  expect_whiteout(root_, "a");
  expect_whiteout(d, "x");
  expect_whiteout(d, "sub");
  EXPECT_EQ(Ino(d, "b"), f);
}

TEST_F(FilesystemTest, ARefusedRenameWhiteoutLeavesNoInodeBehind) {
  const std::uint64_t a = Create(root_, "a");
  const std::uint64_t b = Create(root_, "b");
  const std::uint64_t d = Mkdir(root_, "d");
  Create(d, "inside");
  const std::uint64_t e = Mkdir(root_, "e");
  const std::uint64_t inodes = StatFs().f_ffree;
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_WHITEOUT | RENAME_EXCHANGE)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_WHITEOUT | RENAME_NOREPLACE)), EEXIST);
  EXPECT_EQ(Err(fs_->Rename(root_, "missing", root_, "z", RENAME_WHITEOUT)), ENOENT);
  EXPECT_EQ(Err(fs_->Rename(root_, "e", root_, "d", RENAME_WHITEOUT)), ENOTEMPTY);
  EXPECT_EQ(Err(fs_->Rename(root_, "d", d, "self", RENAME_WHITEOUT)), EINVAL);
  ASSERT_TRUE(fs_->Link(a, root_, "a2").ok());
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "a2", RENAME_WHITEOUT).ok()) << "two names of one file: nothing to do";
  EXPECT_EQ(StatFs().f_ffree, inodes) << "every whiteout made for a refused rename was freed";
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(root_, "b"), b);
  EXPECT_EQ(Ino(root_, "e"), e);
}

// ================================================================ attributes

TEST_F(FilesystemTest, SetAttrChangesModeOwnersAndTimes) {
  const std::uint64_t f = Create(root_, "f");
  struct stat a {};
  a.st_mode = S_IFDIR | 0600;  // the type bits are ignored
  a.st_uid = 7;
  a.st_gid = 8;
  a.st_atim = {1000, 5};
  a.st_mtim = {2000, 6};
  auto st = fs_->SetAttr(f, a, kSetMode | kSetUid | kSetGid | kSetAtime | kSetMtime);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->st_mode, static_cast<mode_t>(S_IFREG | 0600));
  EXPECT_EQ(st->st_uid, 7u);
  EXPECT_EQ(st->st_gid, 8u);
  EXPECT_EQ(st->st_atim.tv_sec, 1000);
  EXPECT_EQ(st->st_atim.tv_nsec, 5);
  EXPECT_EQ(st->st_mtim.tv_sec, 2000);
  EXPECT_EQ(st->st_mtim.tv_nsec, 6);
  Remount();
  struct stat again = Stat(f);
  EXPECT_EQ(again.st_mode, static_cast<mode_t>(S_IFREG | 0600));
  EXPECT_EQ(again.st_uid, 7u);
  EXPECT_EQ(again.st_mtim.tv_sec, 2000);
}

TEST_F(FilesystemTest, TruncateRefusesDirectoriesSpecialFilesAndNegativeSizes) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t fifo = Create(root_, "fifo", S_IFIFO | 0600);
  const std::uint64_t f = Create(root_, "f");
  struct stat a {};
  a.st_size = 10;
  EXPECT_EQ(Err(fs_->SetAttr(d, a, kSetSize)), EISDIR);
  EXPECT_EQ(Err(fs_->SetAttr(fifo, a, kSetSize)), EINVAL);
  a.st_size = -1;
  EXPECT_EQ(Err(fs_->SetAttr(f, a, kSetSize)), EINVAL);
  a.st_size = static_cast<off_t>((std::uint64_t{1} << 50) + 1);
  EXPECT_EQ(Err(fs_->SetAttr(f, a, kSetSize)), EFBIG);
  EXPECT_EQ(Stat(f).st_size, 0);
}

TEST_F(FilesystemTest, TruncateDownZeroesTheTailSoGrowingAgainReadsZeros) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t free_before = FreeBlocks();
  const std::string data(3 * kBs, 'a');
  Write(f, 0, data);
  EXPECT_EQ(free_before - FreeBlocks(), 3u);
  Truncate(f, 5000);
  EXPECT_EQ(Stat(f).st_size, 5000);
  EXPECT_EQ(free_before - FreeBlocks(), 2u) << "the block past the new end is freed";
  EXPECT_EQ(Stat(f).st_blocks, 2 * 8);
  Truncate(f, 3 * kBs);
  const std::string back = ReadAll(f);
  ASSERT_EQ(back.size(), 3 * kBs);
  EXPECT_TRUE(SameBytes(back.substr(0, 5000), std::string(5000, 'a')));
  EXPECT_TRUE(SameBytes(back.substr(5000), std::string(3 * kBs - 5000, '\0')));
  // The same through a write past the end rather than a truncate up.
  Truncate(f, 100);
  Write(f, 2 * kBs, "zz");
  const std::string w = ReadAll(f);
  ASSERT_EQ(w.size(), 2 * kBs + 2);
  EXPECT_TRUE(SameBytes(w.substr(0, 100), std::string(100, 'a')));
  EXPECT_TRUE(SameBytes(w.substr(100, 2 * kBs - 100), std::string(2 * kBs - 100, '\0')));
  EXPECT_TRUE(SameBytes(w.substr(2 * kBs), "zz"));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), w));
  Truncate(f, 0);
  EXPECT_EQ(FreeBlocks(), free_before);
  EXPECT_EQ(Stat(f).st_blocks, 0);
}

// ================================================================ data

TEST_F(FilesystemTest, ReadsPastTheEndAreShortAndDirectoriesCannotBeReadOrWritten) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "abc");
  EXPECT_TRUE(SameBytes(Read(f, 1, 100), "bc"));
  EXPECT_TRUE(SameBytes(Read(f, 3, 100), ""));
  EXPECT_TRUE(SameBytes(Read(f, 1000, 100), ""));
  const std::uint64_t d = Mkdir(root_, "d");
  char buf[8];
  EXPECT_EQ(Err(fs_->Read(d, 0, 8, buf)), EISDIR);
  EXPECT_EQ(Err(fs_->Write(d, 0, "x", 1)), EINVAL);
  EXPECT_EQ(Err(fs_->Write(f, std::uint64_t{1} << 50, "x", 1)), EFBIG);
  auto zero = fs_->Write(f, 0, "", 0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, 0u);
  EXPECT_EQ(Stat(f).st_size, 3);
}

TEST_F(FilesystemTest, ASparseWriteLeavesAHoleThatReadsZeros) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t free_before = FreeBlocks();
  Write(f, 1 << 20, "tail");
  EXPECT_EQ(Stat(f).st_size, (1 << 20) + 4);
  EXPECT_EQ(free_before - FreeBlocks(), 1u);
  EXPECT_EQ(Stat(f).st_blocks, 8);
  const std::string all = ReadAll(f);
  EXPECT_TRUE(SameBytes(all.substr(0, 1 << 20), std::string(1 << 20, '\0')));
  EXPECT_TRUE(SameBytes(all.substr(1 << 20), "tail"));
}

TEST_F(FilesystemTest, UnalignedWritesAndOverwritesReadBackExactly) {
  const std::uint64_t f = Create(root_, "f");
  std::string model;
  auto put = [&](std::uint64_t off, const std::string& s) {
    Write(f, off, s);
    if (model.size() < off + s.size()) model.resize(off + s.size(), '\0');
    model.replace(off, s.size(), s);
  };
  put(4090, Pattern(100, 1));        // across a block boundary
  put(4095, "0123456789");           // overwrite inside it
  put(1, "x");                       // into the hole before
  put(3 * kBs - 3, Pattern(7, 2));   // a new block, not contiguous
  put(4000, Pattern(9000, 3));       // over everything
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_TRUE(SameBytes(Read(f, 4093, 11), model.substr(4093, 11)));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

TEST_F(FilesystemTest, AWriteAcrossSeveralExtentsAndHolesFillsTheHoles) {
  const std::uint64_t f = Create(root_, "f");
  std::string model(12 * kBs, '\0');
  auto put = [&](std::uint64_t off, const std::string& s) {
    Write(f, off, s);
    model.replace(off, s.size(), s);
  };
  put(0, Pattern(4 * kBs, 1));
  put(8 * kBs, Pattern(4 * kBs, 2));
  Create(root_, "spacer");  // so the next allocation is not contiguous
  put(2 * kBs + 17, Pattern(8 * kBs - 40, 3));
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Stat(f).st_blocks, 12 * 8);
  Truncate(f, 0);
}

TEST_F(FilesystemTest, TenMiBWithAPatternReadsBackInOddChunks) {
  const std::uint64_t f = Create(root_, "f");
  const std::string data = Pattern(10 << 20, 42);
  for (std::size_t off = 0; off < data.size(); off += 1 << 20)
    Write(f, off, std::string_view(data).substr(off, 1 << 20));
  EXPECT_EQ(Stat(f).st_size, 10 << 20);
  EXPECT_EQ(Stat(f).st_blocks, (10 << 20) / 512);
  for (std::size_t off = 0; off < data.size(); off += 65537) {
    const std::size_t n = std::min<std::size_t>(65537, data.size() - off);
    ASSERT_TRUE(SameBytes(Read(f, off, n), data.substr(off, n))) << "at " << off;
  }
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), data));
}

TEST_F(FilesystemTest, RandomWritesAndTruncatesAgreeWithAStringModel) {
  const std::uint64_t f = Create(root_, "f");
  std::mt19937_64 rng(7);
  std::string model;
  for (int i = 0; i < 300; ++i) {
    const std::uint64_t op = rng() % 10;
    if (op < 7) {
      const std::uint64_t off = rng() % (300 * 1024);
      const std::string s = Pattern(1 + rng() % 20000, i);
      Write(f, off, s);
      if (model.size() < off + s.size()) model.resize(off + s.size(), '\0');
      model.replace(off, s.size(), s);
    } else if (op < 9) {
      const std::uint64_t size = rng() % (320 * 1024);
      Truncate(f, size);
      model.resize(size, '\0');
    } else {
      const std::uint64_t off = rng() % (300 * 1024), len = 1 + rng() % 50000;
      ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len).ok());
      if (off < model.size()) {
        const std::uint64_t end = std::min<std::uint64_t>(model.size(), off + len);
        std::fill(model.begin() + off, model.begin() + end, '\0');
      }
    }
    ASSERT_EQ(static_cast<std::uint64_t>(Stat(f).st_size), model.size()) << "op " << i;
    if (i % 25 == 0) {
      ASSERT_TRUE(SameBytes(ReadAll(f), model)) << "op " << i;
    }
  }
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

// ================================================================ fallocate

TEST_F(FilesystemTest, FallocatedBlocksReadAsZerosUntilWritten) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t free_before = FreeBlocks();
  ASSERT_TRUE(fs_->Fallocate(f, 0, 0, 16 * kBs).ok());
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(16 * kBs));
  EXPECT_EQ(Stat(f).st_blocks, 16 * 8);
  EXPECT_EQ(free_before - FreeBlocks(), 16u);
  EXPECT_TRUE(SameBytes(ReadAll(f), std::string(16 * kBs, '\0')));
  // A write into the middle: the rest of its block still reads zero.
  Write(f, 5000, "written");
  std::string model(16 * kBs, '\0');
  model.replace(5000, 7, "written");
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(free_before - FreeBlocks(), 16u) << "writing into fallocated space allocates nothing";
  // Fallocate over data changes nothing.
  ASSERT_TRUE(fs_->Fallocate(f, 0, 0, 2 * kBs).ok());
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

// Random block writes into a preallocated file, fio's default: each write
// zeroes what is left of its unwritten extent beside it when that is within
// zeroout_kb, and joins the written neighbours it continues, so the map stays
// a few records, where splitting each extent in three (zeroout_kb=0) leaves
// about two per write.  The bytes read back are the same either way.
TEST_F(FilesystemTest, WritesIntoPreallocatedSpaceZeroOutSmallRemaindersAndKeepTheMapSmall) {
  constexpr std::uint64_t kBlocks = 512;
  std::vector<std::uint64_t> order;
  for (std::uint64_t b = 0; b < kBlocks; b += 2) order.push_back(b);  // every other block
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  std::map<std::uint32_t, std::uint32_t> records;
  for (const std::uint32_t kb : {32u, 0u}) {
    zeroout_kb_ = kb;
    Remount();
    const std::string name = "f" + std::to_string(kb);
    const std::uint64_t f = Create(root_, name);
    ASSERT_TRUE(fs_->Fallocate(f, 0, 0, kBlocks * kBs).ok());
    std::string model(kBlocks * kBs, '\0');
    const std::uint64_t zeroed_before = Counter("zeroout_blocks");
    for (const std::uint64_t b : order) {
      const std::string data(kBs, static_cast<char>('a' + b % 26));
      Write(f, b * kBs, data);
      model.replace(b * kBs, kBs, data);
    }
    // Without zeroout every write converts; with it, later writes land in
    // blocks an earlier one zeroed, and each conversion zeroes less than
    // its limit's worth.
    const std::uint64_t conversions = Counter("unwritten_conversions");
    const std::uint64_t zeroed = Counter("zeroout_blocks") - zeroed_before;
    if (kb == 0) {
      EXPECT_EQ(conversions, order.size());
      EXPECT_EQ(zeroed, 0u);
    } else {
      EXPECT_LT(conversions, order.size());
      EXPECT_GT(zeroed, 0u);
      EXPECT_LT(zeroed, conversions * (kb * 1024 / kBs));
    }
    EXPECT_TRUE(SameBytes(ReadAll(f), model)) << "zeroout_kb=" << kb;
    records[kb] = ExtentRecords(f);
    EXPECT_TRUE(SameBytes(ReadAll(f), model)) << "after a remount, zeroout_kb=" << kb;
  }
  EXPECT_GE(records[0], kBlocks / 2) << "a written extent per write, unwritten ones between";
  EXPECT_LE(records[32] * 8, records[0]) << records[32] << " records with zeroout, " << records[0] << " without";
}

TEST_F(FilesystemTest, FallocateKeepSizeAllocatesWithoutGrowingTheFile) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "abc");
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_KEEP_SIZE, 0, 8 * kBs).ok());
  EXPECT_EQ(Stat(f).st_size, 3);
  EXPECT_EQ(Stat(f).st_blocks, 8 * 8);
  EXPECT_TRUE(SameBytes(ReadAll(f), "abc"));
  // Growing into the preallocated blocks reads zeros there.
  Truncate(f, 5 * kBs);
  std::string model(5 * kBs, '\0');
  model.replace(0, 3, "abc");
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Stat(f).st_blocks, 8 * 8) << "truncate up frees nothing";
}

TEST_F(FilesystemTest, PunchHoleZeroesPartialBlocksAndFreesWholeOnes) {
  const std::uint64_t f = Create(root_, "f");
  const std::string data = Pattern(4 * kBs, 9);
  Write(f, 0, data);
  const std::uint64_t free_before = FreeBlocks();
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 3 * kBs + 100 - 1000).ok());
  std::string model = data;
  std::fill(model.begin() + 1000, model.begin() + 3 * kBs + 100, '\0');
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(4 * kBs));
  EXPECT_EQ(FreeBlocks() - free_before, 2u) << "blocks 1 and 2 are whole inside the hole";
  EXPECT_EQ(Stat(f).st_blocks, 2 * 8);
  auto hole = fs_->Lseek(f, 0, SEEK_HOLE);
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(*hole, kBs);
  // Inside one block: zeroed in place, nothing freed.
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * kBs + 200, 10).ok());
  std::fill(model.begin() + 3 * kBs + 200, model.begin() + 3 * kBs + 210, '\0');
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(FreeBlocks() - free_before, 2u);
}

TEST_F(FilesystemTest, FallocateRefusesBadModesLengthsAndFileTypes) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t fifo = Create(root_, "fifo", S_IFIFO | 0600);
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_PUNCH_HOLE, 0, kBs)), EOPNOTSUPP);
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_COLLAPSE_RANGE, 0, kBs)), EOPNOTSUPP);
  EXPECT_EQ(Err(fs_->Fallocate(f, 0, 0, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Fallocate(f, 0, std::uint64_t{1} << 50, kBs)), EFBIG);
  EXPECT_EQ(Err(fs_->Fallocate(d, 0, 0, kBs)), EISDIR);
  EXPECT_EQ(Err(fs_->Fallocate(fifo, 0, 0, kBs)), ENODEV);
  EXPECT_EQ(Stat(f).st_size, 0);
}

TEST_F(FilesystemTest, ZeroRangeZeroesDataHolesAndUnwrittenBlocksAndLeavesThemAllAllocated) {
  const std::uint64_t f = Create(root_, "f");
  const std::string data = Pattern(8 * kBs, 11);
  Write(f, 0, data);                                       // blocks 0-7 written
  ASSERT_TRUE(fs_->Fallocate(f, 0, 12 * kBs, 4 * kBs).ok());  // 8-11 a hole, 12-15 unwritten
  Write(f, 14 * kBs, "tail");
  const std::uint64_t free_before = FreeBlocks();
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 1000, 14 * kBs + 50 - 1000).ok());
  std::string model(16 * kBs, '\0');
  model.replace(0, 1000, data.substr(0, 1000));
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(16 * kBs)) << "inside the file: the size stays";
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(free_before - FreeBlocks(), 4u) << "the hole is allocated, nothing else";
  EXPECT_EQ(Stat(f).st_blocks, 16 * 8);
  auto hole = fs_->Lseek(f, 0, SEEK_HOLE);
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(*hole, 16 * kBs) << "no hole is left in the range";
  // Writes into the zeroed range need no block and land as usual.
  Write(f, 3 * kBs + 7, "again");
  model.replace(3 * kBs + 7, 5, "again");
  EXPECT_EQ(free_before - FreeBlocks(), 4u);
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  // Crash-safe too: fsynced, crashed, recovered.
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 0, kBs).ok());
  model.replace(0, kBs, std::string(kBs, '\0'));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
}

TEST_F(FilesystemTest, ZeroRangePastTheEndGrowsTheFileOnlyWithoutKeepSize) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "abc");
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 2, 4 * kBs).ok());
  EXPECT_EQ(Stat(f).st_size, 3);
  EXPECT_EQ(Stat(f).st_blocks, 5 * 8) << "allocated past the end";
  EXPECT_TRUE(SameBytes(ReadAll(f), std::string("ab\0", 3)));
  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 6 * kBs, 100).ok());
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(6 * kBs + 100));
  std::string model(6 * kBs + 100, '\0');
  model.replace(0, 2, "ab");
  EXPECT_TRUE(SameBytes(ReadAll(f), model));
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kBs)),
            EOPNOTSUPP);
}

// ================================================================ lseek

TEST_F(FilesystemTest, SeekDataAndSeekHoleFollowTheExtentMap) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 2 * kBs, Pattern(2 * kBs, 1));  // data in blocks 2-3
  Write(f, 6 * kBs, Pattern(kBs, 2));      // and 6
  Truncate(f, 8 * kBs + 100);              // a hole at the end
  auto seek = [&](std::uint64_t off, int whence) -> std::int64_t {
    auto r = fs_->Lseek(f, off, whence);
    return r.ok() ? static_cast<std::int64_t>(*r) : -Err(r);
  };
  EXPECT_EQ(seek(0, SEEK_DATA), static_cast<std::int64_t>(2 * kBs));
  EXPECT_EQ(seek(0, SEEK_HOLE), 0);
  EXPECT_EQ(seek(2 * kBs + 5, SEEK_DATA), static_cast<std::int64_t>(2 * kBs + 5));
  EXPECT_EQ(seek(2 * kBs + 5, SEEK_HOLE), static_cast<std::int64_t>(4 * kBs));
  EXPECT_EQ(seek(4 * kBs, SEEK_DATA), static_cast<std::int64_t>(6 * kBs));
  EXPECT_EQ(seek(6 * kBs, SEEK_HOLE), static_cast<std::int64_t>(7 * kBs));
  EXPECT_EQ(seek(7 * kBs, SEEK_DATA), -ENXIO);
  EXPECT_EQ(seek(8 * kBs + 50, SEEK_HOLE), static_cast<std::int64_t>(8 * kBs + 50));
  EXPECT_EQ(seek(8 * kBs + 100, SEEK_DATA), -ENXIO);
  EXPECT_EQ(seek(8 * kBs + 100, SEEK_HOLE), -ENXIO);
  EXPECT_EQ(seek(0, SEEK_SET), -EINVAL);
  // A file that is all data: the only hole is the end.
  const std::uint64_t g = Create(root_, "g");
  Write(g, 0, Pattern(3 * kBs + 1, 3));
  auto h = fs_->Lseek(g, 10, SEEK_HOLE);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, 3 * kBs + 1);
}

// ================================================================ xattrs

TEST_F(FilesystemTest, XattrsAreCreatedReplacedListedAndRemoved) {
  const std::uint64_t f = Create(root_, "f");
  EXPECT_EQ(Err(fs_->GetXattr(f, "user.a")), ENODATA);
  EXPECT_TRUE(fs_->ListXattr(f)->empty());
  ASSERT_TRUE(fs_->SetXattr(f, "user.a", "one", XATTR_CREATE).ok());
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "one");
  EXPECT_EQ(Err(fs_->SetXattr(f, "user.a", "two", XATTR_CREATE)), EEXIST);
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "one");
  EXPECT_EQ(Err(fs_->SetXattr(f, "user.b", "x", XATTR_REPLACE)), ENODATA);
  EXPECT_EQ(Err(fs_->GetXattr(f, "user.b")), ENODATA);
  ASSERT_TRUE(fs_->SetXattr(f, "user.a", "three", XATTR_REPLACE).ok());
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "three");
  ASSERT_TRUE(fs_->SetXattr(f, "user.a", "", 0).ok());
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "");
  ASSERT_TRUE(fs_->SetXattr(f, "user.b", std::string(1000, 'b'), 0).ok());
  ASSERT_TRUE(fs_->SetXattr(f, "trusted.c", "c", 0).ok());
  auto names = fs_->ListXattr(f);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(std::set<std::string>(names->begin(), names->end()),
            (std::set<std::string>{"user.a", "user.b", "trusted.c"}));
  ASSERT_TRUE(fs_->RemoveXattr(f, "user.a").ok());
  EXPECT_EQ(Err(fs_->RemoveXattr(f, "user.a")), ENODATA);
  EXPECT_EQ(Err(fs_->GetXattr(f, "user.a")), ENODATA);
  Remount();
  EXPECT_EQ(*fs_->GetXattr(f, "user.b"), std::string(1000, 'b'));
  ASSERT_TRUE(fs_->RemoveXattr(f, "user.b").ok());
  ASSERT_TRUE(fs_->RemoveXattr(f, "trusted.c").ok());
  EXPECT_TRUE(fs_->ListXattr(f)->empty());
}

TEST_F(FilesystemTest, XattrNamesAndValuesHaveLimits) {
  const std::uint64_t f = Create(root_, "f");
  EXPECT_EQ(Err(fs_->SetXattr(f, "", "v", 0)), ERANGE);
  EXPECT_EQ(Err(fs_->SetXattr(f, std::string(XATTR_NAME_MAX + 1, 'n'), "v", 0)), ERANGE);
  EXPECT_EQ(Err(fs_->GetXattr(f, "")), ERANGE);
  EXPECT_EQ(Err(fs_->RemoveXattr(f, "")), ERANGE);
  EXPECT_EQ(Err(fs_->SetXattr(f, "user.big", std::string(XATTR_SIZE_MAX + 1, 'v'), 0)), E2BIG);
  EXPECT_TRUE(fs_->SetXattr(f, std::string(XATTR_NAME_MAX, 'n'), "v", 0).ok());
}

TEST_F(FilesystemTest, ManyXattrsGrowATreeAndUnlinkingTheFileFreesIt) {
  const std::uint64_t free_before = FreeBlocks();
  const std::uint64_t f = Create(root_, "f");
  for (int i = 0; i < 300; ++i)
    ASSERT_TRUE(fs_->SetXattr(f, "user.attr" + std::to_string(i), Pattern(100, i), 0).ok()) << i;
  EXPECT_GT(free_before - FreeBlocks(), 3u);
  for (int i = 0; i < 300; i += 37) EXPECT_EQ(*fs_->GetXattr(f, "user.attr" + std::to_string(i)), Pattern(100, i));
  EXPECT_EQ(fs_->ListXattr(f)->size(), 300u);
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  fs_->Forget(f, 1);
  EXPECT_EQ(FreeBlocks(), free_before);
}

TEST_F(FilesystemTest, XattrsOnADirectorySurviveItsConversionToATree) {
  const std::uint64_t d = Mkdir(root_, "d");
  ASSERT_TRUE(fs_->SetXattr(d, "user.tag", "kept", 0).ok());
  for (int i = 0; i < 200; ++i) Create(d, "child-" + std::to_string(i));
  EXPECT_EQ(*fs_->GetXattr(d, "user.tag"), "kept");
  ASSERT_TRUE(fs_->SetXattr(d, "user.more", "also", 0).ok());
  EXPECT_EQ(Ino(d, "child-150"), Ino(d, "child-150"));
  Remount();
  EXPECT_EQ(*fs_->GetXattr(d, "user.tag"), "kept");
  EXPECT_EQ(*fs_->GetXattr(d, "user.more"), "also");
  EXPECT_EQ(List(d).size(), 202u);
}

// ================================================================ space

TEST_F(FilesystemTest, StatFsCountsFollowCreatesWritesAndRemoves) {
  const struct statvfs before = StatFs();
  EXPECT_EQ(before.f_bsize, kBs);
  EXPECT_EQ(before.f_namemax, 255u);
  EXPECT_GT(before.f_bfree, 0u);
  const std::uint64_t f = Create(root_, "f");
  const struct statvfs created = StatFs();
  EXPECT_EQ(created.f_ffree, before.f_ffree - 1);
  Write(f, 0, Pattern(10 * kBs, 1));
  const struct statvfs written = StatFs();
  EXPECT_EQ(written.f_bfree, before.f_bfree - 10);
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_EQ(StatFs().f_bfree, written.f_bfree) << "an open file keeps its blocks";
  fs_->Forget(f, 1);
  const struct statvfs after = StatFs();
  EXPECT_EQ(after.f_bfree, before.f_bfree);
  EXPECT_EQ(after.f_ffree, before.f_ffree);
  EXPECT_EQ(after.f_bavail, before.f_bavail);
}

TEST_F(FilesystemTest, StatFsAvailableBlocksFollowAllocations) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(10 * kBs, 1));
  const struct statvfs written = StatFs();
  EXPECT_LE(written.f_bavail, written.f_bfree);
  EXPECT_EQ(written.f_bavail, before.f_bavail - 10);
}

TEST_F(FilesystemTest, ForgetOfAnUnlinkedInodeFreesItsBlocksAndTheInode) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(40 * kBs, 1));
  ASSERT_TRUE(fs_->SetXattr(f, "user.x", "y", 0).ok());
  auto again = fs_->Lookup(root_, "f");  // a second kernel reference
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  fs_->Forget(f, 1);
  EXPECT_LT(StatFs().f_bfree, before.f_bfree) << "one reference is left";
  EXPECT_EQ(ReadAll(f).size(), 40 * kBs);
  fs_->Forget(f, 1);
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
  EXPECT_EQ(Err(fs_->GetAttr(f)), ESTALE);
  // Forgetting a linked inode only evicts it: it comes back from disk.
  const std::uint64_t g = Create(root_, "g");
  Write(g, 0, "stays");
  fs_->Forget(g, 1);
  EXPECT_TRUE(SameBytes(ReadAll(g), "stays"));
  EXPECT_EQ(Ino(root_, "g"), g);
}

TEST_F(FilesystemTest, RemovingADirectoryTreeGivesEverythingBack) {
  // Inode chunks stay allocated once made (docs/fs.md): the first round
  // makes them, the second must give back everything it takes.
  auto round = [&] {
    const std::uint64_t d = Mkdir(root_, "d");
    std::vector<std::uint64_t> inos;
    for (int i = 0; i < 400; ++i) {
      inos.push_back(Create(d, "f" + std::to_string(i)));
      if (i % 50 == 0) Write(inos.back(), 0, Pattern(3 * kBs, i));
    }
    for (int i = 0; i < 400; ++i) {
      ASSERT_TRUE(fs_->Unlink(d, "f" + std::to_string(i)).ok());
      fs_->Forget(inos[i], 1);
    }
    ASSERT_TRUE(fs_->Rmdir(root_, "d").ok());
    fs_->Forget(d, 1);
  };
  round();
  const struct statvfs before = StatFs();
  round();
  const struct statvfs after = StatFs();
  EXPECT_EQ(after.f_bfree, before.f_bfree);
  EXPECT_EQ(after.f_ffree, before.f_ffree);
}

// Fills an image with one file: 1 MiB writes until one is ENOSPC, then
// single blocks until one is (a write either reserves all it may need or
// fails whole, so the big ones stop with some space left).
void FillUntilENOSPC(Filesystem* fs, std::uint64_t f, const std::string& chunk) {
  std::uint64_t off = 0;
  for (std::size_t len : {chunk.size(), std::size_t{kBs}}) {
    int err = 0;
    for (int i = 0; i < 8192; ++i) {
      auto n = fs->Write(f, off, chunk.data(), len);
      if (!n.ok()) {
        err = Err(n);
        break;
      }
      off += *n;
    }
    EXPECT_EQ(err, ENOSPC);
  }
}

TEST_F(FilesystemTest, RunningOutOfSpaceIsENOSPCAndSpaceReturnsAfterUnlink) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const struct statvfs before = StatFs();
  const std::string chunk = Pattern(1 << 20, 5);
  const std::uint64_t f = Create(root_, "fill");
  FillUntilENOSPC(fs_.get(), f, chunk);
  // What is left for ordinary writes; a pool stays free for truncate and
  // unlink (Filesystem::kFreeingPool), so f_bfree stays higher.
  EXPECT_LT(StatFs().f_bavail, 16u);
  EXPECT_TRUE(SameBytes(Read(f, 0, 1 << 20), chunk)) << "what did get written reads back";
  // Other allocations fail cleanly too: a create (it may need a new inode
  // chunk) or else a write into the new file.
  auto g = fs_->Mknod(caller_, root_, "g", S_IFREG | 0644, 0);
  if (g.ok()) {
    const std::string big = Pattern(64 * kBs, 6);
    auto n = fs_->Write(g->st_ino, 0, big.data(), big.size());
    EXPECT_TRUE(!n.ok() && Err(n) == ENOSPC) << (n.ok() ? "wrote" : n.status().ToString());
  } else {
    EXPECT_EQ(Err(g), ENOSPC) << g.status().ToString();
  }
  // The full image is consistent.
  Unmount();
  ExpectFsckClean();
  Mount();
  EXPECT_TRUE(SameBytes(Read(f, 0, 1 << 20), chunk));
  Unmount();
  // Space comes back within one mount (and across a remount: the next spec).
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t f2 = Create(root_, "fill");
  FillUntilENOSPC(fs_.get(), f2, chunk);
  fs_->Forget(f2, 1);  // the create's reference
  UnlinkAndForget(root_, "fill");
  EXPECT_GE(StatFs().f_bfree + 2, before.f_bfree);
  const std::uint64_t h = Create(root_, "h");
  Write(h, 0, chunk);
  EXPECT_TRUE(SameBytes(Read(h, 0, chunk.size()), chunk));
}

TEST_F(FilesystemTest, SpaceFreedOnAMountThatStartedFullCanBeUsedAgain) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const struct statvfs before = StatFs();
  const std::string chunk = Pattern(1 << 20, 5);
  FillUntilENOSPC(fs_.get(), Create(root_, "fill"), chunk);
  Remount();
  UnlinkAndForget(root_, "fill");
  EXPECT_GE(StatFs().f_bfree + 2, before.f_bfree);
  auto st = fs_->Mknod(caller_, root_, "h", S_IFREG | 0644, 0);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  Write(st->st_ino, 0, chunk);
}

// POSIX: a write that runs out of space part way returns the bytes it
// wrote; the next one gets ENOSPC.
TEST_F(FilesystemTest, AWriteLargerThanTheFreeSpaceIsShortAndTheNextIsENOSPC) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t f = Create(root_, "fill");
  const std::string big = Pattern(32 << 20, 5);  // more than the device
  auto n = fs_->Write(f, 0, big.data(), big.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_GT(*n, 8u << 20) << "most of the free space was used";
  EXPECT_LT(*n, big.size());
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(*n)) << "the size covers exactly what was written";
  EXPECT_TRUE(SameBytes(Read(f, 0, *n), big.substr(0, *n)));
  auto again = fs_->Write(f, *n, big.data() + *n, big.size() - *n);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(Err(again), ENOSPC);
  Unmount();
  ExpectFsckClean();
  Mount();
  EXPECT_TRUE(SameBytes(Read(f, 0, *n), big.substr(0, *n)));
  UnlinkAndForget(root_, "fill");
}

// O_DIRECT through FUSE cannot be short (the kernel turns a short reply into
// EIO), so such a write is whole or ENOSPC, and gives back what it took.
TEST_F(FilesystemTest, AWholeWriteThatRunsOutOfSpaceIsENOSPCAndGivesBackTheBlocksItMapped) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::string chunk = Pattern(1 << 20, 5);
  const std::uint64_t fill = Create(root_, "fill");
  FillUntilENOSPC(fs_.get(), fill, chunk);
  Truncate(fill, Stat(fill).st_size - 64 * kBs);  // room for a quarter of a MiB
  const std::uint64_t g = Create(root_, "g");
  Write(g, 8 * kBs, "kept");  // a block already there, in the middle of what follows
  const std::uint64_t free_before = FreeBlocks();
  auto n = fs_->Write(g, 0, chunk.data(), chunk.size(), NoSpaceWrite::kWhole);
  ASSERT_FALSE(n.ok()) << "wrote " << *n;
  EXPECT_EQ(Err(n), ENOSPC);
  EXPECT_EQ(Stat(g).st_size, static_cast<off_t>(8 * kBs + 4)) << "the size did not move";
  EXPECT_EQ(Stat(g).st_blocks, 8) << "only the block that was there";
  EXPECT_EQ(FreeBlocks(), free_before) << "every block the write mapped went back";
  std::string model(8 * kBs + 4, '\0');
  model.replace(8 * kBs, 4, "kept");
  const std::string got = ReadAll(g);
  EXPECT_TRUE(SameBytes(got.substr(0, 8 * kBs), model.substr(0, 8 * kBs))) << "the holes are holes again";
  // What fits goes in whole; the same write allowed to be short fills the rest.
  Write(g, 0, chunk.substr(0, 16 * kBs));
  auto whole = fs_->Write(g, 16 * kBs, chunk.data(), 16 * kBs, NoSpaceWrite::kWhole);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(*whole, 16 * kBs);
  auto shorter = fs_->Write(g, 32 * kBs, chunk.data(), chunk.size(), NoSpaceWrite::kShort);
  ASSERT_TRUE(shorter.ok()) << shorter.status().ToString();
  EXPECT_GT(*shorter, 0u);
  EXPECT_LT(*shorter, chunk.size());
  Unmount();
  ExpectFsckClean();
  Mount();
  EXPECT_TRUE(SameBytes(Read(g, 0, 16 * kBs), chunk.substr(0, 16 * kBs)));
}

// Zeroing blocks a file has needs no free block (their map change may use
// the pool kept for freeing); a range over holes needs new ones, and a full
// filesystem refuses it before anything is zeroed: the data and the size
// stay as they were.
TEST_F(FilesystemTest, ZeroRangeOnAFullFilesystemWorksOverAllocatedBlocksAndIsACleanENOSPCOverHoles) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t f = Create(root_, "f");
  std::string model_f = Pattern(32 * kBs, 12);
  Write(f, 0, model_f);
  const std::uint64_t g = Create(root_, "g");
  std::string model_g(20 * kBs + 3, '\0');
  model_g.replace(0, kBs, Pattern(kBs, 13));
  model_g.replace(20 * kBs, 3, "end");
  Write(g, 0, model_g.substr(0, kBs));
  Write(g, 20 * kBs, "end");  // blocks 1-19 a hole
  FillUntilENOSPC(fs_.get(), Create(root_, "fill"), Pattern(1 << 20, 5));

  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 5 * kBs + 10, 10 * kBs).ok());
  model_f.replace(5 * kBs + 10, 10 * kBs, std::string(10 * kBs, '\0'));
  EXPECT_TRUE(SameBytes(ReadAll(f), model_f));
  EXPECT_EQ(Err(fs_->Fallocate(g, FALLOC_FL_ZERO_RANGE, 100, 15 * kBs)), ENOSPC);
  EXPECT_TRUE(SameBytes(ReadAll(g), model_g)) << "nothing zeroed";
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 40 * kBs, 64 * kBs)), ENOSPC);
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(32 * kBs)) << "the size did not move";
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model_f));
  EXPECT_TRUE(SameBytes(ReadAll(g), model_g));
}

// An editor's save-by-rename on a full disk (XFS: xfs_rename retries
// without a block reservation): a rename that needs no new block works;
// one whose directory would have to grow is ENOSPC and changes nothing.
TEST_F(FilesystemTest, OnAFullFilesystemARenameThatNeedsNoBlockWorksAndOneThatDoesIsENOSPC) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t doc = Create(root_, "doc");
  Write(doc, 0, "old");
  const std::uint64_t tmp = Create(root_, "doc.tmp");
  Write(tmp, 0, "new");
  // An inline directory (336 bytes of entries) with room for a 100-byte
  // name but not a 200-byte one: that one would make it a B+tree.
  const std::uint64_t tight = Mkdir(root_, "tight");
  Create(tight, std::string(200, 'a'));
  const std::string long_name(200, 'b');
  const std::uint64_t moving = Create(root_, long_name);
  FillUntilENOSPC(fs_.get(), Create(root_, "fill"), Pattern(1 << 20, 5));

  EXPECT_EQ(Err(fs_->Rename(root_, long_name, tight, long_name, 0)), ENOSPC);
  EXPECT_EQ(Ino(root_, long_name), moving);
  EXPECT_EQ(List(tight).size(), 3u) << "., .. and the 200-byte name";
  ASSERT_TRUE(fs_->Rename(root_, "doc.tmp", root_, "doc", 0).ok()) << "over an existing name";
  EXPECT_EQ(Ino(root_, "doc"), tmp);
  EXPECT_FALSE(Exists(root_, "doc.tmp"));
  fs_->Forget(doc, 1);  // the replaced file goes
  ASSERT_TRUE(fs_->Rename(root_, long_name, tight, std::string(100, 'c'), 0).ok()) << "where there is room";
  ASSERT_TRUE(fs_->Rename(root_, "doc", root_, "document", 0).ok()) << "in the same directory";
  ASSERT_TRUE(fs_->Rename(root_, "document", tight, std::string(100, 'c'), RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(tight, std::string(100, 'c')), tmp);
  EXPECT_EQ(Ino(root_, "document"), moving);
  EXPECT_TRUE(SameBytes(ReadAll(tmp), "new"));
  Remount();
  EXPECT_EQ(Ino(tight, std::string(100, 'c')), tmp);
  EXPECT_EQ(List(tight).size(), 4u);
}

// ================================================================ crashes

TEST_F(FilesystemTest, EverythingSurvivesACleanRemount) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t f = Create(d, "f");
  const std::string data = Pattern(100000, 3);
  Write(f, 0, data);
  ASSERT_TRUE(fs_->Symlink(caller_, d, "l", "target").ok());
  ASSERT_TRUE(fs_->SetXattr(f, "user.k", "v", 0).ok());
  Remount();
  EXPECT_EQ(Ino(root_, "d"), d);
  EXPECT_EQ(Ino(d, "f"), f);
  EXPECT_TRUE(SameBytes(ReadAll(f), data));
  EXPECT_EQ(*fs_->Readlink(Ino(d, "l")), "target");
  EXPECT_EQ(*fs_->GetXattr(f, "user.k"), "v");
}

TEST_F(FilesystemTest, ACrashAfterFsyncRecoversWhatWasSynced) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t f = Create(d, "f");
  const std::string data = Pattern(50000, 4);
  Write(f, 0, data);
  ASSERT_TRUE(fs_->Rename(d, "f", d, "renamed", 0).ok());
  for (int i = 0; i < 50; ++i) Create(d, "n" + std::to_string(i));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  ASSERT_TRUE(fs_->Fsync(d, false).ok());
  Crash();
  {
    auto r = CheckImage(dev_.get(), {.replay = false});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->log_dirty) << "the crash left the log to recover";
  }
  Mount();
  EXPECT_NE(fs_->Describe().find("recovered"), std::string::npos) << fs_->Describe();
  EXPECT_EQ(Ino(d, "renamed"), f);
  EXPECT_FALSE(Exists(d, "f"));
  EXPECT_TRUE(SameBytes(ReadAll(f), data));
  EXPECT_EQ(List(d).size(), 2u + 51u);
  // The recovered filesystem keeps working.
  Write(Create(d, "after"), 0, "ok");
}

// fsync semantics as XFS has them (docs/fs.md, "fsync").
std::uint64_t Pushes(Filesystem* fs) { return fs->log()->Stats().cil.pushes; }
std::uint64_t CoveredFlushes(Filesystem* fs) {
  const std::string text = fs->StatsText();
  const std::string key = "fsync_flushes_covered ";
  const std::size_t at = text.find(key);
  return at == std::string::npos ? ~0ull : std::stoull(text.substr(at + key.size()));
}

// docs/stats.md: a value that is not a count says its unit in its name.
TEST_F(FilesystemTest, StatsNameTheTailSpaceInBytes) {
  const std::string text = fs_->StatsText();
  EXPECT_NE(text.find("\ntail_space_bytes "), std::string::npos) << text;
  EXPECT_EQ(text.find("\ntail_space "), std::string::npos) << text;
}

TEST_F(FilesystemTest, AnFsyncWithNothingNewDoesNotForceTheLog) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(kBs, 1));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  ASSERT_TRUE(fs_->Fsync(f, true).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes);
  EXPECT_EQ(dev_->stats().flushes, flushes) << "no data written since: no flush either";
}

TEST_F(FilesystemTest, AnFsyncWhoseLogForceFlushedTheDeviceSkipsItsOwnDataFlush) {
  const std::uint64_t f = Create(root_, "f");
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  Write(f, 0, Pattern(4 * kBs, 2));  // new blocks: data in place, the mapping in the log
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  const std::uint64_t preflushes = dev_->stats().preflush_writes;
  const std::uint64_t covered = CoveredFlushes(fs_.get());
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1);
  EXPECT_GT(dev_->stats().preflush_writes, preflushes);
  EXPECT_EQ(dev_->stats().flushes, flushes) << "the commit record's preflush covered the data";
  EXPECT_EQ(CoveredFlushes(fs_.get()), covered + 1);
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(f), Pattern(4 * kBs, 2)));
}

TEST_F(FilesystemTest, AnFdatasyncAfterAnOverwriteInPlaceFlushesTheDataButDoesNotForceTheTimestamps) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(kBs, 3));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  // Past the coarse clock's tick, so the overwrite logs new timestamps.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  Write(f, 0, Pattern(kBs, 4));
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  ASSERT_TRUE(fs_->Fsync(f, /*datasync=*/true).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes) << "timestamps alone are not fdatasync's business";
  EXPECT_EQ(dev_->stats().flushes, flushes + 1) << "the data is";
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1) << "fsync forces them";
  EXPECT_EQ(dev_->stats().flushes, flushes + 1) << "and has no data left to flush";
  // Growing the file is not timestamps alone: fdatasync forces the size.
  Write(f, kBs, Pattern(10, 5));
  ASSERT_TRUE(fs_->Fsync(f, true).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 2);
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(f), Pattern(kBs, 4) + Pattern(10, 5)));
}

// Sync (.walfs/sync): everything, every inode; and fsync of a directory is it.
TEST_F(FilesystemTest, SyncMakesEveryChangeDurableAndFlushesOnlyWhenTheForceDidNot) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t f = Create(d, "f");
  Write(f, 0, Pattern(3 * kBs, 6));
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  ASSERT_TRUE(fs_->Sync().ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1);
  EXPECT_EQ(dev_->stats().flushes, flushes) << "the commit record's preflush covered the data";
  // Nothing new in the log: the force writes nothing, so the device is
  // flushed on its own (data written in place since would need it).
  ASSERT_TRUE(fs_->Sync().ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1);
  EXPECT_EQ(dev_->stats().flushes, flushes + 1);
  EXPECT_NE(fs_->StatsText().find("\nsyncs 2\n"), std::string::npos) << fs_->StatsText();
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(Ino(Ino(root_, "d"), "f")), Pattern(3 * kBs, 6)));
}

TEST_F(FilesystemTest, AnFsyncOfADirectoryForcesTheChangesOfEveryOtherInode) {
  const std::uint64_t other = Mkdir(root_, "other");
  ASSERT_TRUE(fs_->Fsync(other, false).ok());
  const std::uint64_t d = Mkdir(root_, "d");
  Write(Create(d, "f"), 0, Pattern(kBs, 7));
  ASSERT_TRUE(fs_->Fsync(other, /*datasync=*/true).ok());
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(Ino(Ino(root_, "d"), "f")), Pattern(kBs, 7)));
}

TEST_F(FilesystemTest, ACrashWithoutFsyncRecoversAConsistentImage) {
  for (int i = 0; i < 30; ++i) {
    const std::uint64_t f = Create(root_, "f" + std::to_string(i));
    Write(f, 0, Pattern(3 * kBs + i, i));
    if (i % 3 == 0) {
      ASSERT_TRUE(fs_->Unlink(root_, "f" + std::to_string(i)).ok());
    }
  }
  Crash();
  Mount();
  Unmount();
  ExpectFsckClean();
  Mount();
}

TEST_F(FilesystemTest, AnUnlinkedButReferencedInodeIsFreedByTheNextMount) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(20 * kBs, 1));
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_EQ(ReadAll(f).size(), 20 * kBs);  // still in use: Forget never comes
  Unmount();
  ExpectFsckClean();  // an inode on the unlinked list is not lost
  Mount();
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
  EXPECT_EQ(Err(fs_->GetAttr(f)), ESTALE);
}

TEST_F(FilesystemTest, UnlinkedInodesLeftByACrashAreFreedByRecovery) {
  const struct statvfs before = StatFs();
  std::vector<std::uint64_t> inos;
  for (int i = 0; i < 5; ++i) {
    inos.push_back(Create(root_, "f" + std::to_string(i)));
    Write(inos.back(), 0, Pattern((i + 1) * kBs, i));
  }
  const std::uint64_t d = Mkdir(root_, "d");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(fs_->Unlink(root_, "f" + std::to_string(i)).ok());
  ASSERT_TRUE(fs_->Rmdir(root_, "d").ok());
  for (std::uint64_t ino : inos) ASSERT_TRUE(fs_->Fsync(ino, false).ok());
  ASSERT_TRUE(fs_->Fsync(d, false).ok());
  Crash();
  Mount();
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
  for (std::uint64_t ino : inos) EXPECT_EQ(Err(fs_->GetAttr(ino)), ESTALE);
}

// ================================================================ concurrency

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
