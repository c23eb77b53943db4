#include "base/mount_table.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <gtest/gtest.h>

namespace walfs {
namespace {

TEST(MountTable, EscapesAreUndoneAndOtherBackslashesKept) {
  EXPECT_EQ(UnescapeMountField("/mnt/a\\040b"), "/mnt/a b");
  EXPECT_EQ(UnescapeMountField("\\011tab\\012nl\\134bs"), "\ttab\nnl\\bs");
  EXPECT_EQ(UnescapeMountField("plain"), "plain");
  EXPECT_EQ(UnescapeMountField("end\\04"), "end\\04") << "a cut escape is left alone";
  EXPECT_EQ(UnescapeMountField("\\9zz"), "\\9zz") << "not octal";
}

TEST(MountTable, TheRootIsMountedAndTheTopmostMountWins) {
  const std::vector<MountEntry> all = ReadMountTable();
  ASSERT_FALSE(all.empty()) << "/proc/self/mountinfo";
  const std::optional<MountEntry> root = TopMountAt("/");
  ASSERT_TRUE(root.has_value());
  EXPECT_FALSE(root->fstype.empty());
  MountEntry last_root;
  for (const MountEntry& e : all)
    if (e.point == "/") last_root = e;
  EXPECT_EQ(root->fstype, last_root.fstype);
  EXPECT_EQ(root->source, last_root.source);
  EXPECT_FALSE(TopMountAt("/no/such/mount/point").has_value());
}

TEST(MountTable, AnEntryNamesItsFilesystemsDeviceAndRoot) {
  struct stat st {};
  ASSERT_EQ(stat("/", &st), 0);
  const std::optional<MountEntry> root = TopMountAt("/");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(makedev(root->major, root->minor), st.st_dev) << root->fstype << " " << root->source;
  EXPECT_FALSE(root->root.empty());
  EXPECT_EQ(root->root.front(), '/');
}

}  // namespace
}  // namespace walfs
