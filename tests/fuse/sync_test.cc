// Durability without sync(2): the kernel never sends sync(2) or syncfs(2) to
// a FUSE daemon, so walfs offers `walfs sync MNT` (a write to
// MNT/.walfs/sync) and makes an fsync of any directory force everything.
// After either returns, a SIGKILLed daemon loses nothing: every change made
// before is there at the next mount.  The suites mount with commit=86400 so
// that the timed push cannot be what saved the changes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "mount/sync_client.h"
#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace sync_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr char kNoTimer[] = "commit=86400";

std::string Data(std::size_t len, int seed) {
  std::string s(len, '\0');
  for (std::size_t i = 0; i < len; ++i) s[i] = static_cast<char>(i * 13 + seed + (i >> 10));
  return s;
}

class Sync : public MountedFs {
 public:
  static void SetUpTestSuite() { MountSuite({.image_size = "256m", .options = {kNoTimer}}); }

 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }

  std::string WalfsSync(const std::string& args) { return BinDir() + "/walfs sync " + args; }

  // Files the changes below rename and unlink, made durable by a clean
  // remount first.
  void MakeOldFiles() {
    WriteFile(Path("old"), "renamed after the remount");
    WriteFile(Path("gone"), "unlinked after the remount");
    ASSERT_NO_FATAL_FAILURE(Remount());
  }
  // A directory, a file with data, a rename and an unlink, none fsynced.
  void MakeChanges(const std::string& data) {
    ASSERT_SYS(mkdir(Path("d").c_str(), 0750));
    WriteFile(Path("d/f"), data);
    ASSERT_SYS(rename(Path("old").c_str(), Path("d/new").c_str()));
    ASSERT_SYS(unlink(Path("gone").c_str()));
  }
  void ExpectChanges(const std::string& data) {
    struct stat st {};
    ASSERT_SYS(stat(Path("d").c_str(), &st)) << "the directory was lost";
    EXPECT_EQ(st.st_mode, S_IFDIR | 0750u);
    const std::string got = ReadFile(Path("d/f"));
    EXPECT_EQ(got.size(), data.size()) << "d/f";
    EXPECT_TRUE(got == data) << "d/f's bytes differ";
    EXPECT_EQ(ReadFile(Path("d/new")), "renamed after the remount");
    EXPECT_ERRNO(ENOENT, lstat(Path("old").c_str(), &st)) << "the rename's old name is back";
    EXPECT_ERRNO(ENOENT, lstat(Path("gone").c_str(), &st)) << "the unlinked file is back";
  }
  void KillAndMountAgain() {
    KillDaemon();
    ASSERT_NO_FATAL_FAILURE(MountAgain());
  }
  // Every change, then an fsync or fdatasync of a directory they did not
  // touch (opened before them, so it is not newer than they are), then a
  // SIGKILL.
  void DirectorySyncKeepsEverything(int (*sync_call)(int)) {
    ASSERT_SYS(mkdir(Path("other").c_str(), 0755));
    ASSERT_NO_FATAL_FAILURE(MakeOldFiles());
    const int dfd = open(Path("other").c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_SYS(dfd);
    // Its own last change, forced alone: the changes below come after it,
    // in a later checkpoint, so forcing the log only up to the directory's
    // last change would leave them out.
    ASSERT_SYS(fchmod(dfd, 0700));
    ASSERT_SYS(sync_call(dfd));
    const std::string data = Data(300000, 3);
    MakeChanges(data);
    const int rc = sync_call(dfd);
    const int err = errno;
    close(dfd);
    ASSERT_EQ(rc, 0) << strerrorname_np(err);
    ASSERT_NO_FATAL_FAILURE(KillAndMountAgain());
    ExpectChanges(data);
    ASSERT_NO_FATAL_FAILURE(Remount());  // and fsck -n is clean
  }
};

TEST_F(Sync, AfterWalfsSyncAKilledDaemonLosesNoChange) {
  ASSERT_NO_FATAL_FAILURE(MakeOldFiles());
  const std::string data = Data(300000, 1);
  MakeChanges(data);
  const ToolRun r = RunTool(WalfsSync(Root()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  ASSERT_NO_FATAL_FAILURE(KillAndMountAgain());
  ExpectChanges(data);
  ASSERT_NO_FATAL_FAILURE(Remount());
}

TEST_F(Sync, WalfsSyncOfAnyPathInTheMountSyncsTheWholeMount) {
  ASSERT_NO_FATAL_FAILURE(MakeOldFiles());
  const std::string data = Data(5000, 2);
  MakeChanges(data);
  // A file of the mount, not its root.
  const ToolRun r = RunTool(WalfsSync(Path("d/new")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_NO_FATAL_FAILURE(KillAndMountAgain());
  ExpectChanges(data);
}

TEST_F(Sync, AnFsyncOfAnUnrelatedDirectoryMakesEveryEarlierChangeSurviveAKill) {
  DirectorySyncKeepsEverything(fsync);
}

TEST_F(Sync, AnFdatasyncOfAnUnrelatedDirectoryMakesEveryEarlierChangeSurviveAKill) {
  DirectorySyncKeepsEverything(fdatasync);
}

TEST_F(Sync, WritingTheSyncFileReturnsOnceDurableAndReadingItCountsSyncs) {
  const std::string ctl = Root() + "/.walfs/sync";
  const std::string before = ReadFile(ctl);
  EXPECT_NE(before.find("sync(2) and syncfs(2) never reach a FUSE daemon"), std::string::npos) << before;
  const long long syncs = StatIn(before, "syncs");
  ASSERT_GE(syncs, 0) << before;
  const long long fs_syncs = StatValue(Root(), "syncs");
  WriteFile(Path("f"), "synced through the control file");
  PutControl(Root(), "sync", "1");
  const std::string after = ReadFile(ctl);
  EXPECT_EQ(StatIn(after, "syncs"), syncs + 1) << after;
  EXPECT_EQ(after.find("last_sync never"), std::string::npos) << after;
  EXPECT_EQ(StatValue(Root(), "syncs"), fs_syncs + 1) << "the filesystem's count in .walfs/stats";
  ASSERT_NO_FATAL_FAILURE(KillAndMountAgain());
  EXPECT_EQ(ReadFile(Path("f")), "synced through the control file");
}

TEST_F(Sync, WalfsSyncOfADirectoryNotOnWalfsFailsSayingSo) {
  char dir[] = "/tmp/walfs-sync-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const ToolRun r = RunTool(WalfsSync(dir));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(std::string("walfs sync: ") + dir + " is not on a walfs mount (it is "), std::string::npos)
      << r.out;
  const ToolRun missing = RunTool(WalfsSync(std::string(dir) + "/nothing"));
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("No such file or directory"), std::string::npos) << missing.out;
  // One bad path fails the command, the others are still synced.
  const ToolRun mixed = RunTool(WalfsSync(std::string(dir) + " " + Root()));
  EXPECT_EQ(mixed.exit_code, 1) << mixed.out;
  EXPECT_EQ(StatIn(ReadFile(Root() + "/.walfs/sync"), "failed"), 0);
  rmdir(dir);
}

TEST_F(Sync, WalfsSyncOfAReadOnlyMountHasNothingToDoAndSucceeds) {
  WriteFile(Path("f"), "x");
  ASSERT_NO_FATAL_FAILURE(Remount({"ro"}));
  const ToolRun r = RunTool(WalfsSync(Root()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  ASSERT_NO_FATAL_FAILURE(Remount());
}

TEST_F(Sync, WalfsSyncWithoutAPathOrWithAnUnknownOptionIsAUsageError) {
  const ToolRun none = RunTool(BinDir() + "/walfs sync");
  EXPECT_EQ(none.exit_code, 2) << none.out;
  EXPECT_NE(none.out.find("usage: walfs sync PATH..."), std::string::npos) << none.out;
  const ToolRun bad = RunTool(WalfsSync("--bogus " + Root()));
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("unknown option --bogus"), std::string::npos) << bad.out;
  const ToolRun help = RunTool(WalfsSync("--help"));
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("sync(2) and syncfs(2) never reach a FUSE daemon"), std::string::npos) << help.out;
  const ToolRun mount_help = RunTool(BinDir() + "/walfs --help");
  EXPECT_NE(mount_help.out.find("sync PATH..."), std::string::npos) << mount_help.out;
}

TEST_F(Sync, FsSyncerSyncsWalfsThroughItsControlFileAndOtherFilesystemsBySyncfs) {
  const int fd = open(Path("").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_SYS(fd);
  Result<mount::FsSyncer> on_walfs = mount::FsSyncer::Open(fd);
  ASSERT_TRUE(on_walfs.ok()) << on_walfs.status().ToString();
  EXPECT_TRUE(on_walfs->walfs());
  EXPECT_EQ(on_walfs->mountpoint(), Root());
  const long long syncs = StatIn(ReadFile(Root() + "/.walfs/sync"), "syncs");
  EXPECT_TRUE(on_walfs->Sync().ok());
  EXPECT_EQ(StatIn(ReadFile(Root() + "/.walfs/sync"), "syncs"), syncs + 1);
  close(fd);
  const int tmp = open("/tmp", O_RDONLY | O_DIRECTORY);
  ASSERT_SYS(tmp);
  Result<mount::FsSyncer> elsewhere = mount::FsSyncer::Open(tmp);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status().ToString();
  EXPECT_FALSE(elsewhere->walfs());
  EXPECT_TRUE(elsewhere->Sync().ok());
  EXPECT_EQ(mount::FsSyncer::OpenWalfs(tmp, "/tmp").status().code(), StatusCode::kNotFound);
  close(tmp);
}

TEST_F(Sync, WalfsAimSyncsReachTheDaemon) {
  const long long syncs = StatIn(ReadFile(Root() + "/.walfs/sync"), "syncs");
  const ToolRun r = RunTool(BinDir() + "/walfs-aim " + Path("") + " -s 1 -e 1 -j 10 --filesize 4K --poolsize 16K --sync");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("syncs (between levels and in the jobs) by " + Root() + "/.walfs/sync"), std::string::npos)
      << r.out;
  // Between the levels, and where re-aim's disk tests call sync.
  EXPECT_GT(StatIn(ReadFile(Root() + "/.walfs/sync"), "syncs"), syncs + 1);
}

// With the kernel's writeback cache, written data reaches the daemon when the
// kernel writes it back -- at the latest when the file is closed (FUSE's
// flush waits for it) -- and walfs sync makes what arrived durable.  Pages
// of a file still open are sent by walfs sync's syncfs, but the kernel does
// not wait for the daemon to have received them (FUSE writeback is
// asynchronous to sync), so only closed files are specified here.
class SyncWritebackCache : public Sync {
 public:
  static void SetUpTestSuite() {
    MountSuite({.image_size = "256m", .options = {kNoTimer, "writeback_cache"}});
  }
};

TEST_F(SyncWritebackCache, AfterWalfsSyncAKilledDaemonLosesNoWriteOfAClosedFile) {
  const std::string data = Data(1 << 20, 4);
  const int fd = open(Path("cached").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  for (std::size_t off = 0; off < data.size(); off += 1000) {
    const std::size_t n = std::min<std::size_t>(1000, data.size() - off);
    ASSERT_EQ(write(fd, data.data() + off, n), static_cast<ssize_t>(n));
  }
  ASSERT_SYS(close(fd));
  const ToolRun r = RunTool(WalfsSync(Root()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  KillDaemon();
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  const std::string got = ReadFile(Path("cached"));
  EXPECT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data) << "the bytes differ";
}

}  // namespace
}  // namespace sync_test
}  // namespace walfs::testing
