// Specs of reassembling transactions from log ops: only committed ones
// count, split bodies are joined, and malformed streams are corruption.
#include "journal/log_transactions.h"

#include <gtest/gtest.h>

namespace walfs::journal {
namespace {

void Op(std::string* p, std::uint32_t tid, std::uint8_t flags, std::string_view body = "",
        ItemType type = ItemType::kBuffer) {
  if (body.empty() && !(flags & ~(kOpStart | kOpCommit))) type = ItemType::kNone;
  AppendOp(p, OpHeader{tid, static_cast<std::uint32_t>(body.size()), flags, type}, body);
}

TEST(TransactionAssembler, OnlyCommittedTransactionsComeOutInCommitOrder) {
  TransactionAssembler tx;
  std::string r1, r2;
  Op(&r1, 1, kOpStart);
  Op(&r1, 1, 0, "one-a");
  Op(&r1, 2, kOpStart);
  Op(&r1, 2, 0, "two-a");
  Op(&r1, 3, kOpStart);          // never commits
  Op(&r1, 3, 0, "three-a");
  Op(&r2, 2, kOpCommit);         // 2 commits before 1
  Op(&r2, 1, 0, "one-b");
  Op(&r2, 1, kOpCommit);
  ASSERT_TRUE(tx.AddRecord(MakeLsn(1, 0), r1).ok());
  ASSERT_TRUE(tx.AddRecord(MakeLsn(1, 8), r2).ok());
  ASSERT_EQ(tx.committed().size(), 2u);
  EXPECT_EQ(tx.committed()[0].tid, 2u);
  EXPECT_EQ(tx.committed()[1].tid, 1u);
  ASSERT_EQ(tx.committed()[1].items.size(), 2u);
  EXPECT_EQ(tx.committed()[1].items[1].body, "one-b");
  EXPECT_EQ(tx.committed()[1].start_lsn, MakeLsn(1, 0));
  EXPECT_EQ(tx.committed()[1].commit_lsn, MakeLsn(1, 8));
  EXPECT_EQ(tx.open(), 1u);
}

TEST(TransactionAssembler, ABodySplitAcrossRecordsIsJoined) {
  TransactionAssembler tx;
  std::string r1, r2;
  Op(&r1, 7, kOpStart);
  Op(&r1, 7, kOpContinue, "first half, ");
  Op(&r2, 7, kOpWasCont, "second half");
  Op(&r2, 7, kOpCommit);
  ASSERT_TRUE(tx.AddRecord(MakeLsn(1, 0), r1).ok());
  ASSERT_TRUE(tx.AddRecord(MakeLsn(1, 4), r2).ok());
  ASSERT_EQ(tx.committed().size(), 1u);
  ASSERT_EQ(tx.committed()[0].items.size(), 1u);
  EXPECT_EQ(tx.committed()[0].items[0].body, "first half, second half");
}

TEST(TransactionAssembler, OpsOfATransactionStartedBeforeTheTailAreIgnored) {
  TransactionAssembler tx;
  std::string r;
  Op(&r, 4, 0, "tail end of an old transaction");
  Op(&r, 4, kOpCommit);
  ASSERT_TRUE(tx.AddRecord(MakeLsn(2, 0), r).ok());
  EXPECT_TRUE(tx.committed().empty());
  EXPECT_EQ(tx.orphan_ops(), 2u);
}

TEST(TransactionAssembler, SkippableItemTypesAreSkippedAndOthersRefused) {
  TransactionAssembler tx;
  std::string ok;
  Op(&ok, 1, kOpStart);
  Op(&ok, 1, 0, "future item", static_cast<ItemType>(200));
  Op(&ok, 1, kOpCommit);
  ASSERT_TRUE(tx.AddRecord(MakeLsn(1, 0), ok).ok());
  EXPECT_EQ(tx.skipped_ops(), 1u);
  EXPECT_TRUE(tx.committed()[0].items.empty());

  TransactionAssembler tx2;
  std::string bad;
  Op(&bad, 1, kOpStart);
  Op(&bad, 1, 0, "?", static_cast<ItemType>(77));
  Status s = tx2.AddRecord(MakeLsn(1, 0), bad);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("unknown type 77"), std::string_view::npos);
}

TEST(TransactionAssembler, MalformedStreamsAreCorruption) {
  {
    TransactionAssembler tx;
    std::string r;
    Op(&r, 1, kOpStart);
    Op(&r, 1, kOpStart);
    EXPECT_TRUE(tx.AddRecord(MakeLsn(1, 0), r).IsCorruption());
  }
  {
    TransactionAssembler tx;
    std::string r;
    Op(&r, 1, kOpStart);
    Op(&r, 1, kOpWasCont, "nothing to continue");
    EXPECT_TRUE(tx.AddRecord(MakeLsn(1, 0), r).IsCorruption());
  }
  {
    TransactionAssembler tx;
    std::string r;
    Op(&r, 1, kOpStart);
    Op(&r, 1, kOpContinue, "split");
    Op(&r, 1, kOpCommit);
    EXPECT_TRUE(tx.AddRecord(MakeLsn(1, 0), r).IsCorruption());
  }
  {
    TransactionAssembler tx;
    std::string r;
    Op(&r, 1, kOpStart);
    r.resize(r.size() - 3);  // a cut op header
    EXPECT_TRUE(tx.AddRecord(MakeLsn(1, 0), r).IsCorruption());
  }
}

TEST(TransactionAssembler, UnmountOpsAreCountedNotReplayed) {
  TransactionAssembler tx;
  std::string r;
  AppendOp(&r, OpHeader{9, 0, kOpUnmount, ItemType::kNone}, "");
  ASSERT_TRUE(tx.AddRecord(MakeLsn(1, 0), r).ok());
  EXPECT_EQ(tx.unmount_ops(), 1u);
  EXPECT_TRUE(tx.committed().empty());
}

}  // namespace
}  // namespace walfs::journal
