// walfs-admin end to end on real image files: label and UUID shown and
// changed as xfs_admin does, the image still clean for fsck.walfs -n and
// mountable afterwards, and every refusal one line that changes nothing.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_file.h"
#include "fs/filesystem.h"
#include "fs/format/superblock_format.h"
#include "fs/super.h"
#include "tests/tools/file_digest.h"
#include "tests/tools/tool_run.h"

namespace walfs {
namespace {

using fs::format::Superblock;
using fs::format::UuidString;
using testing::ToolRun;

ToolRun Sh(const std::string& cmd) { return testing::RunTool(cmd); }
std::string Admin(const std::string& args) { return std::string(WALFS_ADMIN) + " " + args; }
std::string Fsck(const std::string& args) { return std::string(WALFS_FSCK) + " " + args; }


int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class WalfsAdmin : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = ::testing::TempDir() + "walfs_admin_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".img";
    std::filesystem::remove(image_);
    ToolRun made = Sh(std::string(WALFS_MKFS) + " -q -L data " + image_ + " 64m");
    ASSERT_EQ(made.exit_code, 0) << made.out;
  }
  void TearDown() override { std::filesystem::remove(image_); }

  Superblock Super() {
    auto dev = FileDevice::Open(image_, {});
    EXPECT_TRUE(dev.ok()) << dev.status().ToString();
    if (!dev.ok()) return {};
    auto sb = fs::ReadSuperblock(dev->get());
    EXPECT_TRUE(sb.ok()) << sb.status().ToString();
    return sb.ok() ? *sb : Superblock{};
  }

  // fsck.walfs -n finds nothing, and the image mounts, takes a change that
  // writes new metadata blocks (a directory), and unmounts cleanly; fsck
  // -n finds nothing again.
  void ExpectCleanAndMountable() {
    ToolRun checked = Sh(Fsck("-n " + image_));
    EXPECT_EQ(checked.exit_code, 0) << checked.out;
    EXPECT_NE(checked.out.find(image_ + ": clean"), std::string::npos) << checked.out;
    {
      fs::MountOptions o;
      o.image = image_;
      auto fs = fs::Filesystem::Mount(o);
      ASSERT_TRUE(fs.ok()) << fs.status().ToString();
      const std::string name = "d" + std::to_string(mounts_++);
      ASSERT_TRUE((*fs)->Mkdir({}, (*fs)->root(), name, 0755).ok());
      ASSERT_TRUE((*fs)->Unmount().ok());
    }
    checked = Sh(Fsck("-n " + image_));
    EXPECT_EQ(checked.exit_code, 0) << checked.out;
  }

  // Mounts in this process, makes a file, fsyncs and drops the Filesystem
  // without unmounting: the log holds a transaction still to be replayed.
  void MountWriteAndCrash() {
    fs::MountOptions o;
    o.image = image_;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto file = (*fs)->Mknod({}, (*fs)->root(), "f", S_IFREG | 0644, 0);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*fs)->Fsync(file->st_ino, false).ok());
    fs->reset();
  }

  std::string image_;
  int mounts_ = 0;
};

TEST_F(WalfsAdmin, PrintsTheLabelAndUuidAsXfsAdminDoes) {
  ToolRun l = Sh(Admin("-l " + image_));
  EXPECT_EQ(l.exit_code, 0) << l.out;
  EXPECT_EQ(l.out, "label = \"data\"\n");
  ToolRun u = Sh(Admin("-u " + image_));
  EXPECT_EQ(u.exit_code, 0) << u.out;
  EXPECT_EQ(u.out, "UUID = " + UuidString(Super().uuid) + "\n");
}

TEST_F(WalfsAdmin, SetsAndClearsTheLabel) {
  ToolRun set = Sh(Admin("-L 'backup 2026' " + image_));
  EXPECT_EQ(set.exit_code, 0) << set.out;
  EXPECT_EQ(set.out, "new label = \"backup 2026\"\n");
  EXPECT_EQ(Super().label, "backup 2026");
  EXPECT_EQ(Sh(Admin("-l " + image_)).out, "label = \"backup 2026\"\n");
  ExpectCleanAndMountable();
  const std::string longest(fs::format::kLabelSize, 'x');
  EXPECT_EQ(Sh(Admin("-L " + longest + " " + image_)).exit_code, 0);
  EXPECT_EQ(Super().label, longest);
  // xfs_admin's -L -- clears it; so does an empty label.
  ToolRun cleared = Sh(Admin("-L -- " + image_));
  EXPECT_EQ(cleared.exit_code, 0) << cleared.out;
  EXPECT_EQ(cleared.out, "new label = \"\"\n");
  EXPECT_EQ(Super().label, "");
  EXPECT_EQ(Sh(Admin("-L x " + image_)).exit_code, 0);
  EXPECT_EQ(Sh(Admin("-L '' " + image_)).exit_code, 0);
  EXPECT_EQ(Super().label, "");
  ExpectCleanAndMountable();
}

// The metadata blocks keep the UUID they were made with (meta_uuid, as on
// XFS v5): the image is as clean and mountable as before, and blocks
// written after the change carry the same UUID as the old ones.
TEST_F(WalfsAdmin, SetsAnExplicitUuidAndTheImageStaysCleanAndMountable) {
  const Superblock before = Super();
  const std::string uuid = "01234567-89ab-cdef-0123-456789abcdef";
  ToolRun set = Sh(Admin("-U " + uuid + " " + image_));
  EXPECT_EQ(set.exit_code, 0) << set.out;
  EXPECT_EQ(set.out, "new UUID = " + uuid + "\n");
  const Superblock after = Super();
  EXPECT_EQ(UuidString(after.uuid), uuid);
  EXPECT_TRUE(after.incompat & fs::format::kIncompatMetaUuid);
  EXPECT_EQ(after.metadata_uuid(), before.uuid);
  EXPECT_EQ(after.label, "data");
  EXPECT_EQ(Sh(Admin("-u " + image_)).out, "UUID = " + uuid + "\n");
  ExpectCleanAndMountable();
  // Upper case is the same UUID; changing it again keeps the blocks' UUID.
  EXPECT_EQ(Sh(Admin("-U FEDCBA98-7654-3210-FEDC-BA9876543210 " + image_)).exit_code, 0);
  EXPECT_EQ(UuidString(Super().uuid), "fedcba98-7654-3210-fedc-ba9876543210");
  EXPECT_EQ(Super().metadata_uuid(), before.uuid);
  ExpectCleanAndMountable();
  // Back to the UUID the blocks carry: meta_uuid is no longer needed.
  EXPECT_EQ(Sh(Admin("-U " + UuidString(before.uuid) + " " + image_)).exit_code, 0);
  EXPECT_EQ(Super().uuid, before.uuid);
  EXPECT_FALSE(Super().incompat & fs::format::kIncompatMetaUuid);
  ExpectCleanAndMountable();
}

TEST_F(WalfsAdmin, GenerateMakesANewRandomUuid) {
  const Superblock before = Super();
  ToolRun first = Sh(Admin("-U generate " + image_));
  EXPECT_EQ(first.exit_code, 0) << first.out;
  const Superblock one = Super();
  EXPECT_EQ(first.out, "new UUID = " + UuidString(one.uuid) + "\n");
  EXPECT_NE(one.uuid, before.uuid);
  EXPECT_EQ(Sh(Admin("-U generate " + image_)).exit_code, 0);
  EXPECT_NE(Super().uuid, one.uuid);
  EXPECT_EQ(Super().metadata_uuid(), before.uuid);
  ExpectCleanAndMountable();
}

// Several flags in one call run in the order given; what is printed comes
// once the superblock is written.
TEST_F(WalfsAdmin, CombinedFlagsRunInTheOrderGiven) {
  const std::string old_uuid = UuidString(Super().uuid);
  const std::string uuid = "00000000-0000-0000-0000-000000000001";
  ToolRun r = Sh(Admin("-l -u -L home -U " + uuid + " -l -u " + image_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "label = \"data\"\nUUID = " + old_uuid + "\nnew label = \"home\"\nnew UUID = " +
                       uuid + "\nlabel = \"home\"\nUUID = " + uuid + "\n");
  ExpectCleanAndMountable();
}

TEST_F(WalfsAdmin, RefusesAnImageInUseNamingTheHolder) {
  const testing::FileDigest before = testing::DigestOfFile(image_);
  {
    auto held = FileDevice::Open(image_, {.exclusive = true});  // as a running daemon holds it
    ASSERT_TRUE(held.ok());
    for (const std::string args : {"-l ", "-L other ", "-U generate "}) {
      ToolRun r = Sh(Admin(args + image_));
      EXPECT_EQ(r.exit_code, 1) << args << r.out;
      EXPECT_NE(r.out.find("in use by pid " + std::to_string(::getpid())), std::string::npos) << r.out;
      EXPECT_EQ(Lines(r.out), 1) << r.out;
    }
  }
  EXPECT_TRUE(testing::DigestOfFile(image_) == before) << "a refused walfs-admin changed the image";
}

// Not walfs, a damaged superblock, no such file: exit 1, one line, no crash.
TEST_F(WalfsAdmin, RefusesWhatIsNotAWalfsImage) {
  const std::string zeros = image_ + ".zeros", missing = image_ + ".missing";
  ASSERT_EQ(Sh("truncate -s 8m " + zeros).exit_code, 0);
  ToolRun z = Sh(Admin("-L x " + zeros));
  EXPECT_EQ(z.exit_code, 1) << z.out;
  EXPECT_NE(z.out.find("not a walfs image"), std::string::npos) << z.out;
  EXPECT_EQ(Lines(z.out), 1) << z.out;
  ASSERT_EQ(Sh("truncate -s 100 " + zeros).exit_code, 0);  // smaller than a superblock
  ToolRun tiny = Sh(Admin("-l " + zeros));
  EXPECT_EQ(tiny.exit_code, 1) << tiny.out;
  EXPECT_NE(tiny.out.find("not a walfs image"), std::string::npos) << tiny.out;
  std::filesystem::remove(zeros);
  ToolRun m = Sh(Admin("-l " + missing));
  EXPECT_EQ(m.exit_code, 1) << m.out;
  EXPECT_NE(m.out.find("No such file"), std::string::npos) << m.out;
  // One byte of the label flipped: the CRC no longer matches.
  ASSERT_EQ(Sh("printf Z | dd of=" + image_ + " bs=1 seek=150 conv=notrunc status=none").exit_code, 0);
  const testing::FileDigest damaged = testing::DigestOfFile(image_);
  for (const std::string args : {"-l ", "-U generate "}) {
    ToolRun r = Sh(Admin(args + image_));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("superblock CRC"), std::string::npos) << r.out;
    EXPECT_EQ(Lines(r.out), 1) << r.out;
  }
  EXPECT_TRUE(testing::DigestOfFile(image_) == damaged);
}

// A bad argument is a usage error (exit 2) before the image is opened.
TEST_F(WalfsAdmin, BadArgumentsAreUsageErrors) {
  const testing::FileDigest before = testing::DigestOfFile(image_);
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases{
      {"-L " + std::string(fs::format::kLabelSize + 1, 'x'), "label is 65 bytes; at most 64"},
      {"-U 0123", "is not a UUID (4 characters, not 36)"},
      {"-U 01234567-89ab-cdef-0123-456789abcdeg", "'g' at character 36 is not a hex digit"},
      {"-U 0123456789ab-cdef-0123-456789abcdef0", "no '-' at character 9"},
      {"-U nil", "the nil UUID is not allowed"},
      {"-U 00000000-0000-0000-0000-000000000000", "the nil UUID is not allowed"},
      {"", "nothing to do: give -l, -u, -e, -L LABEL or -U UUID"},
  };
  for (const Case& c : cases) {
    ToolRun r = Sh("{ " + Admin(c.args + " " + image_) + " 2>&1 >/dev/null; }");  // stderr only
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find("see walfs-admin --help"), std::string::npos) << c.args << ": " << r.out;
    EXPECT_EQ(Lines(r.out), 1) << c.args << ": " << r.out;
  }
  EXPECT_TRUE(testing::DigestOfFile(image_) == before) << "a usage error changed the image";
}

// A log still to be replayed holds changes made under the superblock as it
// was: a change waits until the log is replayed (xfs_admin's rule);
// printing does not.
TEST_F(WalfsAdmin, RefusesAChangeUntilTheLogIsReplayed) {
  MountWriteAndCrash();
  const testing::FileDigest before = testing::DigestOfFile(image_);
  for (const std::string args : {"-L other ", "-U generate "}) {
    ToolRun r = Sh(Admin(args + image_));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("replay the log first: mount and unmount it, or run fsck.walfs"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(Lines(r.out), 1) << r.out;
  }
  EXPECT_TRUE(testing::DigestOfFile(image_) == before);
  EXPECT_EQ(Sh(Admin("-l " + image_)).out, "label = \"data\"\n");
  ToolRun replayed = Sh(Fsck(image_));
  ASSERT_EQ(replayed.exit_code, 0) << replayed.out;
  EXPECT_EQ(Sh(Admin("-L other -U generate " + image_)).exit_code, 0);
  ExpectCleanAndMountable();
}

}  // namespace
}  // namespace walfs
