// Specs of log-space reservation semantics: accounting, rolling tickets,
// FIFO ordering, shutdown.  Wake-mode specifics are in grant_head_wake_test.
#include "journal/log_space.h"

#include <set>

#include <gtest/gtest.h>

#include "tests/journal/space_test_util.h"

namespace walfs::journal {
namespace {

using testing::BackgroundReserve;
using testing::Eventually;
using testing::MakeSpace;

class LogSpaceTest : public ::testing::TestWithParam<WakeMode> {};

TEST_P(LogSpaceTest, ReserveChargesBothHeadsAndUngrantReturnsIt) {
  auto space = MakeSpace(10000, GetParam());
  TicketRef t = *space->Reserve(1000, 1, false);
  EXPECT_EQ(space->reserve_head().grant(), 1000);
  EXPECT_EQ(space->write_head().grant(), 1000);
  EXPECT_EQ(space->reserve_head().FreeBytes(), 9000);
  space->TicketUngrant(t.get());
  EXPECT_EQ(space->reserve_head().grant(), 0);
  EXPECT_EQ(space->write_head().grant(), 0);
}

TEST_P(LogSpaceTest, WrittenBytesStayChargedUntilReturnedThenHeldByTheTail) {
  auto space = MakeSpace(10000, GetParam());
  TicketRef t = *space->Reserve(1000, 1, false);
  ASSERT_TRUE(t->Consume(300));
  space->TicketUngrant(t.get());
  EXPECT_EQ(space->reserve_head().grant(), 300);  // written, not yet in the AIL
  space->ReturnSpace(300);
  EXPECT_EQ(space->reserve_head().grant(), 0);
  EXPECT_EQ(space->tail_space(), 300);
  EXPECT_EQ(space->reserve_head().FreeBytes(), 9700);
  space->MoveTail(300);
  EXPECT_EQ(space->reserve_head().FreeBytes(), 10000);
}

TEST_P(LogSpaceTest, ConsumeBeyondTheReservationIsRefused) {
  auto space = MakeSpace(10000, GetParam());
  TicketRef t = *space->Reserve(1000, 1, false);
  EXPECT_TRUE(t->Consume(600));
  EXPECT_FALSE(t->Consume(401));
  EXPECT_EQ(t->curr_res(), 400);
  space->TicketUngrant(t.get());
}

TEST_P(LogSpaceTest, BadReservationArgumentsAreRefused) {
  auto space = MakeSpace(10000, GetParam());
  EXPECT_EQ(space->Reserve(0, 1, false).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(space->Reserve(100, 2, false).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(space->Reserve(6000, 2, true).status().code(), StatusCode::kNoSpace);
}

TEST_P(LogSpaceTest, PermanentTicketCountsDownItsPreReservedRolls) {
  auto space = MakeSpace(10000, GetParam());
  TicketRef t = *space->Reserve(1000, 3, true);
  EXPECT_EQ(space->reserve_head().grant(), 3000);  // unit × cnt on both heads
  EXPECT_EQ(space->write_head().grant(), 3000);
  std::set<std::uint32_t> tids{t->tid()};
  for (int roll = 0; roll < 2; ++roll) {
    ASSERT_TRUE(t->Consume(100));
    space->TicketRegrant(t.get());
    EXPECT_EQ(t->cnt(), 2 - roll);
    ASSERT_TRUE(space->Regrant(t.get()).ok());  // returns at once while cnt > 0
    EXPECT_EQ(t->curr_res(), 1000);
    tids.insert(t->tid());
  }
  EXPECT_EQ(tids.size(), 3u);  // each roll is a new transaction id
  EXPECT_EQ(space->Stats().regrant_waits, 0u);
  EXPECT_EQ(space->reserve_head().grant(), 1000 + 200);
  space->TicketUngrant(t.get());
  EXPECT_EQ(space->reserve_head().grant(), 200);
  space->ReturnSpace(200);
  EXPECT_EQ(space->reserve_head().grant(), 0);
  EXPECT_EQ(space->write_head().grant(), 0);
}

// At cnt 0 a roll re-charges a unit to the reserve head without waiting (it
// may exceed the log: overcommit), and the next step waits on the write head.
TEST_P(LogSpaceTest, RollAtCountZeroOvercommitsReserveHeadAndWaitsOnWriteHead) {
  auto space = MakeSpace(3000, GetParam());
  TicketRef perm = *space->Reserve(1000, 1, true);
  TicketRef other = *space->Reserve(2000, 1, false);
  ASSERT_TRUE(perm->Consume(1000));  // the step wrote its whole unit
  space->TicketRegrant(perm.get());
  EXPECT_EQ(perm->cnt(), 0);
  EXPECT_EQ(space->reserve_head().grant(), 4000);  // > log size
  EXPECT_EQ(space->reserve_head().FreeBytes(), 0);
  EXPECT_EQ(space->write_head().grant(), 3000);

  std::atomic<bool> regranted{false};
  std::thread roller([&] {
    EXPECT_TRUE(space->Regrant(perm.get()).ok());
    regranted.store(true);
  });
  ASSERT_TRUE(Eventually([&] { return space->write_head().Stats().queued == 1; }));
  EXPECT_FALSE(regranted.load());
  // The checkpoint reaches the AIL and writeback moves the tail.
  space->ReturnSpace(1000);
  space->MoveTail(1000);
  roller.join();
  EXPECT_TRUE(regranted.load());
  EXPECT_EQ(space->write_head().grant(), 3000);
  EXPECT_EQ(space->Stats().regrant_waits, 1u);
  space->TicketUngrant(perm.get());
  space->TicketUngrant(other.get());
  EXPECT_EQ(space->reserve_head().grant(), 0);
  EXPECT_EQ(space->write_head().grant(), 0);
}

TEST_P(LogSpaceTest, AFittingNewcomerWaitsBehindANonFittingWaiter) {
  auto space = MakeSpace(1000, GetParam());
  TicketRef hold = *space->Reserve(600, 1, false);  // 400 free
  BackgroundReserve big(space.get(), 500);
  ASSERT_TRUE(Eventually([&] { return space->reserve_head().Stats().queued == 1; }));
  BackgroundReserve small(space.get(), 100);  // fits in 400, but queues behind
  ASSERT_TRUE(Eventually([&] { return space->reserve_head().Stats().queued == 2; }));
  space->SpaceWake();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(big.done());
  EXPECT_FALSE(small.done());
  space->TicketUngrant(hold.get());
  big.Join();
  small.Join();
  ASSERT_TRUE(big.status().ok());
  ASSERT_TRUE(small.status().ok());
  EXPECT_EQ(space->reserve_head().grant(), 600);
  space->TicketUngrant(big.ticket().get());
  space->TicketUngrant(small.ticket().get());
}

// A waiter behind a non-fitting one does not take space even when woken
// (here: spuriously, by signalling its token directly).
TEST_P(LogSpaceTest, AQueuedWaiterNeverOvertakesTheOneAhead) {
  auto space = MakeSpace(1000, GetParam());
  TicketRef hold = *space->Reserve(600, 1, false);
  BackgroundReserve big(space.get(), 500);
  ASSERT_TRUE(Eventually([&] { return space->reserve_head().Stats().queued == 1; }));
  std::atomic<WaitToken*> small_token{nullptr};
  BackgroundReserve small(space.get(), 100, 1, false, [&] {
    WaitToken::Current().Ref();
    small_token.store(&WaitToken::Current());
  });
  ASSERT_TRUE(Eventually([&] { return space->reserve_head().Stats().sleeps >= 2; }));
  for (int i = 0; i < 5; ++i) {
    small_token.load()->Signal();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_FALSE(small.done());
  EXPECT_FALSE(big.done());
  EXPECT_GE(space->reserve_head().Stats().futile_wakes, 1u);
  space->TicketUngrant(hold.get());
  big.Join();
  small.Join();
  EXPECT_TRUE(big.status().ok() && small.status().ok());
  space->TicketUngrant(big.ticket().get());
  space->TicketUngrant(small.ticket().get());
  small_token.load()->Unref();
}

TEST_P(LogSpaceTest, WaitersAreGrantedInArrivalOrder) {
  auto space = MakeSpace(1000, GetParam());
  TicketRef hold = *space->Reserve(1000, 1, false);
  std::vector<std::unique_ptr<BackgroundReserve>> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.push_back(std::make_unique<BackgroundReserve>(space.get(), 1000));
    ASSERT_TRUE(Eventually([&] { return space->reserve_head().Stats().queued == i + 1; }));
  }
  // Free one unit at a time: exactly the oldest waiter gets it.
  space->TicketUngrant(hold.get());
  for (int i = 0; i < 4; ++i) {
    waiters[i]->Join();
    ASSERT_TRUE(waiters[i]->status().ok());
    for (int j = i + 1; j < 4; ++j) EXPECT_FALSE(waiters[j]->done());
    space->TicketUngrant(waiters[i]->ticket().get());
  }
}

TEST_P(LogSpaceTest, ShutdownWakesEveryWaiterWithEio) {
  auto space = MakeSpace(1000, GetParam());
  TicketRef hold = *space->Reserve(1000, 1, false);
  std::vector<std::unique_ptr<BackgroundReserve>> waiters;
  for (int i = 0; i < 5; ++i) waiters.push_back(std::make_unique<BackgroundReserve>(space.get(), 300));
  ASSERT_TRUE(Eventually([&] { return space->reserve_head().Stats().queued == 5; }));
  space->Shutdown();
  for (auto& w : waiters) {
    w->Join();
    EXPECT_TRUE(w->status().IsShutdown());
    EXPECT_EQ(w->status().ToErrno(), EIO);
  }
  EXPECT_EQ(space->reserve_head().Stats().queued, 0);
  // Every entry point refuses from now on.
  EXPECT_TRUE(space->Reserve(10, 1, false).status().IsShutdown());
  EXPECT_TRUE(space->Regrant(hold.get()).IsShutdown());
  space->TicketUngrant(hold.get());
}

TEST_P(LogSpaceTest, NewcomerRechecksSpaceAfterQueueing) {
  // The tail moves between a newcomer's space check and its enqueue; with no
  // later wake it must still be granted (no lost wakeup at the queue's edge).
  for (int round = 0; round < 200; ++round) {
    auto space = MakeSpace(1000, GetParam());
    TicketRef hold = *space->Reserve(1000, 1, false);
    ASSERT_TRUE(hold->Consume(1000));
    space->TicketUngrant(hold.get());
    space->ReturnSpace(1000);  // log full of written, unwritten-back bytes
    BackgroundReserve w(space.get(), 500);
    space->MoveTail(1000);     // races with the newcomer's enqueue
    ASSERT_TRUE(Eventually([&] { return w.done(); }, std::chrono::seconds(5)))
        << "waiter stranded in round " << round;
    w.Join();
    space->TicketUngrant(w.ticket().get());
  }
}

// Review findings, kept as specs.

TEST_P(LogSpaceTest, LiveTicketsNeverShareATransactionId) {
  auto space = MakeSpace(100000, GetParam());
  TicketRef a = *space->Reserve(1000, 3, true);
  TicketRef b = *space->Reserve(1000, 3, true);
  for (int roll = 0; roll < 2; ++roll) {
    space->TicketRegrant(a.get());
    ASSERT_TRUE(space->Regrant(a.get()).ok());
    EXPECT_NE(a->tid(), b->tid());
  }
  space->TicketUngrant(a.get());
  space->TicketUngrant(b.get());
}

// A roll at cnt 0 whose Regrant never succeeds (shutdown, or a cancel) must
// not take the write head below zero when the ticket is ungranted.
TEST_P(LogSpaceTest, UngrantAfterAnUnfinishedRollAtCountZeroBalancesBothHeads) {
  auto space = MakeSpace(3000, GetParam());
  TicketRef t = *space->Reserve(1000, 1, true);
  space->TicketRegrant(t.get());  // cnt 0: unit re-charged to the reserve head only
  EXPECT_EQ(space->reserve_head().grant(), 1000);
  EXPECT_EQ(space->write_head().grant(), 0);
  space->TicketUngrant(t.get());  // cancelled before Regrant
  EXPECT_EQ(space->reserve_head().grant(), 0);
  EXPECT_EQ(space->write_head().grant(), 0);

  TicketRef u = *space->Reserve(1000, 1, true);
  space->TicketRegrant(u.get());
  space->Shutdown();
  EXPECT_TRUE(space->Regrant(u.get()).IsShutdown());
  space->TicketUngrant(u.get());
  EXPECT_EQ(space->reserve_head().grant(), 0);
  EXPECT_EQ(space->write_head().grant(), 0);
}

// ReturnSpace moves bytes from the grants to the tail in two steps; a waiter
// that checks in between sees too little space and sleeps.  ReturnSpace must
// wake it: nothing else may ever move again.
TEST_P(LogSpaceTest, AWaiterThatCheckedDuringReturnSpaceIsWoken) {
  for (int round = 0; round < 200; ++round) {
    auto space = MakeSpace(1000, GetParam());
    TicketRef t = *space->Reserve(600, 1, false);
    ASSERT_TRUE(t->Consume(600));
    space->TicketUngrant(t.get());  // 600 written, 400 free
    BackgroundReserve w(space.get(), 400);
    space->ReturnSpace(600);        // races with the waiter's check
    ASSERT_TRUE(Eventually([&] { return w.done(); }, std::chrono::seconds(5)))
        << "waiter stranded in round " << round;
    w.Join();
    ASSERT_TRUE(w.status().ok());
    space->TicketUngrant(w.ticket().get());
  }
}

INSTANTIATE_TEST_SUITE_P(AllWakeModes, LogSpaceTest, ::testing::ValuesIn(kAllWakeModes),
                         // `test_info`, not `info`: that would shadow the
                         // macro's own parameter (-Wshadow).
                         [](const auto& test_info) {
                           return std::string(WakeModeName(test_info.param));
                         });

}  // namespace
}  // namespace walfs::journal
