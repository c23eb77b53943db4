// fsck.walfs end to end on real image files: what it does with a log a
// crash left behind, and the exit codes fsck(8) expects of it.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/block_device_file.h"
#include "fs/filesystem.h"
#include "fs/format/ag_format.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "journal/log.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "tests/tools/file_digest.h"
#include "tests/tools/tool_run.h"

namespace walfs {
namespace {

using testing::ToolRun;

ToolRun Sh(const std::string& cmd) { return testing::RunTool(cmd); }
std::string Fsck(const std::string& args) { return std::string(WALFS_FSCK) + " " + args; }


class FsckWalfs : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = ::testing::TempDir() + "fsck_walfs_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".img";
    std::filesystem::remove(image_);
    ToolRun made = Sh(std::string(WALFS_MKFS) + " -q " + image_ + " 64m");
    ASSERT_EQ(made.exit_code, 0) << made.out;
  }
  void TearDown() override { std::filesystem::remove(image_); }

  // Mounts the image in this process, makes a directory and a file in it,
  // fsyncs, and crashes (the Filesystem goes without Unmount): the log
  // holds committed transactions a mount or fsck must replay.
  void MountWriteAndCrash() {
    fs::MountOptions o;
    o.image = image_;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto dir = (*fs)->Mkdir({}, (*fs)->root(), "d", 0755);
    ASSERT_TRUE(dir.ok());
    auto file = (*fs)->Mknod({}, dir->st_ino, "f", S_IFREG | 0644, 0);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*fs)->Write(file->st_ino, 0, "data", 4).ok());
    ASSERT_TRUE((*fs)->Fsync(file->st_ino, false).ok());
    fs->reset();
  }
  // What a read-only mount says about the log ("clean log" or "log
  // recovered: ...").
  std::string MountSays() {
    fs::MountOptions o;
    o.image = image_;
    o.read_only = true;
    auto fs = fs::Filesystem::Mount(o);
    if (!fs.ok()) return fs.status().ToString();
    const std::string d = (*fs)->Describe();
    EXPECT_TRUE((*fs)->Unmount().ok());
    return d;
  }

  // Changes the image in place: change(superblock, device).
  template <typename F>
  void ChangeImage(F change) {
    auto dev = FileDevice::Open(image_, {});
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    std::vector<std::byte> b(fs::format::kSuperSize);
    ASSERT_TRUE((*dev)->Read(0, b.data(), b.size()).ok());
    auto sb = fs::format::DecodeSuperblock(b, (*dev)->size_bytes());
    ASSERT_TRUE(sb.ok());
    change(*sb, dev->get());
  }
  // One AG header's free-block count off by 5: a problem preen repairs.
  void BreakAgCounters() {
    ChangeImage([](const fs::format::Superblock& sb, BlockDevice* dev) {
      std::vector<std::byte> b(sb.block_size);
      ASSERT_TRUE(dev->Read(sb.AgStart(0) * sb.block_size, b.data(), b.size()).ok());
      auto h = fs::format::DecodeAgHeader(b, sb, 0);
      ASSERT_TRUE(h.ok());
      h->free_blocks -= 5;
      fs::format::EncodeAgHeader(*h, sb, b);
      ASSERT_TRUE(dev->Write(sb.AgStart(0) * sb.block_size, b.data(), b.size()).ok());
    });
  }
  // The root inode's bytes damaged (its CRC fails): a problem only a
  // person can decide about.
  void BreakRootInode() {
    ChangeImage([](const fs::format::Superblock& sb, BlockDevice* dev) {
      const std::uint64_t off = sb.root_ino / sb.inodes_per_block() * sb.block_size +
                                sb.root_ino % sb.inodes_per_block() * fs::format::kInodeSize;
      std::vector<std::byte> junk(16, std::byte{0xa5});
      ASSERT_TRUE(dev->Write(off + 40, junk.data(), junk.size()).ok());
    });
  }

  std::string image_;
};

// -L on an image whose log is clean has nothing to lose and leaves it.
TEST_F(FsckWalfs, ZeroingACleanLogDoesNothing) {
  const testing::FileDigest before = testing::DigestOfFile(image_);
  ToolRun r = Sh(Fsck("-L " + image_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("zeroed"), std::string::npos) << r.out;
  EXPECT_TRUE(testing::DigestOfFile(image_) == before) << "-L rewrote a clean log";
  EXPECT_EQ(Sh(Fsck("-n -L " + image_)).exit_code, 16);
}

// -L on a log recovery can replay recovers it: nothing is thrown away.
TEST_F(FsckWalfs, ZeroingALogThatCanBeReplayedReplaysItInstead) {
  MountWriteAndCrash();
  ToolRun r = Sh(Fsck("-L " + image_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("replayed the log"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("zeroed"), std::string::npos) << r.out;
  fs::MountOptions o;
  o.image = image_;
  o.read_only = true;
  auto fs = fs::Filesystem::Mount(o);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_TRUE((*fs)->Lookup((*fs)->root(), "d").ok());
  ASSERT_TRUE((*fs)->Unmount().ok());
}

// The exit codes fsck(8) gives meaning to, one case each: 0 clean, 1 all
// repaired, 4 problems left, 8 the check could not run, 16 a usage error.
TEST_F(FsckWalfs, ProgressInALogIsOneLinePerPhaseWithNoCarriageReturns) {
  ToolRun r = Sh("{ " + Fsck("-C -n " + image_) + " 2>&1 >/dev/null; }");  // stderr, not a terminal
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  EXPECT_EQ(r.out,
            "  Phase 1/6: log\n  Phase 2/6: allocation groups and inodes\n  Phase 3/6: block ownership\n"
            "  Phase 4/6: directory tree\n  Phase 5/6: unlinked lists\n  Phase 6/6: counters\n");
  EXPECT_EQ(Sh(Fsck("-n " + image_) + " 2>&1 | grep -c 'Phase [0-9]/'").out, "0\n") << "only with -C";
}

TEST_F(FsckWalfs, ExitCodesAreFsck8s) {
  EXPECT_EQ(Sh(Fsck("-n " + image_)).exit_code, 0);
  EXPECT_EQ(Sh(Fsck(image_)).exit_code, 0);
  EXPECT_EQ(Sh(Fsck("-y " + image_)).exit_code, 0);
  // A usage error: 16 (not 8), one line saying where to look.
  for (const std::string& args : {"-q " + image_, std::string(""), "-n -y " + image_, "-n -p " + image_,
                                 "-y -a " + image_, image_ + " extra"}) {
    ToolRun r = Sh("{ " + Fsck(args) + " 2>&1 >/dev/null; }");  // stderr only
    EXPECT_EQ(r.exit_code, 16) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
    EXPECT_NE(r.out.find("see fsck.walfs --help"), std::string::npos) << args << ": " << r.out;
  }
  // The check cannot run: 8.
  EXPECT_EQ(Sh(Fsck(image_ + ".missing")).exit_code, 8);
  ASSERT_EQ(Sh("truncate -s 8m " + image_ + ".zeros").exit_code, 0);
  ToolRun zeros = Sh(Fsck(image_ + ".zeros"));
  std::filesystem::remove(image_ + ".zeros");
  EXPECT_EQ(zeros.exit_code, 8) << zeros.out;
  {
    auto held = FileDevice::Open(image_, {.exclusive = true});  // as a running daemon holds it
    ASSERT_TRUE(held.ok());
    EXPECT_EQ(Sh(Fsck("-n " + image_)).exit_code, 8);
  }
  // Problems found: 4 when left, 1 when all repaired (-y, -p, -a alike).
  BreakAgCounters();
  EXPECT_EQ(Sh(Fsck("-n " + image_)).exit_code, 4);
  EXPECT_EQ(Sh(Fsck(image_)).exit_code, 4);
  ToolRun y = Sh(Fsck("-y " + image_));
  EXPECT_EQ(y.exit_code, 1) << y.out;
  EXPECT_NE(y.out.find("[repaired]"), std::string::npos) << y.out;
  EXPECT_EQ(Sh(Fsck("-n " + image_)).exit_code, 0);
  BreakAgCounters();
  EXPECT_EQ(Sh(Fsck("-f -p " + image_)).exit_code, 1);
  BreakAgCounters();
  EXPECT_EQ(Sh(Fsck("-f -a " + image_)).exit_code, 1);
  EXPECT_EQ(Sh(Fsck("-n " + image_)).exit_code, 0);
}

// Preen (-p, -a) repairs what is safe and stops at what a person must
// decide (exit 4, saying so); an image marked clean is not checked unless -f,
// as e2fsck -p does at boot.
TEST_F(FsckWalfs, PreenRepairsWhatIsSafeAndLeavesTheRestToAPerson) {
  ToolRun clean = Sh(Fsck("-p " + image_));
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  EXPECT_NE(clean.out.find("clean, 1/64 inodes"), std::string::npos) << clean.out;
  EXPECT_NE(clean.out.find("not checked"), std::string::npos) << clean.out;
  BreakRootInode();
  ToolRun skipped = Sh(Fsck("-a " + image_));
  EXPECT_EQ(skipped.exit_code, 0) << "a clean image is not checked by preen: " << skipped.out;
  ToolRun forced = Sh(Fsck("-f -p " + image_));
  EXPECT_EQ(forced.exit_code, 4) << forced.out;
  EXPECT_NE(forced.out.find("a person must decide"), std::string::npos) << forced.out;
}

// After a crash the image is not marked clean: preen checks it, recovering
// the log first.
TEST_F(FsckWalfs, PreenAfterACrashRecoversTheLogAndChecks) {
  MountWriteAndCrash();
  ToolRun r = Sh(Fsck("-p " + image_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("replayed the log"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": clean"), std::string::npos) << r.out;
  EXPECT_NE(MountSays().find("clean log"), std::string::npos);
}

// fsck(8) finds fsck.walfs on PATH and passes -a and the image through;
// its exit code is fsck.walfs's.
TEST_F(FsckWalfs, Fsck8RunsItForTypeWalfs) {
  if (Sh("command -v fsck").exit_code != 0) GTEST_SKIP() << "fsck(8) is not installed";
  const std::string bin = std::filesystem::path(WALFS_FSCK).parent_path();
  const std::string abs = std::filesystem::absolute(image_);
  const std::string fsck8 = "PATH=" + bin + ":$PATH fsck -t walfs ";
  ToolRun clean = Sh(fsck8 + "-a " + abs);
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  EXPECT_NE(clean.out.find(abs + ": clean"), std::string::npos) << clean.out;
  BreakAgCounters();
  ToolRun fixed = Sh(fsck8 + "-f -a " + abs);
  EXPECT_EQ(fixed.exit_code, 1) << fixed.out;
  EXPECT_NE(fixed.out.find("[repaired]"), std::string::npos) << fixed.out;
  EXPECT_EQ(Sh(fsck8 + "-n " + abs).exit_code, 0);
}

TEST_F(FsckWalfs, CheckOnlySaysTheLogNeedsReplayAndChecksTheImageAsItWouldLeaveIt) {
  MountWriteAndCrash();
  const testing::FileDigest before = testing::DigestOfFile(image_);
  ToolRun n = Sh(Fsck("-n " + image_));
  EXPECT_EQ(n.exit_code, 4) << n.out;
  EXPECT_NE(n.out.find("the log holds "), std::string::npos) << n.out;
  EXPECT_NE(n.out.find(" committed transactions not yet replayed; run fsck.walfs without -n or mount it"),
            std::string::npos)
      << n.out;
  // The root, d and d/f: not the "0 inodes in use" of an unreplayed image.
  EXPECT_NE(n.out.find("3 inodes in use (2 directories)"), std::string::npos) << n.out;
  EXPECT_NE(n.out.find("1 problem(s), 0 repaired, 1 left"), std::string::npos) << n.out;
  EXPECT_TRUE(testing::DigestOfFile(image_) == before) << "fsck -n changed the image";
  EXPECT_NE(MountSays().find("log recovered"), std::string::npos) << "the log is still to replay";
}

TEST_F(FsckWalfs, AReplayLeavesTheLogCleanSoCheckOnlyAndTheNextMountFindNothingToDo) {
  MountWriteAndCrash();
  ToolRun fix = Sh(Fsck(image_));
  EXPECT_EQ(fix.exit_code, 0) << fix.out;
  EXPECT_NE(fix.out.find("replayed the log"), std::string::npos) << fix.out;
  EXPECT_NE(fix.out.find(": clean"), std::string::npos) << fix.out;
  ToolRun n = Sh(Fsck("-n -v " + image_));
  EXPECT_EQ(n.exit_code, 0) << n.out;
  EXPECT_NE(n.out.find(": clean"), std::string::npos) << n.out;
  EXPECT_NE(n.out.find("3 inodes in use"), std::string::npos) << n.out;
  const std::string says = MountSays();
  EXPECT_NE(says.find("clean log"), std::string::npos) << says;
}

// A damaged record in the middle of the log makes recovery refuse the
// image; -L says what is lost, zeroes the log and checks.  The zeroed log
// starts past the old cycles, so a later crash still recovers: changes to
// blocks the old log stamped are replayed, not skipped as "already on disk".
TEST_F(FsckWalfs, ZeroingADamagedLogSaysWhatIsLostAndLaterCrashesStillRecover) {
  {
    // First a clean mount that moves the log well past its start and writes
    // everything back: the root directory's and AG 0's blocks carry LSNs of
    // that log, far past sector 0 of its cycle.
    fs::MountOptions o;
    o.image = image_;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    for (int i = 0; i < 100; ++i) {
      auto f = (*fs)->Mknod({}, (*fs)->root(), "early" + std::to_string(i), S_IFREG | 0644, 0);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE((*fs)->Fsync(f->st_ino, false).ok());
    }
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  {
    fs::MountOptions o;
    o.image = image_;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    for (int i = 0; i < 5; ++i) {
      auto f = (*fs)->Mknod({}, (*fs)->root(), "f" + std::to_string(i), S_IFREG | 0644, 0);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE((*fs)->Fsync(f->st_ino, false).ok());
    }
    fs->reset();  // a crash
  }
  ChangeImage([](const fs::format::Superblock& sb, BlockDevice* dev) {
    const journal::LogRegion region{dev, sb.log_offset(), sb.log_sectors()};
    auto pos = journal::FindLogPosition(region, journal::RecoveryWindowSectors(region.sectors));
    ASSERT_TRUE(pos.ok());
    ASSERT_NE(journal::SectorOf(pos->tail), journal::SectorOf(pos->last_record)) << "one record only";
    // One flipped byte in the oldest record's payload: its CRC fails.
    auto rec = journal::ReadRecordAt(region, journal::SectorOf(pos->tail), journal::CycleOf(pos->tail));
    ASSERT_TRUE(rec.ok());
    ASSERT_GT(rec->record.payload.size(), 8u);
    const std::uint64_t at = sb.log_offset() + std::uint64_t{journal::SectorOf(pos->tail)} * journal::kLogSectorSize +
                             (rec->sectors > 1 ? journal::kLogSectorSize + 8 : journal::kRecordHeaderFixedSize + 4);
    std::byte b;
    ASSERT_TRUE(dev->Read(at, &b, 1).ok());
    b ^= std::byte{0x40};
    ASSERT_TRUE(dev->Write(at, &b, 1).ok());
  });
  ToolRun n = Sh(Fsck("-n " + image_));
  EXPECT_EQ(n.exit_code, 4) << n.out;
  EXPECT_NE(n.out.find(": log: "), std::string::npos) << n.out;
  EXPECT_NE(n.out.find("run fsck.walfs -L to zero it"), std::string::npos) << "the way out is named: " << n.out;
  // -y and -p refuse the log before writing anything, in one line naming
  // the way out (issue 24: -y removed entries first, then named -L).
  for (const char* repair : {"-y ", "-p "}) {
    ToolRun y = Sh(Fsck(repair + image_));
    EXPECT_EQ(y.exit_code, 4) << repair << y.out;
    EXPECT_NE(y.out.find("the log cannot be replayed"), std::string::npos) << y.out;
    EXPECT_NE(y.out.find("mount with -o ro,norecovery to copy data out first, then run fsck.walfs -L"),
              std::string::npos)
        << y.out;
    EXPECT_EQ(std::count(y.out.begin(), y.out.end(), '\n'), 1) << "one line: " << y.out;
  }
  const std::string refused = MountSays();
  EXPECT_EQ(refused.find("mounted"), std::string::npos) << "the damaged log was not refused";
  EXPECT_NE(refused.find("-o norecovery"), std::string::npos) << "the way out is named: " << refused;
  EXPECT_NE(refused.find("fsck.walfs -L"), std::string::npos) << "the way out is named: " << refused;
  {
    // norecovery mounts it whatever the log holds, read-only, as it was
    // last written back: the first mount's files are there, the log is
    // left as it was (fsck -n still finds it damaged).
    fs::MountOptions o;
    o.image = image_;
    o.norecovery = true;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    EXPECT_NE((*fs)->Describe().find("log not replayed (norecovery)"), std::string::npos) << (*fs)->Describe();
    EXPECT_TRUE((*fs)->Lookup((*fs)->root(), "early99").ok());
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  EXPECT_EQ(Sh(Fsck("-n " + image_)).exit_code, 4) << "the norecovery mount changed the log";
  ToolRun zero = Sh(Fsck("-L " + image_));
  EXPECT_TRUE(zero.exit_code == 1 || zero.exit_code == 4) << zero.out;
  EXPECT_NE(zero.out.find("log zeroed (-L): "), std::string::npos) << zero.out;
  EXPECT_NE(zero.out.find("committed transactions in"), std::string::npos) << zero.out;
  EXPECT_NE(zero.out.find("are lost [repaired]"), std::string::npos) << zero.out;
  ToolRun after = Sh(Fsck("-n " + image_));
  EXPECT_EQ(after.out.find(": log: "), std::string::npos) << after.out;
  // Mounted again: a change, a crash, and recovery must bring it back.
  {
    fs::MountOptions o;
    o.image = image_;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto f = (*fs)->Mknod({}, (*fs)->root(), "after", S_IFREG | 0644, 0);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*fs)->Fsync(f->st_ino, false).ok());
    fs->reset();
  }
  fs::MountOptions o;
  o.image = image_;
  o.read_only = true;
  auto fs = fs::Filesystem::Mount(o);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_NE((*fs)->Describe().find("log recovered"), std::string::npos) << (*fs)->Describe();
  EXPECT_TRUE((*fs)->Lookup((*fs)->root(), "after").ok()) << "the change after -L was not recovered";
  ASSERT_TRUE((*fs)->Unmount().ok());
}

}  // namespace
}  // namespace walfs
