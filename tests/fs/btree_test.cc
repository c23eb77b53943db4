// Specs of the B+tree (fs/btree.h) and its node format
// (fs/format/btree_format.h): lookups, inserts, replaces and erases against
// a std::map oracle, splits up to three levels, the height limit, freeing
// every block again, destroying a tree in steps, persistence across a clean
// remount and a crash, and corrupt nodes reported rather than trusted.
#include "fs/btree.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/coding.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using format::BlockType;
using Oracle = std::map<std::uint64_t, std::string>;

constexpr std::uint64_t kOwner = 4242;

std::string Value(std::uint64_t key, std::size_t len) {
  std::string v(len, '\0');
  for (std::size_t i = 0; i < len; ++i) v[i] = static_cast<char>('a' + (key * 7 + i) % 26);
  return v;
}

class BtreeTest : public testing::FsFixture {
 protected:
  Btree Tree(std::uint32_t max_levels = 5) {
    return Btree({.cache = cache_.get(), .alloc = alloc_.get(), .sb = &sb_,
                  .type = BlockType::kDirectory, .owner = kOwner,
                  .goal = sb_.AgStart(1) + 64, .max_levels = max_levels});
  }

  // Inserts (key, value) pairs a few to a transaction (each one's log
  // reservation is bounded).
  void InsertAll(BtreeRoot* root, const std::vector<std::pair<std::uint64_t, std::string>>& records,
                 Oracle* oracle = nullptr, std::uint32_t max_levels = 5) {
    Btree tree = Tree(max_levels);
    for (std::size_t i = 0; i < records.size();) {
      auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
      ASSERT_TRUE(tx.ok()) << tx.status().ToString();
      for (std::size_t n = 0; n < kPerTransaction && i < records.size(); ++n, ++i) {
        Status s = tree.Insert(&*tx, root, records[i].first, records[i].second);
        ASSERT_TRUE(s.ok()) << "key " << records[i].first << ": " << s.ToString();
        if (oracle) (*oracle)[records[i].first] = records[i].second;
      }
      ASSERT_TRUE(tx->Commit().ok());
    }
  }
  void EraseAll(BtreeRoot* root, const std::vector<std::uint64_t>& keys, Oracle* oracle = nullptr) {
    Btree tree = Tree();
    for (std::size_t i = 0; i < keys.size();) {
      auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kRemove);
      ASSERT_TRUE(tx.ok()) << tx.status().ToString();
      for (std::size_t n = 0; n < kPerTransaction && i < keys.size(); ++n, ++i) {
        Status s = tree.Erase(&*tx, root, keys[i]);
        ASSERT_TRUE(s.ok()) << "key " << keys[i] << ": " << s.ToString();
        if (oracle) oracle->erase(keys[i]);
      }
      ASSERT_TRUE(tx->Commit().ok());
    }
  }
  // The tree holds exactly the oracle's records, in order.
  void ExpectMatches(const BtreeRoot& root, const Oracle& oracle) {
    Btree tree = Tree();
    std::vector<std::pair<std::uint64_t, std::string>> seen;
    Status s = tree.Scan(root, 0, [&](std::uint64_t k, std::string_view v) {
      seen.emplace_back(k, std::string(v));
      return true;
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(seen.size(), oracle.size());
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), oracle.begin(),
                           [](const auto& a, const auto& b) { return a.first == b.first && a.second == b.second; }));
  }
  // Records of `n` keys spread over the key space, values of `len` bytes.
  static std::vector<std::pair<std::uint64_t, std::string>> Records(std::size_t n, std::size_t len,
                                                                    std::uint64_t stride = 1000) {
    std::vector<std::pair<std::uint64_t, std::string>> r;
    for (std::size_t i = 0; i < n; ++i) r.emplace_back((i + 1) * stride, Value(i, len));
    return r;
  }
  std::uint32_t BlockCount(const BtreeRoot& root, const FsTransaction* tx = nullptr) {
    std::uint32_t n = 0;
    EXPECT_TRUE(Tree().ForEachBlock(root, [&](std::uint64_t) { ++n; }, tx).ok());
    return n;
  }

  static constexpr std::size_t kPerTransaction = 4;
};

TEST_F(BtreeTest, AnEmptyTreeHasNothingToGetScanOrErase) {
  Btree tree = Tree();
  BtreeRoot root;
  auto v = tree.Get(root, 1);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->has_value());
  auto f = tree.Floor(root, ~0ull);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->has_value());
  int calls = 0;
  EXPECT_TRUE(tree.Scan(root, 0, [&](std::uint64_t, std::string_view) { return ++calls, true; }).ok());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(BlockCount(root), 0u);
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kRemove);
  ASSERT_TRUE(tx.ok());
  EXPECT_TRUE(tree.Erase(&*tx, &root, 1).code() == StatusCode::kNotFound);
  EXPECT_TRUE(tree.Replace(&*tx, &root, 1, "x").code() == StatusCode::kNotFound);
  auto done = tree.DestroySome(&*tx, &root, 4);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_TRUE(tx->Commit().ok());
}

TEST_F(BtreeTest, InsertedRecordsCanBeReadReplacedAndErased) {
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, {{30, "thirty"}, {10, "ten"}, {20, ""}}, &oracle);
  EXPECT_EQ(root.levels, 1);
  Btree tree = Tree();
  EXPECT_EQ(*tree.Get(root, 10), std::optional<std::string>("ten"));
  EXPECT_EQ(*tree.Get(root, 20), std::optional<std::string>(""));
  EXPECT_FALSE(tree.Get(root, 15)->has_value());
  {
    auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(tree.Replace(&*tx, &root, 10, "TEN").ok());           // same length, in place
    ASSERT_TRUE(tree.Replace(&*tx, &root, 20, "twenty").ok());        // longer
    ASSERT_TRUE(tree.Replace(&*tx, &root, 30, "3").ok());             // shorter
    EXPECT_TRUE(tree.Replace(&*tx, &root, 40, "x").code() == StatusCode::kNotFound);
    // Reading inside the transaction that holds the nodes.
    EXPECT_EQ(*tree.Get(root, 20, &*tx), std::optional<std::string>("twenty"));
    ASSERT_TRUE(tree.Erase(&*tx, &root, 30).ok());
    EXPECT_TRUE(tree.Erase(&*tx, &root, 30).code() == StatusCode::kNotFound);
    ASSERT_TRUE(tx->Commit().ok());
  }
  ExpectMatches(root, {{10, "TEN"}, {20, "twenty"}});
}

TEST_F(BtreeTest, ADuplicateKeyIsAlreadyExistsAndKeepsTheOldValue) {
  BtreeRoot root;
  InsertAll(&root, {{7, "first"}});
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
  ASSERT_TRUE(tx.ok());
  Status s = Tree().Insert(&*tx, &root, 7, "second");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(*Tree().Get(root, 7), std::optional<std::string>("first"));
}

TEST_F(BtreeTest, AValueOverTheLimitIsInvalidArgument) {
  const std::size_t max = Btree::MaxValueSize(sb_.block_size);
  EXPECT_GE(max, sb_.block_size / 4);
  BtreeRoot root;
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ(Tree().Insert(&*tx, &root, 1, std::string(max + 1, 'x')).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(root.empty());
  ASSERT_TRUE(Tree().Insert(&*tx, &root, 1, std::string(max, 'x')).ok());
  EXPECT_EQ(Tree().Replace(&*tx, &root, 1, std::string(max + 1, 'x')).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(tx->Commit().ok());
}

TEST_F(BtreeTest, FloorFindsTheLargestKeyAtOrBelow) {
  BtreeRoot root;
  InsertAll(&root, {{10, "a"}, {20, "b"}, {30, "c"}});
  Btree tree = Tree();
  EXPECT_FALSE(tree.Floor(root, 9)->has_value());
  EXPECT_EQ((*tree.Floor(root, 10))->key, 10u);
  EXPECT_EQ((*tree.Floor(root, 29))->value, "b");
  EXPECT_EQ((*tree.Floor(root, ~0ull))->key, 30u);
  std::vector<std::uint64_t> from25;
  ASSERT_TRUE(tree.Scan(root, 25, [&](std::uint64_t k, std::string_view) {
    from25.push_back(k);
    return true;
  }).ok());
  EXPECT_EQ(from25, std::vector<std::uint64_t>{30});
}

// 20,000 random keys with random small values, half of them erased again:
// scans, gets and floors agree with a std::map throughout.
TEST_F(BtreeTest, RandomKeysAgreeWithAMapOracle) {
  std::mt19937_64 rng(12345);
  Oracle oracle;
  std::vector<std::pair<std::uint64_t, std::string>> records;
  while (records.size() < 20000) {
    const std::uint64_t k = rng() >> (rng() % 48);  // dense and sparse regions
    if (oracle.count(k)) continue;
    oracle[k] = Value(k, rng() % 48);
    records.emplace_back(k, oracle[k]);
  }
  oracle.clear();
  BtreeRoot root;
  InsertAll(&root, records, &oracle);
  EXPECT_GE(root.levels, 2);
  ExpectMatches(root, oracle);

  std::vector<std::uint64_t> erase;
  for (std::size_t i = 0; i < records.size(); i += 2) erase.push_back(records[i].first);
  EraseAll(&root, erase, &oracle);
  ExpectMatches(root, oracle);
  Btree tree = Tree();
  for (int probe = 0; probe < 2000; ++probe) {
    const std::uint64_t k = probe % 2 ? records[rng() % records.size()].first : rng() >> (rng() % 48);
    auto got = tree.Get(root, k);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    auto it = oracle.find(k);
    EXPECT_EQ(got->has_value(), it != oracle.end()) << k;
    if (it != oracle.end() && got->has_value()) {
      EXPECT_EQ(**got, it->second);
    }
    auto floor = tree.Floor(root, k);
    ASSERT_TRUE(floor.ok()) << floor.status().ToString();
    auto up = oracle.upper_bound(k);
    if (up == oracle.begin()) {
      EXPECT_FALSE(floor->has_value()) << k;
    } else {
      ASSERT_TRUE(floor->has_value()) << k;
      EXPECT_EQ((*floor)->key, std::prev(up)->first);
      EXPECT_EQ((*floor)->value, std::prev(up)->second);
    }
    // ScanFromFloor: the same records as Scan from the floor (or from k).
    auto it2 = up == oracle.begin() ? oracle.lower_bound(k) : std::prev(up);
    std::vector<std::uint64_t> want, got_keys;
    for (int n = 0; it2 != oracle.end() && n < 5; ++it2, ++n) want.push_back(it2->first);
    ASSERT_TRUE(tree.ScanFromFloor(root, k, [&](std::uint64_t key, std::string_view v) {
      EXPECT_EQ(v, oracle[key]);
      got_keys.push_back(key);
      return got_keys.size() < 5;
    }).ok());
    EXPECT_EQ(got_keys, want) << k;
  }
  // A scan from the middle starts at the first key at or above it.
  const std::uint64_t mid = std::next(oracle.begin(), static_cast<std::ptrdiff_t>(oracle.size() / 2))->first;
  std::uint64_t first = 0;
  ASSERT_TRUE(tree.Scan(root, mid - 1, [&](std::uint64_t k, std::string_view) { return first = k, false; }).ok());
  EXPECT_EQ(first, oracle.lower_bound(mid - 1)->first);
}

// The largest values fit three to a leaf: a few hundred records make a
// tree of three levels, and every block it allocated is counted.
TEST_F(BtreeTest, LargeValuesSplitUpToThreeLevels) {
  const std::uint32_t free_before = FreeBlocks();
  const std::size_t max = Btree::MaxValueSize(sb_.block_size);
  BtreeRoot root;
  Oracle oracle;
  std::size_t n = 0;
  std::vector<std::uint8_t> heights;
  while (root.levels < 3) {
    InsertAll(&root, {{(n * 7919) % 100003, Value(n, max - n % 5)}}, &oracle);
    ++n;
    if (heights.empty() || heights.back() != root.levels) heights.push_back(root.levels);
    ASSERT_LT(n, 3000u);
  }
  EXPECT_EQ(heights, (std::vector<std::uint8_t>{1, 2, 3}));
  ExpectMatches(root, oracle);
  EXPECT_EQ(free_before - FreeBlocks(), BlockCount(root));
}

// Small values: hundreds of records a leaf, splits only in the leaves.
TEST_F(BtreeTest, SmallValuesFillLeavesBeforeSplitting) {
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, Records(600, 4, 3), &oracle);
  EXPECT_EQ(root.levels, 2);
  EXPECT_LE(BlockCount(root), 8u);
  ExpectMatches(root, oracle);
}

TEST_F(BtreeTest, GrowingAValueSplitsItsLeaf) {
  const std::size_t max = Btree::MaxValueSize(sb_.block_size);
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, {{1, Value(1, max)}, {2, "small"}, {3, Value(3, max)}, {4, Value(4, 1000)}}, &oracle);
  ASSERT_EQ(root.levels, 1);
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Tree().Replace(&*tx, &root, 2, Value(2, max)).ok());
  ASSERT_TRUE(tx->Commit().ok());
  oracle[2] = Value(2, max);
  EXPECT_EQ(root.levels, 2);
  ExpectMatches(root, oracle);
}

TEST_F(BtreeTest, AnInsertPastMaxLevelsIsNoSpaceAndChangesNothing) {
  const std::size_t max = Btree::MaxValueSize(sb_.block_size);
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, {{1, Value(1, max - 20)}, {2, Value(2, max - 20)}, {3, Value(3, max - 20)}}, &oracle, 1);
  const BtreeRoot before = root;
  const std::uint32_t free_before = FreeBlocks();
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
  ASSERT_TRUE(tx.ok());
  Status s = Tree(1).Insert(&*tx, &root, 4, Value(4, max));
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_FALSE(tx->tx().dirty());
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(root, before);
  EXPECT_EQ(FreeBlocks(), free_before);
  ExpectMatches(root, oracle);
  // A small record still fits in the leaf: the limit is on height only.
  InsertAll(&root, {{4, "tiny"}}, &oracle, 1);
  ExpectMatches(root, oracle);
}

// A change made without a block reservation (a rename on a full
// filesystem) may use the room a leaf has, and nothing more.
TEST_F(BtreeTest, WithoutMayAllocateAnInsertThatWouldSplitIsNoSpaceAndChangesNothing) {
  const std::size_t max = Btree::MaxValueSize(sb_.block_size);
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, {{1, Value(1, max - 20)}, {2, Value(2, max - 20)}, {3, Value(3, max - 20)}}, &oracle);
  ASSERT_EQ(root.levels, 1);
  Btree::Options o{.cache = cache_.get(), .alloc = alloc_.get(), .sb = &sb_, .type = BlockType::kDirectory,
                   .owner = kOwner, .goal = sb_.AgStart(1) + 64, .may_allocate = false};
  Btree tree(o);
  const BtreeRoot before = root;
  const std::uint32_t free_before = FreeBlocks();
  auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
  ASSERT_TRUE(tx.ok());
  Status s = tree.Insert(&*tx, &root, 4, Value(4, max));
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_FALSE(tx->tx().dirty());
  EXPECT_EQ(root, before);
  EXPECT_EQ(FreeBlocks(), free_before);
  // What fits in the leaf goes in.
  ASSERT_TRUE(tree.Insert(&*tx, &root, 4, "tiny").ok());
  ASSERT_TRUE(tx->Commit().ok());
  oracle[4] = "tiny";
  EXPECT_EQ(root, before);
  ExpectMatches(root, oracle);
  // An empty tree has no room at all.
  BtreeRoot empty;
  auto tx2 = FsTransaction::Begin(log_.get(), journal::TransType::kCreate);
  ASSERT_TRUE(tx2.ok());
  EXPECT_TRUE(tree.Insert(&*tx2, &empty, 1, "x").IsNoSpace());
  EXPECT_TRUE(empty.empty());
  ASSERT_TRUE(tx2->Commit().ok());
}

TEST_F(BtreeTest, EraseOfTheLastRecordFreesTheRoot) {
  const std::uint32_t free_before = FreeBlocks();
  BtreeRoot root;
  InsertAll(&root, {{5, "five"}});
  EXPECT_EQ(FreeBlocks(), free_before - 1);
  EraseAll(&root, {5});
  EXPECT_TRUE(root.empty());
  EXPECT_EQ(root.levels, 0);
  EXPECT_EQ(FreeBlocks(), free_before);
}

// Erasing every record of a three-level tree, in random order, shrinks it
// through every height and gives every block back.
TEST_F(BtreeTest, EraseToEmptyFreesEveryBlock) {
  const std::uint32_t free_before = FreeBlocks();
  const std::size_t max = Btree::MaxValueSize(sb_.block_size);
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, Records(700, max), &oracle);
  ASSERT_EQ(root.levels, 3);
  std::vector<std::uint64_t> keys;
  for (const auto& [k, v] : oracle) keys.push_back(k);
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(7));
  std::set<std::uint8_t> heights;
  for (std::size_t i = 0; i < keys.size(); i += 50) {
    const std::vector<std::uint64_t> batch(keys.begin() + static_cast<std::ptrdiff_t>(i),
                                           keys.begin() + static_cast<std::ptrdiff_t>(std::min(i + 50, keys.size())));
    EraseAll(&root, batch, &oracle);
    heights.insert(root.levels);
    ExpectMatches(root, oracle);
    if (!root.empty()) {
      EXPECT_EQ(free_before - FreeBlocks(), BlockCount(root));
    }
  }
  EXPECT_TRUE(root.empty());
  EXPECT_TRUE(heights.count(0));
  EXPECT_EQ(FreeBlocks(), free_before);
}

// DestroySome in steps of three blocks, two steps a transaction with a
// roll between them: after every transaction the tree is valid, holds a
// prefix of its keys (blocks go from the right), and its blocks are all
// that is allocated.
TEST_F(BtreeTest, DestroySomeFreesTheTreeInSmallValidSteps) {
  const std::uint32_t free_before = FreeBlocks();
  const std::size_t max = Btree::MaxValueSize(sb_.block_size);
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, Records(700, max), &oracle);
  ASSERT_EQ(root.levels, 3);
  Btree tree = Tree();
  std::uint32_t blocks = BlockCount(root);
  int transactions = 0;
  for (bool done = false; !done; ++transactions) {
    auto tx = FsTransaction::Begin(log_.get(), journal::TransType::kTruncate);
    ASSERT_TRUE(tx.ok());
    for (int step = 0; step < 2 && !done; ++step) {
      if (step > 0) {
        ASSERT_TRUE(tx->Roll().ok());
      }
      auto r = tree.DestroySome(&*tx, &root, 3);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      done = *r;
      const std::uint32_t now = BlockCount(root, &*tx);
      EXPECT_LE(blocks - now, 3u);
      EXPECT_GT(blocks, now);
      blocks = now;
    }
    ASSERT_TRUE(tx->Commit().ok());
    EXPECT_EQ(free_before - FreeBlocks(), blocks);
    std::vector<std::uint64_t> left;
    ASSERT_TRUE(tree.Scan(root, 0, [&](std::uint64_t k, std::string_view) {
      left.push_back(k);
      return true;
    }).ok());
    ASSERT_LE(left.size(), oracle.size());
    EXPECT_TRUE(std::equal(left.begin(), left.end(), oracle.begin(),
                           [](std::uint64_t a, const auto& b) { return a == b.first; }));
  }
  EXPECT_TRUE(root.empty());
  EXPECT_GT(transactions, 50);
  EXPECT_EQ(FreeBlocks(), free_before);
}

TEST_F(BtreeTest, ATreeSurvivesACleanRemount) {
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, Records(300, 200), &oracle);
  ASSERT_GE(root.levels, 2);
  const std::uint32_t free_before = FreeBlocks();
  Stop();
  Open();
  ExpectMatches(root, oracle);
  EXPECT_EQ(FreeBlocks(), free_before);
}

// Committed and forced changes come back through recovery alone: the AIL
// never wrote the nodes in place.
TEST_F(BtreeTest, ATreeSurvivesACrashThroughRecovery) {
  BtreeRoot root;
  Oracle oracle;
  InsertAll(&root, Records(300, 200), &oracle);
  std::vector<std::uint64_t> erase;
  for (std::uint64_t k = 1; k <= 300; k += 3) erase.push_back(k * 1000);
  EraseAll(&root, erase, &oracle);
  ASSERT_TRUE(log_->Force().ok());
  log_->ail().Stop();
  Stop(/*crash=*/true);
  Open();
  ExpectMatches(root, oracle);
}

// Byte-level damage to nodes on disk is Corruption from every reader, and
// a pointer to the wrong node (with a valid CRC) is caught by what the
// parent promises.
class BtreeCorruptionTest : public BtreeTest {
 protected:
  void SetUp() override {
    BtreeTest::SetUp();
    InsertAll(&root_, Records(100, 400), &oracle_);
    ASSERT_EQ(root_.levels, 2);
    Stop();
  }
  std::vector<std::byte> ReadBlock(std::uint64_t b) {
    std::vector<std::byte> block(sb_.block_size);
    EXPECT_TRUE(dev_.Read(b * sb_.block_size, block.data(), block.size()).ok());
    return block;
  }
  void WriteBlock(std::uint64_t b, const std::vector<std::byte>& block) {
    ASSERT_TRUE(dev_.Write(b * sb_.block_size, block.data(), block.size()).ok());
  }
  BtreeRoot root_;
  Oracle oracle_;
};

TEST_F(BtreeCorruptionTest, AFlippedByteInALeafIsCorruption) {
  const std::vector<std::byte> root = ReadBlock(root_.block);
  const std::uint64_t leaf = format::BtreeChild(root, 1);
  const std::uint64_t key_in_leaf = format::BtreeKey(root, 1);
  std::vector<std::byte> block = ReadBlock(leaf);
  block[sb_.block_size - 3] ^= std::byte{0x40};
  WriteBlock(leaf, block);
  Open();
  Btree tree = Tree();
  auto v = tree.Get(root_, key_in_leaf);
  EXPECT_TRUE(v.status().IsCorruption()) << v.status().ToString();
  EXPECT_TRUE(tree.Scan(root_, 0, [](std::uint64_t, std::string_view) { return true; }).IsCorruption());
  EXPECT_TRUE(tree.ForEachBlock(root_, [](std::uint64_t) {}).IsCorruption());
  // Other leaves still read.
  auto other = tree.Get(root_, oracle_.begin()->first);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(**other, oracle_.begin()->second);
}

TEST_F(BtreeCorruptionTest, APointerToTheWrongNodeIsCorruption) {
  std::vector<std::byte> root = ReadBlock(root_.block);
  // Entry 1 points to entry 2's leaf; the CRC is made valid again.
  EncodeFixed64(reinterpret_cast<char*>(root.data()) + format::kBtreeHeaderSize + 16 + 8,
                format::BtreeChild(root, 2));
  format::SealBlock(root);
  WriteBlock(root_.block, root);
  Open();
  auto v = Tree().Get(root_, format::BtreeKey(root, 1));
  EXPECT_TRUE(v.status().IsCorruption()) << v.status().ToString();
  // And a root that is not at the height the owner recorded.
  BtreeRoot wrong = root_;
  wrong.levels = 3;
  EXPECT_TRUE(Tree().Get(wrong, 1).status().IsCorruption());
}

// ---- The node format ----

class BtreeFormatTest : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kSize = 1024;
  static constexpr std::uint64_t kBlk = 77;
  BtreeFormatTest() : block_(kSize) {
    const std::vector<std::pair<std::uint64_t, std::string>> records{{1, "one"}, {5, "five"}, {9, ""}};
    format::EncodeBtreeLeaf(block_, {.blkno = kBlk, .owner = 3, .uuid = uuid_}, records);
    format::SealBlock(block_);
  }
  Status Verify() { return format::VerifyBtreeNode(block_, kBlk, uuid_); }
  // Changes a u16 at `offset` and reseals, so that only the structure is wrong.
  Status VerifyWith16(std::uint32_t offset, std::uint16_t v) {
    EncodeFixed16(reinterpret_cast<char*>(block_.data()) + offset, v);
    format::SealBlock(block_);
    return Verify();
  }
  std::uint16_t Slot(std::uint32_t i) {
    return DecodeFixed16(reinterpret_cast<const char*>(block_.data()) + format::kBtreeHeaderSize + 2 * i);
  }
  format::Uuid uuid_{1, 2, 3};
  std::vector<std::byte> block_;
};

TEST_F(BtreeFormatTest, AWellFormedLeafVerifiesAndReads) {
  ASSERT_TRUE(Verify().ok()) << Verify().ToString();
  EXPECT_EQ(format::BtreeValue(block_, 1), "five");
  EXPECT_EQ(format::BtreeLowerBound(block_, 6), 2u);
  EXPECT_EQ(format::BtreeLeafFree(block_),
            kSize - format::kBtreeHeaderSize - 3 * 12 - 3 - 4);
}

TEST_F(BtreeFormatTest, ChangesKeepALeafValid) {
  auto insert = [&](std::uint32_t i, std::uint64_t k, std::size_t len) {
    format::BtreeLeafInsert(block_, i, k, Value(k, len));
    format::SealBlock(block_);
    ASSERT_TRUE(Verify().ok()) << Verify().ToString();
  };
  insert(3, 20, 100);
  format::BtreeLeafRemove(block_, 1);  // a hole in the middle
  format::BtreeLeafReplace(block_, 0, "uno!");
  format::SealBlock(block_);
  ASSERT_TRUE(Verify().ok()) << Verify().ToString();
  // Fill it until only compaction makes room.
  std::uint64_t k = 100;
  while (format::BtreeLeafFree(block_) >= format::BtreeRecordCost(60))
    insert(format::DecodeBtreeNodeHeader(block_).nrecs, k++, 60);
  EXPECT_EQ(format::BtreeKey(block_, 0), 1u);
  EXPECT_EQ(format::BtreeValue(block_, 0), "uno!");
}

TEST_F(BtreeFormatTest, DamageIsCorruptionWithAReason) {
  auto expect_bad = [](Status s, std::string_view what) {
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.ToString().find(what), std::string::npos) << s.ToString();
  };
  const std::vector<std::byte> good = block_;
  block_[kSize - 1] ^= std::byte{1};
  expect_bad(Verify(), "CRC");
  block_ = good;
  expect_bad(format::VerifyBtreeNode(block_, kBlk + 1, uuid_), "belongs at block");
  expect_bad(VerifyWith16(format::kBtreeNrecsOffset, 600), "slots do not fit");
  block_ = good;
  expect_bad(VerifyWith16(format::kBtreeNrecsOffset, 0), "empty");
  block_ = good;
  expect_bad(VerifyWith16(format::kBtreeDataStartOffset, 10), "data_start");
  block_ = good;
  expect_bad(VerifyWith16(format::kBtreeHeaderSize, static_cast<std::uint16_t>(kSize - 4)), "outside");
  block_ = good;
  expect_bad(VerifyWith16(format::kBtreeHeaderSize, Slot(1)), "does not follow");  // unsorted
  block_ = good;
  expect_bad(VerifyWith16(Slot(1) + 8, 6), "overlap");  // "five" grows into "one"
  block_ = good;
  expect_bad(VerifyWith16(Slot(0) + 8, 900), "value");
  block_ = good;
  expect_bad(VerifyWith16(format::kBtreeLevelOffset, 1), "magic does not match");
  block_ = good;
  expect_bad(VerifyWith16(format::kBtreePadOffset, 1), "pad");
}

TEST_F(BtreeFormatTest, ABadInternalNodeIsCorruption) {
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> entries{{0, 100}, {50, 101}};
  format::EncodeBtreeInternal(block_, {.blkno = kBlk, .owner = 3, .uuid = uuid_}, 1, entries);
  format::SealBlock(block_);
  ASSERT_TRUE(Verify().ok()) << Verify().ToString();
  EncodeFixed64(reinterpret_cast<char*>(block_.data()) + format::kBtreeHeaderSize + 8, kBlk);
  format::SealBlock(block_);
  EXPECT_TRUE(Verify().IsCorruption());
  format::EncodeBtreeInternal(block_, {.blkno = kBlk, .owner = 3, .uuid = uuid_}, 1,
                              std::vector<std::pair<std::uint64_t, std::uint64_t>>{{50, 100}, {50, 101}});
  format::SealBlock(block_);
  EXPECT_TRUE(Verify().IsCorruption());
}

}  // namespace
}  // namespace walfs::fs
