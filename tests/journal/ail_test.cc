// Specs of the AIL: tail and head accounting against LogSpace, relogging,
// and the pusher's chain push -> (force) -> writeback -> tail move -> wake.
#include "journal/ail.h"

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "journal/log_format.h"
#include "tests/journal/space_test_util.h"

namespace walfs::journal {
namespace ail_test {  // this file's own names (unity builds share one TU)
namespace {

using testing::BackgroundReserve;
using testing::Eventually;

constexpr std::uint32_t kSectors = 2048;  // 1 MiB log
constexpr std::int64_t kLogBytes = std::int64_t{kSectors} * kLogSectorSize;

// Completes item writeback on a thread of its own, as I/O completion would.
class Writeback {
 public:
  explicit Writeback(Ail* ail) : ail_(ail), thread_([this] { Main(); }) {}
  ~Writeback() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Complete(LogItem* item) {
    {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(item);
    }
    cv_.notify_all();
  }

 private:
  void Main() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      LogItem* item = queue_.front();
      queue_.pop_front();
      l.unlock();
      ail_->Delete(item);
      l.lock();
    }
  }
  Ail* const ail_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LogItem*> queue_;
  bool stop_ = false;
  std::thread thread_;
};

class FakeItem : public LogItem {
 public:
  explicit FakeItem(Writeback** wb) : wb_(wb) {}
  ItemType type() const override { return ItemType::kBuffer; }
  bool Format(std::string* out) override {
    out->append("x");
    return true;
  }
  PushResult Push() override {
    if (pinned.load()) return PushResult::kPinned;
    if (locked.load()) return PushResult::kLocked;
    if (flushing.exchange(true)) return PushResult::kFlushing;
    (*wb_)->Complete(this);
    return PushResult::kSuccess;
  }
  std::atomic<bool> pinned{false}, locked{false}, flushing{false};

 private:
  Writeback** wb_;
};

// Puts `bytes` into the log as a transaction would: reserved, written, committed.
void Write(LogSpace* space, std::int32_t bytes) {
  TicketRef t = *space->Reserve(bytes, 1, false);
  ASSERT_TRUE(t->Consume(bytes));
  space->TicketUngrant(t.get());
}

class AilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    space_ = testing::MakeSpace(kLogBytes);
    AilOptions o;
    o.space = space_.get();
    o.log_sectors = kSectors;
    o.force_log = [this] {
      ++forces_;
      for (auto& it : items_) it->pinned.store(false);
    };
    ail_ = std::make_unique<Ail>(o);
    wb_ = new Writeback(ail_.get());
    space_->set_wake_mode(WakeMode::kWakeQueue);
  }
  void TearDown() override {
    ail_->Stop();
    delete wb_;
  }
  FakeItem* NewItem() {
    items_.push_back(std::make_unique<FakeItem>(&wb_));
    return items_.back().get();
  }

  std::unique_ptr<LogSpace> space_;
  std::unique_ptr<Ail> ail_;
  Writeback* wb_ = nullptr;
  std::vector<std::unique_ptr<FakeItem>> items_;
  std::atomic<int> forces_{0};
};

TEST_F(AilTest, TheTailIsTheOldestItemOrTheHeadWhenEmpty) {
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 0));
  Write(space_.get(), 20 * kLogSectorSize);
  FakeItem* a = NewItem();
  FakeItem* b = NewItem();
  LogItem* first[] = {a};
  LogItem* second[] = {b};
  ail_->Insert(first, MakeLsn(1, 0));
  ail_->Insert(second, MakeLsn(1, 10));
  ail_->AdvanceHead(MakeLsn(1, 20));
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 0));
  EXPECT_EQ(space_->tail_space(), 20 * kLogSectorSize);
  EXPECT_EQ(space_->reserve_head().grant(), 0);
  ail_->Delete(a);
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 10));
  EXPECT_EQ(space_->tail_space(), 10 * kLogSectorSize);
  ail_->Delete(b);
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 20));
  EXPECT_EQ(space_->tail_space(), 0);
  EXPECT_EQ(ail_->Stats().tail_moves, 2u);
}

TEST_F(AilTest, AReloggedItemMovesForwardAndTheTailWithIt) {
  Write(space_.get(), 30 * kLogSectorSize);
  FakeItem* a = NewItem();
  LogItem* items[] = {a};
  ail_->Insert(items, MakeLsn(1, 0));
  ail_->AdvanceHead(MakeLsn(1, 10));
  ail_->Insert(items, MakeLsn(1, 10));  // logged again in the next checkpoint
  ail_->AdvanceHead(MakeLsn(1, 30));
  EXPECT_EQ(ail_->Stats().items, 1u);
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 10));
  EXPECT_EQ(space_->tail_space(), 20 * kLogSectorSize);
  ail_->Delete(a);
}

TEST_F(AilTest, AnEmptyAilsTailFollowsItsHead) {
  Write(space_.get(), 8 * kLogSectorSize);
  ail_->AdvanceHead(MakeLsn(1, 8));  // a checkpoint with nothing left to write back
  EXPECT_EQ(ail_->tail_lsn(), MakeLsn(1, 8));
  EXPECT_EQ(space_->tail_space(), 0);
  EXPECT_EQ(space_->reserve_head().FreeBytes(), kLogBytes);
}

// The whole chain: a reservation waits for space; before it sleeps it
// pushes the AIL; the pusher writes items back (forcing the log for the
// pinned ones); writeback moves the tail; the tail move wakes the waiter.
TEST_F(AilTest, AWaiterIsWokenByThePushItsSleepStarted) {
  ail_->Start();
  // Fill the log: 16 checkpoints of 128 sectors, one item each, half pinned.
  for (std::uint32_t i = 0; i < 16; ++i) {
    Write(space_.get(), 128 * kLogSectorSize);
    FakeItem* it = NewItem();
    it->pinned.store(i % 2 == 1);
    LogItem* one[] = {it};
    ail_->Insert(one, MakeLsn(1, i * 128));
    ail_->AdvanceHead(MakeLsn(1, (i + 1) * 128));
  }
  ASSERT_EQ(space_->reserve_head().FreeBytes(), 0);
  // More than the pusher's own quarter-of-the-log target frees: the waiter
  // must sleep, and only a push of everything gets it its space.
  BackgroundReserve waiter(space_.get(), 1200 * kLogSectorSize);
  ASSERT_TRUE(Eventually([&] { return space_->reserve_head().Stats().sleeps >= 1; }));
  ail_->PushAll();  // what the hook does before the sleep
  waiter.Join();
  ASSERT_TRUE(waiter.status().ok()) << waiter.status().ToString();
  const AilStats s = ail_->Stats();
  EXPECT_GT(s.pushed, 0u);
  EXPECT_GE(forces_.load(), 1);
  EXPECT_GT(s.tail_moves, 0u);
  space_->TicketUngrant(waiter.ticket().get());
  ail_->WaitEmpty();
  EXPECT_EQ(ail_->Stats().items, 0u);
  EXPECT_EQ(space_->tail_space(), 0);
}

TEST_F(AilTest, ThePushHookBeforeEverySleepDrivesTheAil) {
  // A LogSpace whose push_tail hook is the AIL's PushAll, as the log wires it.
  std::unique_ptr<Ail> ail;
  auto space = LogSpace::Create(
      {.log_bytes = kLogBytes, .push_tail = [&ail] { ail->PushAll(); }});
  ASSERT_TRUE(space.ok());
  AilOptions o;
  o.space = space->get();
  o.log_sectors = kSectors;
  ail = std::make_unique<Ail>(o);
  Writeback* wb = new Writeback(ail.get());
  std::vector<std::unique_ptr<FakeItem>> items;
  ail->Start();
  for (std::uint32_t i = 0; i < 8; ++i) {
    Write(space->get(), 256 * kLogSectorSize);
    items.push_back(std::make_unique<FakeItem>(&wb));
    LogItem* one[] = {items.back().get()};
    ail->Insert(one, MakeLsn(1, i * 256));
    ail->AdvanceHead(MakeLsn(1, (i + 1) * 256));
  }
  // More than the quarter-of-the-log target frees: only the hook's push of
  // everything can get it space.
  BackgroundReserve waiter(space->get(), 1200 * kLogSectorSize);
  waiter.Join();
  EXPECT_TRUE(waiter.status().ok());
  EXPECT_GE(ail->Stats().push_all_requests, 1u);
  (*space)->TicketUngrant(waiter.ticket().get());
  ail->WaitEmpty();
  ail->Stop();
  delete wb;
}

TEST_F(AilTest, BusyItemsAreRetriedAfterABackOff) {
  ail_->Start();
  Write(space_.get(), 16 * kLogSectorSize);
  FakeItem* it = NewItem();
  it->locked.store(true);
  LogItem* one[] = {it};
  ail_->Insert(one, MakeLsn(1, 0));
  ail_->AdvanceHead(MakeLsn(1, 16));
  ail_->PushAll();
  ASSERT_TRUE(Eventually([&] { return ail_->Stats().locked >= 2; }));
  EXPECT_EQ(ail_->Stats().items, 1u);
  it->locked.store(false);
  ail_->WaitEmpty();
  EXPECT_EQ(space_->tail_space(), 0);
}

}  // namespace
}  // namespace ail_test
}  // namespace walfs::journal
