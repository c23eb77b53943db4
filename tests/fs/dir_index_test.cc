// Specs of DirIndex (fs/dir.h): inline directories, their conversion to a
// hashed B+tree once they outgrow the inode, readdir keys (cookies) that
// never change while their entry exists, resuming a listing from a cookie,
// the collision index, AlreadyExists/NotFound, Replace, Destroy, and a large
// directory against a std::map oracle.  Each change is a transaction of its
// own, as the filesystem makes it; the directory's core is the test's copy
// (DirIndex changes the copy, the caller stores it).
#include "fs/dir.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/coding.h"
#include "fs/btree.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using format::ForkFormat;
using format::InodeCore;

constexpr std::uint64_t kIndexMask = 0xffff;

struct Entry {
  std::uint64_t key;
  std::string name;
  DirTarget t;
};

class DirIndexTest : public testing::FsFixture {
 protected:
  void SetUp() override {
    FsFixture::SetUp();
    dirs_ = std::make_unique<DirIndex>(cache_.get(), alloc_.get(), &sb_);
    dir_.ino = sb_.root_ino;  // the tree's owner and allocation goal
    dir_.mode = S_IFDIR | 0755;
    dir_.nlink = 2;
    DirIndex::InitLocal(&dir_, kParent);
  }
  void TearDown() override {
    dirs_.reset();
    FsFixture::TearDown();
  }


  // One change, one transaction (committed whatever the change returned: a
  // refused change leaves the transaction clean).
  template <typename Fn>
  Status Change(Fn fn) {
    auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
    if (!tx.ok()) return tx.status();
    Status s = fn(&*tx);
    Status c = tx->Commit().status();
    EXPECT_TRUE(c.ok()) << c.ToString();
    return s;
  }
  Status Add(std::string_view name, std::uint64_t ino, std::uint8_t type = DT_REG) {
    return Change([&](FsTransaction* tx) { return dirs_->Add(tx, &dir_, name, DirTarget{ino, type}); });
  }
  Status Remove(std::string_view name) {
    return Change([&](FsTransaction* tx) { return dirs_->Remove(tx, &dir_, name); });
  }
  Status Replace(std::string_view name, std::uint64_t ino, std::uint8_t type = DT_REG) {
    return Change([&](FsTransaction* tx) { return dirs_->Replace(tx, &dir_, name, DirTarget{ino, type}); });
  }
  std::optional<DirTarget> Lookup(std::string_view name) {
    auto r = dirs_->Lookup(dir_, name);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  }
  std::vector<Entry> List(std::uint64_t from = 0, std::size_t max = SIZE_MAX) {
    std::vector<Entry> out;
    Status s = dirs_->List(dir_, from, [&](std::uint64_t key, std::string_view name, DirTarget t) {
      out.push_back(Entry{key, std::string(name), t});
      return out.size() < max;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  std::map<std::string, std::uint64_t> KeysByName() {
    std::map<std::string, std::uint64_t> m;
    for (const Entry& e : List()) m[e.name] = e.key;
    return m;
  }
  std::uint32_t TreeBlocks() {
    std::uint32_t n = 0;
    EXPECT_TRUE(dirs_->ForEachBlock(dir_, [&](std::uint64_t) { ++n; }).ok());
    return n;
  }
  // Adds names until the directory is a tree; returns them.
  std::vector<std::string> FillUntilTree(std::size_t extra = 0) {
    std::vector<std::string> names;
    for (int i = 0; dir_.format != ForkFormat::kBtree || extra-- > 0; ++i) {
      names.push_back("file-" + std::to_string(i));
      EXPECT_TRUE(Add(names.back(), 1000 + i).ok());
      if (i > 10000) break;
    }
    return names;
  }
  // A raw record in the directory's tree, as DirIndex encodes one.
  Status InsertRaw(std::uint64_t key, std::string_view name, std::uint64_t ino) {
    std::string v;
    PutFixed64(&v, ino);
    v.push_back(static_cast<char>(DT_REG));
    v.append(name);
    Btree tree({.cache = cache_.get(), .alloc = alloc_.get(), .sb = &sb_, .type = format::BlockType::kDirectory,
                .owner = dir_.ino, .goal = dir_.ino / sb_.inodes_per_block()});
    return Change([&](FsTransaction* tx) {
      BtreeRoot root = GetForkRoot(dir_.literal, 0);
      WALFS_RETURN_IF_ERROR(tree.Insert(tx, &root, key, v));
      PutForkRoot(&dir_.literal, 0, root);
      return Status::Ok();
    });
  }

  static constexpr std::uint64_t kParent = 77;
  std::unique_ptr<DirIndex> dirs_;
  InodeCore dir_;
};

TEST_F(DirIndexTest, AnEmptyInlineDirectoryHasItsParentAndNoEntries) {
  EXPECT_EQ(dir_.format, ForkFormat::kLocal);
  EXPECT_EQ(dirs_->Parent(dir_), kParent);
  auto empty = dirs_->Empty(dir_);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(*empty);
  EXPECT_TRUE(List().empty());
  EXPECT_FALSE(Lookup("x").has_value());
  EXPECT_EQ(TreeBlocks(), 0u);
}

TEST_F(DirIndexTest, InlineNamesCanBeAddedLookedUpAndRemoved) {
  ASSERT_TRUE(Add("a", 10).ok());
  ASSERT_TRUE(Add("bb", 11, DT_DIR).ok());
  ASSERT_TRUE(Add("ccc", 12, DT_LNK).ok());
  EXPECT_EQ(dir_.format, ForkFormat::kLocal);
  auto b = Lookup("bb");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->ino, 11u);
  EXPECT_EQ(b->ftype, DT_DIR);
  EXPECT_FALSE(Lookup("b").has_value());
  EXPECT_FALSE(Lookup("bbb").has_value());
  ASSERT_TRUE(Remove("bb").ok());
  EXPECT_FALSE(Lookup("bb").has_value());
  EXPECT_EQ(Lookup("a")->ino, 10u);
  EXPECT_EQ(Lookup("ccc")->ino, 12u);
  EXPECT_EQ(List().size(), 2u);
  ASSERT_TRUE(Remove("a").ok());
  ASSERT_TRUE(Remove("ccc").ok());
  EXPECT_TRUE(*dirs_->Empty(dir_));
  EXPECT_EQ(dirs_->Parent(dir_), kParent);
}

TEST_F(DirIndexTest, AnInlineDirectoryListsInKeyOrderWithHashKeys) {
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Add("n" + std::to_string(i), 100 + i).ok());
  const std::vector<Entry> l = List();
  ASSERT_EQ(l.size(), 8u);
  for (std::size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(l[i].key, DirHashKey(l[i].name)) << l[i].name;  // no collisions here
    EXPECT_GE(l[i].key, 3u) << "keys 0..2 are readdir's start, . and ..";
    if (i > 0) {
      EXPECT_LT(l[i - 1].key, l[i].key);
    }
  }
}

TEST_F(DirIndexTest, AddingAnExistingNameIsAlreadyExistsAndChangesNothing) {
  ASSERT_TRUE(Add("same", 10).ok());
  Status s = Add("same", 11);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_EQ(Lookup("same")->ino, 10u);
  FillUntilTree();
  ASSERT_EQ(dir_.format, ForkFormat::kBtree);
  const std::uint64_t size = dir_.size;
  s = Add("same", 12);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_EQ(Lookup("same")->ino, 10u);
  EXPECT_EQ(dir_.size, size);
}

TEST_F(DirIndexTest, RemovingOrReplacingAMissingNameIsNotFound) {
  EXPECT_EQ(Remove("ghost").code(), StatusCode::kNotFound);
  EXPECT_EQ(Replace("ghost", 5).code(), StatusCode::kNotFound);
  FillUntilTree();
  ASSERT_EQ(dir_.format, ForkFormat::kBtree);
  const std::size_t n = List().size();
  EXPECT_EQ(Remove("ghost").code(), StatusCode::kNotFound);
  EXPECT_EQ(Replace("ghost", 5).code(), StatusCode::kNotFound);
  EXPECT_EQ(List().size(), n);
}

TEST_F(DirIndexTest, ReplacePointsANameAtAnotherInodeAndKeepsItsKey) {
  ASSERT_TRUE(Add("target", 10).ok());
  ASSERT_TRUE(Add("other", 11).ok());
  const auto before = KeysByName();
  ASSERT_TRUE(Replace("target", 20, DT_DIR).ok());
  EXPECT_EQ(Lookup("target")->ino, 20u);
  EXPECT_EQ(Lookup("target")->ftype, DT_DIR);
  EXPECT_EQ(KeysByName(), before);

  FillUntilTree();
  const auto tree_before = KeysByName();
  ASSERT_TRUE(Replace("target", 30).ok());
  EXPECT_EQ(Lookup("target")->ino, 30u);
  EXPECT_EQ(Lookup("target")->ftype, DT_REG);
  EXPECT_EQ(Lookup("other")->ino, 11u);
  EXPECT_EQ(KeysByName(), tree_before);
}

TEST_F(DirIndexTest, OutgrowingTheInodeConvertsToATreeKeepingEveryNameAndKey) {
  // Inline room: kDataForkRoom bytes for the parent (8) and entries (10 + name).
  std::vector<std::string> names;
  std::map<std::string, std::uint64_t> keys;
  for (int i = 0;; ++i) {
    std::string name = "entry-" + std::to_string(i);
    const bool fits = dir_.size + 10 + name.size() <= kDataForkRoom;
    keys = KeysByName();
    ASSERT_TRUE(Add(name, 500 + i).ok());
    names.push_back(name);
    if (!fits) break;
    ASSERT_EQ(dir_.format, ForkFormat::kLocal) << "converted with room left at " << name;
  }
  ASSERT_EQ(dir_.format, ForkFormat::kBtree);
  EXPECT_GE(TreeBlocks(), 1u);
  EXPECT_EQ(dirs_->Parent(dir_), kParent);
  // Every name that was inline kept its key; the new one got its hash.
  const auto after = KeysByName();
  ASSERT_EQ(after.size(), names.size());
  for (const auto& [name, key] : keys) EXPECT_EQ(after.at(name), key) << name;
  EXPECT_EQ(after.at(names.back()) & ~kIndexMask, DirHashKey(names.back()));
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto t = Lookup(names[i]);
    ASSERT_TRUE(t.has_value()) << names[i];
    EXPECT_EQ(t->ino, 500 + i);
  }
}

TEST_F(DirIndexTest, LongNamesConvertAfterOneEntry) {
  const std::string a(255, 'a'), b(255, 'b');
  ASSERT_TRUE(Add(a, 1).ok());
  EXPECT_EQ(dir_.format, ForkFormat::kLocal);
  ASSERT_TRUE(Add(b, 2).ok());
  EXPECT_EQ(dir_.format, ForkFormat::kBtree);
  EXPECT_EQ(Lookup(a)->ino, 1u);
  EXPECT_EQ(Lookup(b)->ino, 2u);
  const std::vector<Entry> l = List();
  ASSERT_EQ(l.size(), 2u);
  for (const Entry& e : l) EXPECT_EQ(e.name.size(), 255u);
}

TEST_F(DirIndexTest, TheXattrForkRootSurvivesDirectoryChanges) {
  // The last 16 bytes of the literal area belong to the xattr fork.
  for (std::uint32_t i = kXattrForkOffset; i < format::kLiteralSize; ++i)
    dir_.literal[i] = static_cast<char>(0xA0 + (i - kXattrForkOffset));
  const std::string xattr_root = dir_.literal.substr(kXattrForkOffset);
  ASSERT_TRUE(Add("x", 1).ok());
  EXPECT_EQ(dir_.literal.substr(kXattrForkOffset), xattr_root);
  FillUntilTree();
  EXPECT_EQ(dir_.literal.substr(kXattrForkOffset), xattr_root);
  ASSERT_TRUE(Remove("x").ok());
  EXPECT_EQ(dir_.literal.substr(kXattrForkOffset), xattr_root);
}

TEST_F(DirIndexTest, SetParentWorksInlineAndInATree) {
  dirs_->SetParent(&dir_, 123);
  EXPECT_EQ(dirs_->Parent(dir_), 123u);
  ASSERT_TRUE(Add("a", 5).ok());
  EXPECT_EQ(dirs_->Parent(dir_), 123u);
  FillUntilTree();
  EXPECT_EQ(dirs_->Parent(dir_), 123u);
  dirs_->SetParent(&dir_, 456);
  EXPECT_EQ(dirs_->Parent(dir_), 456u);
  EXPECT_EQ(Lookup("a")->ino, 5u);
}

TEST_F(DirIndexTest, ListFromACookieResumesExactlyAfterTheLastEntrySeen) {
  for (int phase = 0; phase < 2; ++phase) {
    if (phase == 0) {
      for (int i = 0; i < 6; ++i) ASSERT_TRUE(Add("small" + std::to_string(i), 10 + i).ok());
      ASSERT_EQ(dir_.format, ForkFormat::kLocal);
    } else {
      for (int i = 0; i < 600; ++i) ASSERT_TRUE(Add("big" + std::to_string(i), 10 + i).ok());
      ASSERT_EQ(dir_.format, ForkFormat::kBtree);
    }
    const std::vector<Entry> all = List();
    // Pages of 7, each resumed at the last key seen + 1 (readdir's "next").
    std::vector<Entry> paged;
    std::uint64_t from = 3;
    for (;;) {
      std::vector<Entry> page = List(from, 7);
      if (page.empty()) break;
      paged.insert(paged.end(), page.begin(), page.end());
      from = page.back().key + 1;
    }
    ASSERT_EQ(paged.size(), all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(paged[i].key, all[i].key);
      EXPECT_EQ(paged[i].name, all[i].name);
    }
    // A cookie between two keys starts at the next one.
    if (all.size() > 3) {
      const std::vector<Entry> rest = List(all[2].key + 1);
      ASSERT_FALSE(rest.empty());
      EXPECT_EQ(rest.front().key, all[3].key);
      EXPECT_EQ(List(all[2].key).front().key, all[2].key);
    }
    EXPECT_TRUE(List(all.back().key + 1).empty());
  }
}

TEST_F(DirIndexTest, KeysStayStableWhileOtherNamesComeAndGo) {
  std::vector<std::string> names = FillUntilTree(40);
  const auto keys = KeysByName();
  // Remove every third name, add new ones, and check the survivors.
  for (std::size_t i = 0; i < names.size(); i += 3) ASSERT_TRUE(Remove(names[i]).ok());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(Add("later-" + std::to_string(i), 9000 + i).ok());
  const auto after = KeysByName();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i % 3 == 0) {
      EXPECT_EQ(after.count(names[i]), 0u) << names[i];
    } else {
      EXPECT_EQ(after.at(names[i]), keys.at(names[i])) << names[i];
    }
  }
  // A removed name that comes back is a new entry with its hash's key.
  ASSERT_TRUE(Add(names[0], 1).ok());
  EXPECT_EQ(KeysByName().at(names[0]), keys.at(names[0]));
}

TEST_F(DirIndexTest, ACollidingHashTakesTheLowestFreeCollisionIndex) {
  // XXH3 collisions cannot be made on demand: plant records with other
  // names under "victim"'s hash directly in the tree, as a collision would.
  FillUntilTree();
  ASSERT_EQ(dir_.format, ForkFormat::kBtree);
  const std::uint64_t h = DirHashKey("victim");
  ASSERT_TRUE(InsertRaw(h | 0, "impostor-0", 800).ok());
  ASSERT_TRUE(InsertRaw(h | 2, "impostor-2", 802).ok());
  ASSERT_TRUE(Add("victim", 900).ok());
  auto keys = KeysByName();
  EXPECT_EQ(keys.at("victim"), h | 1);
  EXPECT_EQ(Lookup("victim")->ino, 900u);
  // A second name on the same hash would take index 3; a duplicate is refused.
  EXPECT_EQ(Add("victim", 901).code(), StatusCode::kAlreadyExists);
  // Removing a colliding neighbour does not move the victim's key.
  {
    Btree tree({.cache = cache_.get(), .alloc = alloc_.get(), .sb = &sb_, .type = format::BlockType::kDirectory,
                .owner = dir_.ino, .goal = dir_.ino / sb_.inodes_per_block()});
    ASSERT_TRUE(Change([&](FsTransaction* tx) {
      BtreeRoot root = GetForkRoot(dir_.literal, 0);
      WALFS_RETURN_IF_ERROR(tree.Erase(tx, &root, h | 0));
      PutForkRoot(&dir_.literal, 0, root);
      return Status::Ok();
    }).ok());
  }
  EXPECT_EQ(KeysByName().at("victim"), h | 1);
  ASSERT_TRUE(Replace("victim", 901).ok());
  EXPECT_EQ(Lookup("victim")->ino, 901u);
  EXPECT_EQ(KeysByName().at("victim"), h | 1);
  ASSERT_TRUE(Remove("victim").ok());
  EXPECT_FALSE(Lookup("victim").has_value());
  EXPECT_EQ(KeysByName().at("impostor-2"), h | 2);
  // Back again: the lowest free index is now 0.
  ASSERT_TRUE(Add("victim", 902).ok());
  EXPECT_EQ(KeysByName().at("victim"), h | 0);
}

TEST_F(DirIndexTest, RemovingEveryNameFromATreeFreesItsBlocksAndDestroyIsClean) {
  const std::uint32_t free_before = FreeBlocks();
  std::vector<std::string> names = FillUntilTree(400);
  ASSERT_EQ(dir_.format, ForkFormat::kBtree);
  const std::uint32_t blocks = TreeBlocks();
  EXPECT_GT(blocks, 1u);
  EXPECT_EQ(free_before - FreeBlocks(), blocks);
  for (const std::string& n : names) ASSERT_TRUE(Remove(n).ok()) << n;
  EXPECT_TRUE(*dirs_->Empty(dir_));
  EXPECT_EQ(FreeBlocks(), free_before);
  ASSERT_TRUE(Change([&](FsTransaction* tx) { return dirs_->Destroy(tx, &dir_); }).ok());
  EXPECT_EQ(TreeBlocks(), 0u);
  EXPECT_EQ(FreeBlocks(), free_before);
}

TEST_F(DirIndexTest, DestroyFreesATreeDirectorysBlocks) {
  const std::uint32_t free_before = FreeBlocks();
  std::vector<std::string> names = FillUntilTree();
  ASSERT_EQ(TreeBlocks(), 1u);
  EXPECT_EQ(FreeBlocks(), free_before - 1);
  // Destroy drops records without visiting them (the caller checked the
  // directory is empty); its blocks go back either way.
  ASSERT_TRUE(Change([&](FsTransaction* tx) { return dirs_->Destroy(tx, &dir_); }).ok());
  EXPECT_TRUE(GetForkRoot(dir_.literal, 0).empty());
  EXPECT_EQ(TreeBlocks(), 0u);
  EXPECT_EQ(FreeBlocks(), free_before);
  // Destroying an inline directory is a no-op.
  InodeCore inline_dir = dir_;
  DirIndex::InitLocal(&inline_dir, kParent);
  ASSERT_TRUE(Change([&](FsTransaction* tx) { return dirs_->Destroy(tx, &inline_dir); }).ok());
}

TEST_F(DirIndexTest, ADirectoryIndexSurvivesACleanRemount) {
  std::vector<std::string> names = FillUntilTree(300);
  const auto keys = KeysByName();
  dirs_.reset();
  Stop();
  Open();
  dirs_ = std::make_unique<DirIndex>(cache_.get(), alloc_.get(), &sb_);
  EXPECT_EQ(KeysByName(), keys);
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(Lookup(names[i])->ino, 1000 + i);
}

TEST_F(DirIndexTest, TwentyThousandNamesWithRandomRemovalsAgreeWithAMap) {
  std::mt19937_64 rng(20000);
  std::map<std::string, std::uint64_t> oracle;  // name -> ino
  std::map<std::string, std::uint64_t> key_of;  // name -> key when added
  std::vector<std::string> live;
  for (int i = 0; i < 20000; ++i) {
    std::string name = "f" + std::to_string(rng() % 1000000000) + "-" + std::to_string(i);
    ASSERT_TRUE(Add(name, 10000 + i).ok()) << name;
    oracle[name] = 10000 + i;
    live.push_back(name);
    // Now and then remove a random live name.
    if (rng() % 4 == 0) {
      const std::size_t at = rng() % live.size();
      std::swap(live[at], live.back());
      ASSERT_TRUE(Remove(live.back()).ok()) << live.back();
      oracle.erase(live.back());
      live.pop_back();
    }
    if (i == 10000) key_of = KeysByName();
  }
  const std::vector<Entry> l = List();
  ASSERT_EQ(l.size(), oracle.size());
  std::map<std::string, std::uint64_t> seen;
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(l[i - 1].key, l[i].key);
    }
    EXPECT_EQ(l[i].key & ~kIndexMask, DirHashKey(l[i].name));
    seen[l[i].name] = l[i].t.ino;
  }
  EXPECT_EQ(seen, oracle);
  // Names alive at the midpoint and still alive kept their keys.
  const auto now = KeysByName();
  for (const auto& [name, key] : key_of)
    if (now.count(name)) {
      EXPECT_EQ(now.at(name), key) << name;
    }
  for (int i = 0; i < 200; ++i) {
    const std::string& name = live[rng() % live.size()];
    auto t = Lookup(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(t->ino, oracle.at(name));
  }
  EXPECT_FALSE(Lookup("not-there").has_value());
}

}  // namespace
}  // namespace walfs::fs
