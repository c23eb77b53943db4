// POSIX ACLs: the xattr encoding (decode, encode, every malformed shape
// refused), the mode rules (update, chmod, inheritance), and the
// filesystem keeping the system.posix_acl_* xattrs and the mode in step,
// across a remount and a crash, with fsck checking what is stored.
#include "fs/posix_acl.h"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/coding.h"
#include "fs/filesystem.h"
#include "fs/format/block_header.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"

namespace walfs::fs {
namespace {

AclEntry E(std::uint16_t tag, std::uint16_t perm, std::uint32_t id = kAclUndefinedId) { return {tag, perm, id}; }

// u::rw-, u:1000:r--, g::r--, m::r--, o::---
Acl Extended() {
  return Acl{{E(kAclUserObj, 6), E(kAclUser, 4, 1000), E(kAclGroupObj, 4), E(kAclMask, 4), E(kAclOther, 0)}};
}
Acl Minimal(std::uint16_t u, std::uint16_t g, std::uint16_t o) {
  return Acl{{E(kAclUserObj, u), E(kAclGroupObj, g), E(kAclOther, o)}};
}

// A value entry by entry, without EncodeAcl's canonical ids.
std::string Raw(std::uint32_t version, const std::vector<AclEntry>& es) {
  std::string s(4 + 8 * es.size(), '\0');
  EncodeFixed32(s.data(), version);
  for (std::size_t i = 0; i < es.size(); ++i) {
    EncodeFixed16(s.data() + 4 + 8 * i, es[i].tag);
    EncodeFixed16(s.data() + 6 + 8 * i, es[i].perm);
    EncodeFixed32(s.data() + 8 + 8 * i, es[i].id);
  }
  return s;
}

TEST(PosixAclFormat, AnAclRoundTripsThroughItsEncoding) {
  const std::string v = EncodeAcl(Extended());
  EXPECT_EQ(v.size(), 4u + 5 * 8);
  EXPECT_EQ(DecodeFixed32(v.data()), 2u);
  auto back = DecodeAcl(v);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, Extended());
}

TEST(PosixAclFormat, UnnamedEntriesIdsAreIgnoredAndWrittenUndefined) {
  auto acl = DecodeAcl(Raw(2, {E(kAclUserObj, 7, 5), E(kAclGroupObj, 5, 0), E(kAclOther, 4, 9)}));
  ASSERT_TRUE(acl.ok()) << acl.status().ToString();
  EXPECT_EQ(*acl, Minimal(7, 5, 4));
  EXPECT_EQ(EncodeAcl(*acl), Raw(2, Minimal(7, 5, 4).entries));
}

TEST(PosixAclFormat, MalformedValuesAreInvalidArguments) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"empty", ""},
      {"header only", Raw(2, {})},
      {"version 1", Raw(1, Minimal(6, 4, 4).entries)},
      {"torn entry", Raw(2, Minimal(6, 4, 4).entries).substr(0, 4 + 8 * 3 - 1)},
      {"unknown tag", Raw(2, {E(kAclUserObj, 6), E(0x40, 4), E(kAclGroupObj, 4), E(kAclOther, 4)})},
      {"perm bits", Raw(2, {E(kAclUserObj, 010), E(kAclGroupObj, 4), E(kAclOther, 4)})},
      {"no owner", Raw(2, {E(kAclGroupObj, 4), E(kAclOther, 4)})},
      {"no group", Raw(2, {E(kAclUserObj, 6), E(kAclOther, 4)})},
      {"no other", Raw(2, {E(kAclUserObj, 6), E(kAclGroupObj, 4)})},
      {"two owners", Raw(2, {E(kAclUserObj, 6), E(kAclUserObj, 6), E(kAclGroupObj, 4), E(kAclOther, 4)})},
      {"out of order", Raw(2, {E(kAclGroupObj, 4), E(kAclUserObj, 6), E(kAclOther, 4)})},
      {"named without mask",
       Raw(2, {E(kAclUserObj, 6), E(kAclUser, 4, 7), E(kAclGroupObj, 4), E(kAclOther, 4)})},
      {"ids unsorted", Raw(2, {E(kAclUserObj, 6), E(kAclUser, 4, 9), E(kAclUser, 4, 7), E(kAclGroupObj, 4),
                               E(kAclMask, 4), E(kAclOther, 4)})},
      {"id repeated", Raw(2, {E(kAclUserObj, 6), E(kAclGroupObj, 4), E(kAclGroup, 4, 7), E(kAclGroup, 2, 7),
                              E(kAclMask, 4), E(kAclOther, 4)})},
      {"undefined id", Raw(2, {E(kAclUserObj, 6), E(kAclUser, 4), E(kAclGroupObj, 4), E(kAclMask, 4),
                               E(kAclOther, 4)})},
      {"entry after other", Raw(2, {E(kAclUserObj, 6), E(kAclGroupObj, 4), E(kAclOther, 4), E(kAclMask, 4)})},
  };
  for (const auto& [what, value] : bad) {
    auto r = DecodeAcl(value);
    EXPECT_FALSE(r.ok()) << what;
    if (!r.ok()) {
      EXPECT_EQ(r.status().ToErrno(), EINVAL) << what << ": " << r.status().ToString();
    }
  }
}

TEST(PosixAclMode, AMinimalAclIsTheModeAlone) {
  std::uint32_t mode = S_IFREG | S_ISGID | 0777;
  EXPECT_FALSE(UpdateModeFromAcl(Minimal(6, 4, 0), &mode));
  EXPECT_EQ(mode, S_IFREG | S_ISGID | 0640u);
}

TEST(PosixAclMode, AnExtendedAclSetsTheGroupBitsFromItsMask) {
  std::uint32_t mode = S_IFREG | 0777;
  Acl acl = Extended();
  acl.entries[3].perm = 7;  // mask rwx, owning group r--
  EXPECT_TRUE(UpdateModeFromAcl(acl, &mode));
  EXPECT_EQ(mode, S_IFREG | 0670u);
}

TEST(PosixAclMode, ChmodRewritesOwnerMaskAndOtherButNotNamedEntries) {
  Acl acl = Extended();
  ChmodAcl(&acl, 0751);
  EXPECT_EQ(acl.entries[0], E(kAclUserObj, 7));
  EXPECT_EQ(acl.entries[1], E(kAclUser, 4, 1000));
  EXPECT_EQ(acl.entries[2], E(kAclGroupObj, 4));  // behind the mask: unchanged
  EXPECT_EQ(acl.entries[3], E(kAclMask, 5));
  EXPECT_EQ(acl.entries[4], E(kAclOther, 1));
  Acl minimal = Minimal(6, 4, 4);
  ChmodAcl(&minimal, 0705);
  EXPECT_EQ(minimal, Minimal(7, 0, 5));
}

TEST(PosixAclInherit, AFileGetsTheDefaultLimitedByItsCreateModeAndNoDefault) {
  // default u::rwx, u:1000:rwx, g::r-x, m::rwx, o::r-x; a file made 0666
  Acl def{{E(kAclUserObj, 7), E(kAclUser, 7, 1000), E(kAclGroupObj, 5), E(kAclMask, 7), E(kAclOther, 5)}};
  const InheritedAcl got = InheritAcl(def, S_IFREG | 0666);
  EXPECT_EQ(got.mode, S_IFREG | 0664u);
  ASSERT_TRUE(got.access.has_value());
  EXPECT_EQ(got.access->entries[0], E(kAclUserObj, 6));
  EXPECT_EQ(got.access->entries[1], E(kAclUser, 7, 1000));  // named entries stay; the mask limits them
  EXPECT_EQ(got.access->entries[3], E(kAclMask, 6));
  EXPECT_EQ(got.access->entries[4], E(kAclOther, 4));
  EXPECT_FALSE(got.default_acl.has_value());
}

TEST(PosixAclInherit, ADirectoryKeepsTheDefaultAndAMinimalOneLeavesOnlyTheMode) {
  const Acl def = Minimal(7, 5, 0);
  const InheritedAcl got = InheritAcl(def, S_IFDIR | S_ISGID | 0777);
  EXPECT_EQ(got.mode, S_IFDIR | S_ISGID | 0750u);  // umask plays no part
  EXPECT_FALSE(got.access.has_value());
  ASSERT_TRUE(got.default_acl.has_value());
  EXPECT_EQ(*got.default_acl, def);
}

// ---- through the filesystem ----

class AclFs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeFilesystem(&dev_, {.ag_count = 2}).ok());
    Mount();
  }
  void TearDown() override {
    if (fs_) {
      ASSERT_TRUE(fs_->Unmount().ok());
    }
    fs_.reset();
    auto r = CheckImage(&dev_, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (const FsckProblem& p : r->problems) ADD_FAILURE() << "fsck: " << p.message;
  }
  void Mount() {
    MountOptions o;
    o.commit_interval_s = 0;
    auto fs = Filesystem::MountDevice(&dev_, o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(fs).value();
  }
  std::uint64_t Make(std::string_view name, std::uint32_t mode, std::uint64_t parent = 0) {
    if (parent == 0) parent = fs_->root();
    auto st = S_ISDIR(mode) ? fs_->Mkdir(caller_, parent, name, mode & 07777)
                            : fs_->Mknod(caller_, parent, name, mode, 0);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    return st.ok() ? st->st_ino : 0;
  }
  std::uint32_t Mode(std::uint64_t ino) { return fs_->GetAttr(ino)->st_mode; }
  Result<Acl> Stored(std::uint64_t ino, std::string_view name) {
    WALFS_ASSIGN_OR_RETURN(std::string v, fs_->GetXattr(ino, name));
    return DecodeAcl(v);
  }

  MemoryDevice dev_{64ull << 20};
  std::unique_ptr<Filesystem> fs_;
  Caller caller_{.uid = 1000, .gid = 1000, .umask = 022};
};

TEST_F(AclFs, SettingAMalformedAclIsEinvalAndChangesNothing) {
  const std::uint64_t f = Make("f", S_IFREG | 0644);
  EXPECT_EQ(fs_->SetXattr(f, kAclAccessXattr, "garbage!", 0).ToErrno(), EINVAL);
  EXPECT_EQ(fs_->SetXattr(f, kAclAccessXattr, Raw(2, {E(kAclUserObj, 6), E(kAclOther, 4)}), 0).ToErrno(), EINVAL);
  EXPECT_EQ(Mode(f), S_IFREG | 0644u);
  EXPECT_EQ(fs_->GetXattr(f, kAclAccessXattr).status().ToErrno(), ENODATA);
}

TEST_F(AclFs, AnAccessAclSetsTheModeAndAMinimalOneIsStoredAsTheModeOnly) {
  const std::uint64_t f = Make("f", S_IFREG | 0600);
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Extended()), 0).ok());
  EXPECT_EQ(Mode(f), S_IFREG | 0640u);
  auto got = Stored(f, kAclAccessXattr);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Extended());
  // What GNU cp -a does last: the mode as a three-entry ACL.
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Minimal(7, 5, 5)), 0).ok());
  EXPECT_EQ(Mode(f), S_IFREG | 0755u);
  EXPECT_EQ(fs_->GetXattr(f, kAclAccessXattr).status().ToErrno(), ENODATA);
}

TEST_F(AclFs, AnAccessAclSetByANonMemberOfTheGroupClearsSetgid) {
  const std::uint64_t f = Make("f", S_IFREG | S_ISGID | 0755);  // group 1000
  struct stat attr {};
  attr.st_gid = 2000;
  ASSERT_TRUE(fs_->SetAttr(f, attr, kSetGid).ok());
  const std::string acl = EncodeAcl(Minimal(7, 5, 5));
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, acl, 0, Caller{.uid = 1000, .gid = 1000, .groups = {2000}}).ok());
  EXPECT_EQ(Mode(f), S_IFREG | S_ISGID | 0755u) << "a member by a supplementary group";
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, acl, 0, Caller{.uid = 0, .gid = 0}).ok());
  EXPECT_EQ(Mode(f), S_IFREG | S_ISGID | 0755u) << "root";
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Extended()), 0, Caller{.uid = 1000, .gid = 1000}).ok());
  EXPECT_EQ(Mode(f), S_IFREG | 0640u) << "not a member";
}

TEST_F(AclFs, ChmodRewritesTheStoredAccessAcl) {
  const std::uint64_t f = Make("f", S_IFREG | 0644);
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Extended()), 0).ok());
  struct stat attr {};
  attr.st_mode = 0705;
  ASSERT_TRUE(fs_->SetAttr(f, attr, kSetMode).ok());
  auto got = Stored(f, kAclAccessXattr);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  Acl want = Extended();
  ChmodAcl(&want, 0705);
  EXPECT_EQ(*got, want);
  EXPECT_EQ(got->entries[3], E(kAclMask, 0));
}

TEST_F(AclFs, ADefaultAclIsForDirectoriesOnly) {
  const std::uint64_t f = Make("f", S_IFREG | 0644);
  EXPECT_EQ(fs_->SetXattr(f, kAclDefaultXattr, EncodeAcl(Minimal(7, 5, 5)), 0).ToErrno(), EACCES);
}

TEST_F(AclFs, ADefaultAclTooLargeToInheritIsEnospcAndAnAccessAclOfThatSizeIsKept) {
  const std::uint64_t d = Make("d", S_IFDIR | 0755);
  Acl big{{E(kAclUserObj, 7)}};
  for (std::uint32_t id = 1; id <= 300; ++id) big.entries.push_back(E(kAclUser, 5, id));
  big.entries.insert(big.entries.end(), {E(kAclGroupObj, 5), E(kAclMask, 7), E(kAclOther, 5)});
  EXPECT_EQ(fs_->SetXattr(d, kAclDefaultXattr, EncodeAcl(big), 0).ToErrno(), ENOSPC);
  EXPECT_EQ(fs_->GetXattr(d, kAclDefaultXattr).status().ToErrno(), ENODATA);
  ASSERT_TRUE(fs_->SetXattr(d, kAclAccessXattr, EncodeAcl(big), 0).ok());
  auto got = Stored(d, kAclAccessXattr);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, big);
}

TEST_F(AclFs, CreateAndReplaceFlagsApplyToStoredAcls) {
  const std::uint64_t f = Make("f", S_IFREG | 0644);
  EXPECT_EQ(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Extended()), XATTR_REPLACE).ToErrno(), ENODATA);
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Extended()), XATTR_CREATE).ok());
  EXPECT_EQ(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Extended()), XATTR_CREATE).ToErrno(), EEXIST);
  ASSERT_TRUE(fs_->RemoveXattr(f, kAclAccessXattr).ok());
  EXPECT_EQ(Mode(f), S_IFREG | 0640u);  // removing the ACL leaves the mode
}

TEST_F(AclFs, NewInodesInheritTheDefaultAclAndIgnoreTheUmask) {
  const std::uint64_t d = Make("d", S_IFDIR | 0755);
  const Acl def{{E(kAclUserObj, 7), E(kAclUser, 0, 65534), E(kAclGroupObj, 7), E(kAclMask, 7), E(kAclOther, 7)}};
  ASSERT_TRUE(fs_->SetXattr(d, kAclDefaultXattr, EncodeAcl(def), 0).ok());
  const std::uint64_t f = Make("f", S_IFREG | 0666, d);
  EXPECT_EQ(Mode(f), S_IFREG | 0666u);  // umask 022 ignored
  auto fa = Stored(f, kAclAccessXattr);
  ASSERT_TRUE(fa.ok()) << fa.status().ToString();
  EXPECT_EQ(fa->entries[1], E(kAclUser, 0, 65534));
  EXPECT_EQ(fs_->GetXattr(f, kAclDefaultXattr).status().ToErrno(), ENODATA);
  const std::uint64_t sub = Make("sub", S_IFDIR | 0777, d);
  EXPECT_EQ(Mode(sub), S_IFDIR | 0777u);
  auto sd = Stored(sub, kAclDefaultXattr);
  ASSERT_TRUE(sd.ok()) << sd.status().ToString();
  EXPECT_EQ(*sd, def);
  // Without a default ACL the umask applies; symlinks never get ACLs.
  EXPECT_EQ(Mode(Make("plain", S_IFREG | 0666)), S_IFREG | 0644u);
  auto l = fs_->Symlink(caller_, d, "l", "f");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(fs_->GetXattr(l->st_ino, kAclAccessXattr).status().ToErrno(), ENODATA);
}

TEST_F(AclFs, AclsSurviveARemountAndACrash) {
  const std::uint64_t d = Make("d", S_IFDIR | 0755);
  ASSERT_TRUE(fs_->SetXattr(d, kAclDefaultXattr, EncodeAcl(Extended()), 0).ok());
  const std::uint64_t f = Make("f", S_IFREG | 0644, d);
  ASSERT_TRUE(fs_->Unmount().ok());
  Mount();
  EXPECT_TRUE(Stored(d, kAclDefaultXattr).ok());
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, EncodeAcl(Minimal(7, 0, 0)), 0).ok());
  ASSERT_TRUE(fs_->SetXattr(d, kAclAccessXattr, EncodeAcl(Extended()), 0).ok());
  ASSERT_TRUE(fs_->Fsync(d, false).ok());
  fs_.reset();  // a crash: the log halts
  Mount();
  EXPECT_EQ(Mode(f), S_IFREG | 0700u);
  EXPECT_EQ(fs_->GetXattr(f, kAclAccessXattr).status().ToErrno(), ENODATA);
  auto da = Stored(d, kAclAccessXattr);
  ASSERT_TRUE(da.ok()) << da.status().ToString();
  EXPECT_EQ(*da, Extended());
  EXPECT_EQ(Mode(d), S_IFDIR | 0640u);
}

TEST_F(AclFs, FsckReportsAStoredAclThatDoesNotDecode) {
  const std::uint64_t f = Make("f", S_IFREG | 0644);
  const std::string v = EncodeAcl(Extended());
  ASSERT_TRUE(fs_->SetXattr(f, kAclAccessXattr, v, 0).ok());
  ASSERT_TRUE(fs_->Unmount().ok());
  fs_.reset();
  // Rewrites the stored value's version byte in the file's xattr leaf (its
  // own block, not the log's copy), sealed again so that only the ACL
  // check can see it.
  auto set_version = [&](std::uint8_t version) {
    const std::uint32_t bs = 4096;
    std::vector<std::byte> b(bs);
    for (std::uint64_t blk = 0; blk < dev_.size_bytes() / bs; ++blk) {
      EXPECT_TRUE(dev_.Read(blk * bs, b.data(), bs).ok());
      const format::BlockHeader h = format::DecodeBlockHeader(b);
      if (h.blkno != blk || h.owner != f) continue;
      const std::string_view bytes(reinterpret_cast<const char*>(b.data()), bs);
      const std::size_t at = bytes.find(kAclAccessXattr);
      if (at == std::string_view::npos) continue;
      b[at + kAclAccessXattr.size() + 4] = std::byte{version};
      format::SealBlock(b);
      EXPECT_TRUE(dev_.Write(blk * bs, b.data(), bs).ok());
      return true;
    }
    return false;
  };
  ASSERT_TRUE(set_version(3)) << "the ACL's record is not on the device";
  auto r = CheckImage(&dev_, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool said = false;
  for (const FsckProblem& p : r->problems)
    said |= p.message.find("system.posix_acl_access: malformed POSIX ACL: version 3") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_NE(r->ExitCode(), 0);
  // The mount sees the damage too when a chmod must rewrite the ACL.
  Mount();
  struct stat attr {};
  attr.st_mode = 0600;
  EXPECT_TRUE(fs_->SetAttr(f, attr, kSetMode).status().IsCorruption());
  ASSERT_TRUE(fs_->Unmount().ok());
  fs_.reset();
  ASSERT_TRUE(set_version(2));  // for TearDown's fsck
  Mount();
}

}  // namespace
}  // namespace walfs::fs
