// Extended attributes in the user. namespace: set, get, list, remove, the
// create/replace flags and the size protocol of get and list.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class Xattr : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    file_ = Path("f");
    WriteFile(file_, "data");
  }
  std::string Get(const std::string& path, const std::string& name) {
    char buf[65536];
    const ssize_t n = getxattr(path.c_str(), name.c_str(), buf, sizeof(buf));
    EXPECT_NE(n, -1) << name << ": " << strerrorname_np(errno);
    return n < 0 ? "" : std::string(buf, n);
  }
  std::set<std::string> List(const std::string& path) {
    const ssize_t size = listxattr(path.c_str(), nullptr, 0);
    EXPECT_NE(size, -1) << strerrorname_np(errno);
    std::string buf(std::max<ssize_t>(size, 1), '\0');
    const ssize_t n = listxattr(path.c_str(), buf.data(), buf.size());
    EXPECT_EQ(n, size);
    std::set<std::string> names;
    for (size_t i = 0; n > 0 && i < static_cast<size_t>(n);) {
      const std::string name(buf.c_str() + i);
      names.insert(name);
      i += name.size() + 1;
    }
    // Other namespaces (security.*, system.*) may appear; keep user.*.
    std::erase_if(names, [](const std::string& s) { return s.rfind("user.", 0) != 0; });
    return names;
  }
  static int Set(const std::string& path, const std::string& name, const std::string& v,
                 int flags = 0) {
    return setxattr(path.c_str(), name.c_str(), v.data(), v.size(), flags);
  }
  std::string file_;
};

TEST_F(Xattr, SetThenGetReturnsTheValue) {
  ASSERT_SYS(Set(file_, "user.a", "alpha"));
  EXPECT_EQ(Get(file_, "user.a"), "alpha");
  ASSERT_SYS(Set(file_, "user.a", "replaced, longer value"));
  EXPECT_EQ(Get(file_, "user.a"), "replaced, longer value");
  ASSERT_SYS(Set(file_, "user.empty", ""));
  EXPECT_EQ(Get(file_, "user.empty"), "");
  std::string binary(300, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i);
  ASSERT_SYS(Set(file_, "user.bin", binary));
  EXPECT_EQ(Get(file_, "user.bin"), binary);
  EXPECT_EQ(ReadFile(file_), "data") << "xattrs do not touch the data";
}

TEST_F(Xattr, CreateOfAnExistingNameIsEEXISTAndReplaceOfAMissingOneIsENODATA) {
  ASSERT_SYS(Set(file_, "user.x", "1", XATTR_CREATE));
  EXPECT_ERRNO(EEXIST, Set(file_, "user.x", "2", XATTR_CREATE));
  EXPECT_EQ(Get(file_, "user.x"), "1");
  EXPECT_ERRNO(ENODATA, Set(file_, "user.y", "2", XATTR_REPLACE));
  ASSERT_SYS(Set(file_, "user.x", "3", XATTR_REPLACE));
  EXPECT_EQ(Get(file_, "user.x"), "3");
}

TEST_F(Xattr, GettingAMissingNameIsENODATA) {
  char buf[16];
  EXPECT_ERRNO(ENODATA, getxattr(file_.c_str(), "user.missing", buf, sizeof(buf)));
  EXPECT_ERRNO(ENODATA, getxattr(file_.c_str(), "user.missing", nullptr, 0));
  EXPECT_ERRNO(ENODATA, removexattr(file_.c_str(), "user.missing"));
}

TEST_F(Xattr, ASmallBufferIsERANGEAndSizeZeroAsksForTheSize) {
  ASSERT_SYS(Set(file_, "user.long", "0123456789"));
  EXPECT_EQ(getxattr(file_.c_str(), "user.long", nullptr, 0), 10);
  char buf[4];
  EXPECT_ERRNO(ERANGE, getxattr(file_.c_str(), "user.long", buf, sizeof(buf)));
  const ssize_t list_size = listxattr(file_.c_str(), nullptr, 0);
  ASSERT_GE(list_size, static_cast<ssize_t>(sizeof("user.long")));
  EXPECT_ERRNO(ERANGE, listxattr(file_.c_str(), buf, sizeof(buf)));
}

TEST_F(Xattr, ListNamesEveryAttributeAndRemoveTakesThemAway) {
  EXPECT_TRUE(List(file_).empty());
  std::set<std::string> want;
  for (int i = 0; i < 50; ++i) {
    const std::string name = "user.attr" + std::to_string(i);
    ASSERT_SYS(Set(file_, name, std::string(i, 'v')));
    want.insert(name);
  }
  EXPECT_EQ(List(file_), want);
  for (int i = 0; i < 50; i += 2) {
    const std::string name = "user.attr" + std::to_string(i);
    ASSERT_SYS(removexattr(file_.c_str(), name.c_str()));
    want.erase(name);
  }
  EXPECT_EQ(List(file_), want);
  EXPECT_EQ(Get(file_, "user.attr7"), std::string(7, 'v'));
  char buf[8];
  EXPECT_ERRNO(ENODATA, getxattr(file_.c_str(), "user.attr8", buf, sizeof(buf)));
}

TEST_F(Xattr, DirectoriesCarryXattrsAndFdCallsWork) {
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  ASSERT_SYS(Set(Path("d"), "user.dir", "yes"));
  EXPECT_EQ(Get(Path("d"), "user.dir"), "yes");
  const int fd = open(file_.c_str(), O_RDONLY);
  ASSERT_SYS(fd);
  ASSERT_SYS(fsetxattr(fd, "user.fd", "v", 1, 0));
  char buf[8];
  EXPECT_EQ(fgetxattr(fd, "user.fd", buf, sizeof(buf)), 1);
  ASSERT_SYS(fremovexattr(fd, "user.fd"));
  close(fd);
  EXPECT_EQ(List(file_), std::set<std::string>{});
}

TEST_F(Xattr, ValuesOfAFewKiBAreStored) {
  const std::string big(3000, 'k');
  ASSERT_SYS(Set(file_, "user.big", big));
  EXPECT_EQ(Get(file_, "user.big"), big);
  ASSERT_SYS(Set(file_, "user.big", "small"));
  EXPECT_EQ(Get(file_, "user.big"), "small");
}

TEST_F(Xattr, UserXattrsOnSymlinksAreEPERM) {
  ASSERT_SYS(symlink("f", Path("s").c_str()));
  EXPECT_ERRNO(EPERM, lsetxattr(Path("s").c_str(), "user.x", "v", 1, 0));
}

}  // namespace
}  // namespace walfs::testing
