// Specs of the buffer log item: its op body (encode, decode with every
// corruption refused, apply), the chunk map, and its life with the AIL —
// Format accumulating until writeback, Push's states, writeback completion
// removing it from the AIL unless it was relogged, cancels, write errors.
#include "journal/buf_item.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_fault.h"
#include "base/block_device_memory.h"
#include "base/block_device_worker.h"
#include "base/coding.h"
#include "journal/ail.h"
#include "journal/log.h"
#include "journal/transaction.h"
#include "tests/journal/space_test_util.h"

namespace walfs::journal {
namespace buf_item_test {  // this file's own names (unity builds share one TU)
namespace {

using testing::Eventually;

// ---------------------------------------------------------------------------
// The body format.

std::vector<std::uint32_t> Map(std::uint32_t block_size, std::initializer_list<std::uint32_t> chunks) {
  std::vector<std::uint32_t> m(BufMapWords(block_size));
  for (std::uint32_t c : chunks) m[c / 32] |= 1u << (c % 32);
  return m;
}

// A body logging `chunks` of a block whose byte i is (i * 7 + seed).
BufLogFormat Sample(std::uint32_t block_size, std::initializer_list<std::uint32_t> chunks,
                    char seed = 1) {
  BufLogFormat f;
  f.blkno = 77;
  f.block_size = block_size;
  f.lsn_offset = 8;
  f.chunk_map = Map(block_size, chunks);
  for (std::uint32_t c : chunks)
    for (std::uint32_t i = 0; i < kBufChunkSize; ++i)
      f.data.push_back(static_cast<char>((c * kBufChunkSize + i) * 7 + seed));
  return f;
}

void ExpectSame(const BufLogFormat& a, const BufLogFormat& b) {
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.blkno, b.blkno);
  EXPECT_EQ(a.block_size, b.block_size);
  EXPECT_EQ(a.lsn_offset, b.lsn_offset);
  EXPECT_EQ(a.chunk_map, b.chunk_map);
  EXPECT_EQ(a.data, b.data);
}

TEST(BufLogFormat, EncodeDecodeRoundTripsAtEveryBlockSize) {
  for (std::uint32_t bs = kBufMinBlockSize; bs <= kBufMaxBlockSize; bs *= 2) {
    SCOPED_TRACE(bs);
    const BufLogFormat f = Sample(bs, {0, BufChunks(bs) / 2, BufChunks(bs) - 1});
    const std::string body = EncodeBufLog(f);
    EXPECT_EQ(body.size(), kBufLogHeaderSize + 4 * BufMapWords(bs) + 3 * kBufChunkSize);
    Result<BufLogFormat> back = DecodeBufLog(body);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ExpectSame(*back, f);
  }
}

TEST(BufLogFormat, TheHeaderIsLittleEndianAtFixedOffsets) {
  BufLogFormat f = Sample(4096, {3});
  f.blkno = 0x0102030405060708;
  const std::string body = EncodeBufLog(f);
  EXPECT_EQ(DecodeFixed16(body.data()), kBufLogMagic);
  EXPECT_EQ(DecodeFixed16(body.data() + 2), 0);
  EXPECT_EQ(DecodeFixed64(body.data() + 4), 0x0102030405060708u);
  EXPECT_EQ(DecodeFixed32(body.data() + 12), 4096u);
  EXPECT_EQ(DecodeFixed32(body.data() + 16), 8u);
  EXPECT_EQ(DecodeFixed32(body.data() + 20), 1u << 3);
}

TEST(BufLogFormat, TheWorkedExampleOfTheFormatDoc) {
  // docs/log_format.md, "Buffer items": block 7, bytes 128-255 changed.
  BufLogFormat f;
  f.blkno = 7;
  f.lsn_offset = 8;
  f.chunk_map.assign(BufMapWords(4096), 0);
  SetChunks(&f.chunk_map, 128, 255);
  f.data.assign(kBufChunkSize, 'x');
  const std::string body = EncodeBufLog(f);
  const unsigned char head[] = {0x42, 0x4c, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                0x00, 0x10, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00};
  ASSERT_EQ(body.size(), 152u);
  EXPECT_EQ(body.substr(0, sizeof(head)), std::string(reinterpret_cast<const char*>(head), sizeof(head)));
}

TEST(BufLogFormat, ACancelRoundTripsWithoutChunks) {
  BufLogFormat f;
  f.flags = kBufCancel;
  f.blkno = 9;
  f.chunk_map = Map(4096, {});
  Result<BufLogFormat> back = DecodeBufLog(EncodeBufLog(f));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->cancelled());
  ExpectSame(*back, f);
}

// LevelDB log_test style: take a valid body, break it one way, and check the
// decoder refuses it for the right reason.
class BufLogCorruption : public ::testing::Test {
 protected:
  void SetUp() override { body_ = EncodeBufLog(Sample(4096, {0, 31})); }
  void Put16(std::size_t at, std::uint16_t v) { EncodeFixed16(body_.data() + at, v); }
  void Put32(std::size_t at, std::uint32_t v) { EncodeFixed32(body_.data() + at, v); }
  void Put64(std::size_t at, std::uint64_t v) { EncodeFixed64(body_.data() + at, v); }
  void ExpectRefused(std::string_view reason) {
    Result<BufLogFormat> r = DecodeBufLog(body_);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsCorruption());
    EXPECT_NE(r.status().message().find(reason), std::string_view::npos)
        << "got: " << r.status().message();
  }
  std::string body_;
};

TEST_F(BufLogCorruption, EveryTruncationIsRefused) {
  const std::string whole = body_;
  for (std::size_t n = 0; n < whole.size(); ++n) {
    body_ = whole.substr(0, n);
    EXPECT_FALSE(DecodeBufLog(body_).ok()) << n;
  }
  body_ = whole.substr(0, 5);
  ExpectRefused("the header needs 20");
  body_ = whole.substr(0, 22);
  ExpectRefused("the chunk map needs 4");
  body_ = whole.substr(0, whole.size() - 1);
  ExpectRefused("255 bytes of chunk data, the map says 256");
}

TEST_F(BufLogCorruption, BadMagic) {
  Put16(0, 0x4c43);
  ExpectRefused("magic 0x4c43");
}

TEST_F(BufLogCorruption, UnknownFlags) {
  Put16(2, 0x0080);  // flags byte 0x80; the type byte (3) is free-form
  ExpectRefused("unknown flags 0x80");
}

TEST_F(BufLogCorruption, BlockSizeNotAPowerOfTwoOrOutOfRange) {
  for (std::uint32_t bs : {0u, 256u, 4097u, 3u * 1024, 128u * 1024, 0xFFFFFFFFu}) {
    SetUp();
    Put32(12, bs);
    ExpectRefused("is not a power of two in [512, 65536]");
  }
}

TEST_F(BufLogCorruption, BlockOffsetOverflow) {
  Put64(4, UINT64_MAX / 4096);
  ExpectRefused("past the largest byte offset");
}

TEST_F(BufLogCorruption, DataLongerThanTheMapSays) {
  body_.append(kBufChunkSize, 'x');
  ExpectRefused("384 bytes of chunk data, the map says 256");
}

TEST_F(BufLogCorruption, MapBitsPastTheLastChunk) {
  body_ = EncodeBufLog(Sample(512, {0}));
  Put32(20, 1u | 1u << 4);  // a 512-byte block has chunks 0-3
  ExpectRefused("bits past chunk 3");
}

TEST_F(BufLogCorruption, LsnStampOutsideTheBlock) {
  Put32(16, 4089);
  ExpectRefused("LSN stamp at 4089 does not fit");
  Put32(16, 0xFFFFFFFE);
  ExpectRefused("LSN stamp at 4294967294");
  Put32(16, 4088);  // the last place an 8-byte stamp fits
  EXPECT_TRUE(DecodeBufLog(body_).ok());
}

TEST_F(BufLogCorruption, ACancelCarryingChunks) {
  Put16(2, kBufCancel);
  ExpectRefused("a cancel carries 2 chunk(s)");
}

TEST_F(BufLogCorruption, ABufferWithoutChunks) {
  body_.resize(kBufLogHeaderSize + 4);
  Put32(20, 0);
  ExpectRefused("no chunk logged");
}

TEST(BufLogApply, CopiesEachChunkToItsPlace) {
  const BufLogFormat f = Sample(1024, {1, 7});
  std::vector<std::byte> block(1024, std::byte{0xEE});
  ASSERT_TRUE(ApplyBufLog(f, block).ok());
  for (std::uint32_t i = 0; i < 1024; ++i) {
    const std::uint32_t c = i / kBufChunkSize;
    const std::byte want = c == 1 || c == 7 ? static_cast<std::byte>(i * 7 + 1) : std::byte{0xEE};
    ASSERT_EQ(block[i], want) << i;
  }
}

TEST(BufLogApply, RefusesABlockOfAnotherSizeOrAMalformedFormat) {
  BufLogFormat f = Sample(1024, {1});
  std::vector<std::byte> block(512);
  EXPECT_EQ(ApplyBufLog(f, block).code(), StatusCode::kInvalidArgument);
  block.resize(1024);
  f.data.pop_back();
  EXPECT_EQ(ApplyBufLog(f, block).code(), StatusCode::kInvalidArgument);
}

TEST(BufLogApply, ACancelChangesNothing) {
  BufLogFormat f;
  f.flags = kBufCancel;
  f.chunk_map = Map(4096, {});
  std::vector<std::byte> block(4096, std::byte{5});
  ASSERT_TRUE(ApplyBufLog(f, block).ok());
  EXPECT_EQ(block, std::vector<std::byte>(4096, std::byte{5}));
}

TEST(BufLogStamp, StampsAndReadsBackLittleEndian) {
  std::vector<std::byte> block(512);
  StampBufLsn(block, 504, MakeLsn(3, 17));
  EXPECT_EQ(BufStampedLsn(block, 504), MakeLsn(3, 17));
  EXPECT_EQ(block[504], std::byte{17});
  EXPECT_EQ(BufStampedLsn(block, kBufNoLsn), kNullLsn);
}

TEST(BufChunkMap, RangesMapToChunksAtTheEdges) {
  const auto chunks_of = [](std::uint32_t first, std::uint32_t last) {
    std::vector<std::uint32_t> m(BufMapWords(4096));
    SetChunks(&m, first, last);
    std::vector<std::uint32_t> out;
    for (std::uint32_t c = 0; c < BufChunks(4096); ++c)
      if (ChunkSet(m, c)) out.push_back(c);
    return out;
  };
  using V = std::vector<std::uint32_t>;
  EXPECT_EQ(chunks_of(0, 0), V{0});
  EXPECT_EQ(chunks_of(127, 127), V{0});
  EXPECT_EQ(chunks_of(128, 128), V{1});
  EXPECT_EQ(chunks_of(127, 128), (V{0, 1}));
  EXPECT_EQ(chunks_of(0, 127), V{0});
  EXPECT_EQ(chunks_of(4095, 4095), V{31});
  EXPECT_EQ(chunks_of(3968, 4095), V{31});
  EXPECT_EQ(chunks_of(0, 4095).size(), 32u);
}

// ---------------------------------------------------------------------------
// The item.

constexpr std::uint32_t kSectors = 2048;
constexpr std::uint32_t kBlock = 4096;
constexpr std::uint32_t kLsnOffset = 8;

// Holds every write until opened; reads and flushes pass.
class GateDevice final : public BlockDevice {
 public:
  explicit GateDevice(BlockDevice* inner)
      : BlockDevice(inner->size_bytes(), inner->logical_block_size(), 1), inner_(inner) {}
  ~GateDevice() override {
    Open();
    worker_.Stop();
  }
  std::string_view kind() const override { return "gate"; }
  void Close() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 protected:
  Status DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) override {
    return inner_->Read(offset, buf, len);
  }
  Status DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                 IoFlags flags) override {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return open_; });
    l.unlock();
    return inner_->Write(offset, buf, len, flags);
  }
  Status DoFlush() override { return inner_->Flush(); }
  void DoSubmit(std::vector<IoRequest> batch) override {
    worker_.EnqueueRequests(std::move(batch), [this](const IoRequest& r) { return Execute(r); });
  }

 private:
  BlockDevice* const inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  BlockDeviceWorker worker_{"walfs-gatedev"};
};

class BufLogItemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    space_ = testing::MakeSpace(std::int64_t{kSectors} * kLogSectorSize);
    ail_ = std::make_unique<Ail>(AilOptions{.space = space_.get(), .log_sectors = kSectors});
    // The AIL's head must cover the LSNs items are inserted at.
    TicketRef t = *space_->Reserve(100 * kLogSectorSize, 1, false);
    ASSERT_TRUE(t->Consume(100 * kLogSectorSize));
    space_->TicketUngrant(t.get());
    ail_->AdvanceHead(MakeLsn(1, 100));
  }
  void TearDown() override {
    for (auto& item : items_) ASSERT_TRUE(Eventually([&] { return !item->flushing(); }));
    ail_.reset();  // unlinks what is left
    items_.clear();
  }

  BufLogItem* NewItem(BlockDevice* dev, std::uint64_t blkno,
                      std::function<void(Status)> on_error = nullptr) {
    items_.push_back(std::make_unique<BufLogItem>(BufLogItemOptions{.device = dev,
                                                                    .blkno = blkno,
                                                                    .lsn_offset = kLsnOffset,
                                                                    .ail = ail_.get(),
                                                                    .on_error = on_error}));
    return items_.back().get();
  }
  // Changes bytes [first, last] of the block to `v` and logs them, as a
  // transaction would.
  static void Change(BufLogItem* item, std::uint32_t first, std::uint32_t last, char v) {
    item->Lock();
    std::memset(item->data().data() + first, v, last - first + 1);
    item->LogRange(first, last);
    item->Unlock();
  }
  // Waits for the item's writeback to complete.  in_ail() is read without
  // the AIL lock, so a test reads it only after this, which orders it after
  // the completion's DeleteIfLsn.
  static void WaitWriteback(BufLogItem* item) {
    ASSERT_TRUE(Eventually([&] { return !item->flushing(); }));
  }
  static std::string FormatOf(BufLogItem* item) {
    std::string out;
    item->Lock();
    const bool any = item->Format(&out);
    item->Unlock();
    return any ? out : "";
  }
  void Insert(BufLogItem* item, Lsn lsn) {
    LogItem* items[] = {item};
    ail_->Insert(items, lsn);
  }
  static std::vector<std::byte> Block(MemoryDevice* dev, std::uint64_t blkno) {
    const std::vector<std::byte> all = dev->Contents();
    return {all.begin() + static_cast<std::ptrdiff_t>(blkno * kBlock),
            all.begin() + static_cast<std::ptrdiff_t>((blkno + 1) * kBlock)};
  }

  MemoryDevice disk_{64 * kBlock};
  std::unique_ptr<LogSpace> space_;
  std::unique_ptr<Ail> ail_;
  std::vector<std::unique_ptr<BufLogItem>> items_;
};

TEST_F(BufLogItemTest, ReadLoadsTheBlockFromItsOffset) {
  std::vector<std::byte> content(kBlock, std::byte{0x5A});
  ASSERT_TRUE(disk_.Write(3 * kBlock, content.data(), kBlock).ok());
  BufLogItem* item = NewItem(&disk_, 3);
  item->Lock();
  EXPECT_TRUE(item->Read().ok());
  EXPECT_EQ(item->data()[0], std::byte{0x5A});
  EXPECT_EQ(item->data()[kBlock - 1], std::byte{0x5A});
  item->Unlock();
}

TEST_F(BufLogItemTest, NothingLoggedFormatsNothing) {
  BufLogItem* item = NewItem(&disk_, 1);
  EXPECT_EQ(item->type(), ItemType::kBuffer);
  EXPECT_EQ(FormatOf(item), "");
}

TEST_F(BufLogItemTest, LogRangeMarksTheChunksHoldingTheRange) {
  BufLogItem* item = NewItem(&disk_, 1);
  Change(item, 127, 128, 'x');
  EXPECT_EQ(item->dirty_map(), Map(kBlock, {0, 1}));
  Change(item, 4095, 4095, 'y');
  EXPECT_EQ(item->dirty_map(), Map(kBlock, {0, 1, 31}));
  Change(item, 0, 0, 'z');
  EXPECT_EQ(item->dirty_map(), Map(kBlock, {0, 1, 31}));
}

TEST_F(BufLogItemTest, FormatCarriesTheDirtyChunksAndAccumulatesUntilWriteback) {
  BufLogItem* item = NewItem(&disk_, 1);
  Change(item, 200, 210, 'a');  // chunk 1
  Result<BufLogFormat> first = DecodeBufLog(FormatOf(item));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->blkno, 1u);
  EXPECT_EQ(first->lsn_offset, kLsnOffset);
  EXPECT_EQ(first->chunk_map, Map(kBlock, {1}));
  EXPECT_EQ(first->data.substr(200 - 128, 11), std::string(11, 'a'));

  // A second transaction: its checkpoint must carry chunk 1 again, since the
  // relogged item moves past the checkpoint that logged it.
  Change(item, 1000, 1000, 'b');  // chunk 7
  Result<BufLogFormat> second = DecodeBufLog(FormatOf(item));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->chunk_map, Map(kBlock, {1, 7}));
  EXPECT_EQ(second->data[1000 - 7 * 128 + 128], 'b');

  Insert(item, MakeLsn(1, 10));
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  WaitWriteback(item);
  EXPECT_FALSE(item->in_ail());
  EXPECT_EQ(FormatOf(item), "");  // everything is on disk now
}

TEST_F(BufLogItemTest, ALockedBufferIsNotPushed) {
  BufLogItem* item = NewItem(&disk_, 1);
  Change(item, 0, 0, 'a');
  Insert(item, MakeLsn(1, 10));
  item->Lock();
  EXPECT_EQ(item->Push(), PushResult::kLocked);
  item->Unlock();
  EXPECT_EQ(disk_.stats().writes, 0u);
  EXPECT_EQ(item->Push(), PushResult::kSuccess);
}

TEST_F(BufLogItemTest, PushWritesTheStampedBlockAndLeavesTheAil) {
  BufLogItem* item = NewItem(&disk_, 2);
  Change(item, 300, 400, 'q');
  Insert(item, MakeLsn(1, 10));
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 10));
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  WaitWriteback(item);
  EXPECT_FALSE(item->in_ail());
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 100));  // an empty AIL's tail is its head
  const std::vector<std::byte> b = Block(&disk_, 2);
  EXPECT_EQ(BufStampedLsn(b, kLsnOffset), MakeLsn(1, 10));
  EXPECT_EQ(b[300], std::byte{'q'});
  EXPECT_EQ(b[400], std::byte{'q'});
  EXPECT_EQ(b[401], std::byte{0});
}

TEST_F(BufLogItemTest, TheTypeIsLoggedAndTheSealRunsOnTheWrittenSnapshot) {
  items_.push_back(std::make_unique<BufLogItem>(BufLogItemOptions{
      .device = &disk_,
      .blkno = 5,
      .lsn_offset = kLsnOffset,
      .ail = ail_.get(),
      .type = 42,
      // A stand-in checksum: the stamped LSN's low byte, at byte 0.
      .seal = [](std::span<std::byte> b) { b[0] = b[kLsnOffset]; }}));
  BufLogItem* item = items_.back().get();
  Change(item, 600, 700, 'k');
  Result<BufLogFormat> f = DecodeBufLog(FormatOf(item));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, 42);
  Insert(item, MakeLsn(1, 0x37));
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  WaitWriteback(item);
  const std::vector<std::byte> b = Block(&disk_, 5);
  EXPECT_EQ(b[0], std::byte{0x37});  // sealed after the stamp
  EXPECT_EQ(b[600], std::byte{'k'});
}

TEST_F(BufLogItemTest, ASecondPushWhileTheWriteIsInFlightSaysFlushing) {
  GateDevice gate(&disk_);
  BufLogItem* item = NewItem(&gate, 2);
  Change(item, 0, 0, 'a');
  Insert(item, MakeLsn(1, 10));
  gate.Close();
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  EXPECT_TRUE(item->flushing());
  EXPECT_EQ(item->Push(), PushResult::kFlushing);
  EXPECT_TRUE(item->in_ail());
  gate.Open();
  WaitWriteback(item);
  EXPECT_FALSE(item->in_ail());
}

TEST_F(BufLogItemTest, AnItemReloggedDuringItsWritebackStaysInTheAilWithItsNewChanges) {
  GateDevice gate(&disk_);
  BufLogItem* item = NewItem(&gate, 2);
  Change(item, 0, 0, 'a');      // chunk 0
  Change(item, 700, 700, 'b');  // chunk 5
  Insert(item, MakeLsn(1, 10));
  gate.Close();
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  // The buffer lock was released at submission: a transaction changes chunk
  // 9 and its checkpoint (which carries every chunk not yet on disk) moves
  // the item to 1:20.
  Change(item, 1200, 1200, 'c');
  Result<BufLogFormat> relog = DecodeBufLog(FormatOf(item));
  ASSERT_TRUE(relog.ok());
  EXPECT_EQ(relog->chunk_map, Map(kBlock, {0, 5, 9}));
  Insert(item, MakeLsn(1, 20));
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return !item->flushing(); }));
  EXPECT_TRUE(item->in_ail());
  EXPECT_EQ(item->ail_lsn(), MakeLsn(1, 20));
  // The write covered chunks 0 and 5, not 9.
  EXPECT_EQ(item->dirty_map(), Map(kBlock, {9}));
  EXPECT_EQ(BufStampedLsn(Block(&disk_, 2), kLsnOffset), MakeLsn(1, 10));
  EXPECT_EQ(Block(&disk_, 2)[1200], std::byte{0});

  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  WaitWriteback(item);
  EXPECT_FALSE(item->in_ail());
  EXPECT_EQ(Block(&disk_, 2)[1200], std::byte{'c'});
  EXPECT_EQ(BufStampedLsn(Block(&disk_, 2), kLsnOffset), MakeLsn(1, 20));
}

TEST_F(BufLogItemTest, ACancelledItemLogsACancelAndLeavesWithoutWriting) {
  BufLogItem* item = NewItem(&disk_, 4);
  Change(item, 0, 500, 'z');
  item->Lock();
  item->MarkCancelled();
  std::string body;
  EXPECT_TRUE(item->Format(&body));
  item->Unlock();
  Result<BufLogFormat> f = DecodeBufLog(body);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(f->cancelled());
  EXPECT_EQ(f->blkno, 4u);
  EXPECT_TRUE(f->data.empty());

  Insert(item, MakeLsn(1, 10));
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  WaitWriteback(item);
  EXPECT_FALSE(item->in_ail());
  EXPECT_EQ(disk_.stats().writes, 0u);
  EXPECT_EQ(Block(&disk_, 4), std::vector<std::byte>(kBlock));
}

TEST_F(BufLogItemTest, LoggingACancelledBlockAgainWithdrawsTheCancel) {
  BufLogItem* item = NewItem(&disk_, 4);
  item->Lock();
  item->MarkCancelled();
  EXPECT_TRUE(item->cancelled());
  item->Unlock();
  Change(item, 130, 130, 'n');
  Result<BufLogFormat> f = DecodeBufLog(FormatOf(item));
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->cancelled());
  EXPECT_EQ(f->chunk_map, Map(kBlock, {1}));
}

TEST_F(BufLogItemTest, AWriteErrorCallsTheErrorHookAndKeepsTheItem) {
  FaultDevice faulty(&disk_);
  std::atomic<int> errors{0};
  std::atomic<int> errno_seen{0};
  BufLogItem* item = NewItem(&faulty, 3, [&](Status s) {
    errno_seen = s.ToErrno();
    ++errors;
  });
  Change(item, 0, 0, 'a');
  Insert(item, MakeLsn(1, 10));
  faulty.FailNthWrite(1, ENOSPC);
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  ASSERT_TRUE(Eventually([&] { return errors.load() == 1 && !item->flushing(); }));
  EXPECT_EQ(errno_seen.load(), ENOSPC);
  EXPECT_TRUE(item->in_ail());
  EXPECT_EQ(item->dirty_map(), Map(kBlock, {0}));  // still not on disk
  EXPECT_EQ(Block(&disk_, 3)[0], std::byte{0});

  ASSERT_EQ(item->Push(), PushResult::kSuccess);  // a retry, once the fault is gone
  WaitWriteback(item);
  EXPECT_FALSE(item->in_ail());
  EXPECT_EQ(errors.load(), 1);
  EXPECT_EQ(Block(&disk_, 3)[0], std::byte{'a'});
}

TEST_F(BufLogItemTest, DestroyingAnItemWaitsForItsWriteback) {
  GateDevice gate(&disk_);
  auto item = std::make_unique<BufLogItem>(BufLogItemOptions{
      .device = &gate, .blkno = 5, .lsn_offset = kLsnOffset, .ail = ail_.get()});
  Change(item.get(), 0, 0, 'd');
  Insert(item.get(), MakeLsn(1, 10));
  gate.Close();
  ASSERT_EQ(item->Push(), PushResult::kSuccess);
  std::atomic<bool> destroyed{false};
  std::thread t([&] {
    item.reset();
    destroyed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(destroyed.load());
  gate.Open();
  t.join();
  EXPECT_TRUE(destroyed.load());
  EXPECT_EQ(Block(&disk_, 5)[0], std::byte{'d'});
}

TEST_F(BufLogItemTest, ThePusherDrivesWritebackThroughTheAil) {
  std::vector<BufLogItem*> items;
  for (std::uint64_t b = 0; b < 8; ++b) {
    items.push_back(NewItem(&disk_, b));
    Change(items.back(), 0, 0, static_cast<char>('A' + b));
    Insert(items.back(), MakeLsn(1, static_cast<std::uint32_t>(10 + b)));
  }
  ail_->Start();
  ail_->WaitEmpty();
  for (std::uint64_t b = 0; b < 8; ++b) {
    const std::vector<std::byte> blk = Block(&disk_, b);
    EXPECT_EQ(blk[0], static_cast<std::byte>('A' + b));
    EXPECT_EQ(BufStampedLsn(blk, kLsnOffset), MakeLsn(1, static_cast<std::uint32_t>(10 + b)));
  }
  ail_->Stop();
}

// Pinning belongs to the CIL, so this one runs in a whole Log: a committed
// change is pinned until its checkpoint is on disk, and Push() says so.
TEST(BufLogItemInALog, ACommittedItemIsPinnedUntilItsCheckpointIsOnDisk) {
  constexpr std::uint32_t kLogSectors = 4096;
  constexpr std::uint64_t kLogOffset = 16 * kBlock;
  MemoryDevice dev(kLogOffset + std::uint64_t{kLogSectors} * kLogSectorSize);
  LogOptions o;
  o.device = &dev;
  o.log_offset = kLogOffset;
  o.log_sectors = kLogSectors;
  Result<std::unique_ptr<Log>> log = Log::Open(o);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  {
    BufLogItem item({.device = &dev, .blkno = 2, .lsn_offset = kLsnOffset,
                     .ail = &(*log)->ail()});
    Result<Transaction> tx = Transaction::Begin(log->get(), TransType::kSetattr);
    ASSERT_TRUE(tx.ok()) << tx.status().ToString();
    item.Lock();
    std::memset(item.data().data() + 100, 'p', 50);
    item.LogRange(100, 149);
    tx->Join(&item);
    Result<std::uint64_t> seq = tx->Commit();
    item.Unlock();
    ASSERT_TRUE(seq.ok()) << seq.status().ToString();
    EXPECT_TRUE(item.pinned());
    EXPECT_EQ(item.Push(), PushResult::kPinned);
    EXPECT_EQ(dev.Contents()[2 * kBlock + 100], std::byte{0});

    ASSERT_TRUE((*log)->Force(*seq).ok());
    EXPECT_TRUE(Eventually([&] { return !item.pinned(); }));
    ASSERT_TRUE((*log)->Close().ok());  // the AIL writes the block back
    EXPECT_FALSE(item.in_ail());
  }
  const std::vector<std::byte> image = dev.Contents();
  EXPECT_EQ(image[2 * kBlock + 100], std::byte{'p'});
  EXPECT_NE(BufStampedLsn({image.data() + 2 * kBlock, kBlock}, kLsnOffset), kNullLsn);
}

}  // namespace
}  // namespace buf_item_test
}  // namespace walfs::journal
