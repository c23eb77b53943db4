// The journal's trace events: a reservation that has to wait leaves the
// whole story in the trace — reserve, sleep, the waker's wake (and its wake
// queue batch), the waiter's wakeup and grant, the ungrant, tail moves.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "journal/journal_events.h"
#include "tests/journal/space_test_util.h"
#include "tracing/reader.h"
#include "tracing/tracer.h"

namespace walfs::journal {
namespace {

std::map<std::string, int> CountJournalEvents() {
  std::map<std::string, int> counts;
  tracing::TraceReader reader(&tracing::Tracer::Get());
  for (;;) {
    auto got = reader.Read(4096, 0);
    if (!got.ok()) break;
    for (const auto& e : *got) {
      if (e.type != tracing::TraceEntry::Type::kRecord) continue;
      const tracing::EventDef* def = tracing::Catalogue::Get().ById(e.record.event_id);
      if (def != nullptr && def->subsystem() == "journal") ++counts[std::string(def->name())];
    }
  }
  return counts;
}

TEST(JournalTrace, AWaitingReservationIsTracedFromReserveToGrant) {
  tracing::Tracer::Get().ResetForTesting();
  ASSERT_TRUE(tracing::Catalogue::Get().SetSubsystemEnabled("journal", true).ok());
  {
    auto space = testing::MakeSpace(1000, WakeMode::kWakeQueue);
    TicketRef hold = *space->Reserve(1000, 1, false);
    ASSERT_TRUE(hold->Consume(100));
    testing::BackgroundReserve waiter(space.get(), 500);
    ASSERT_TRUE(testing::Eventually([&] { return space->reserve_head().Stats().sleeps >= 1; }));
    space->TicketUngrant(hold.get());
    waiter.Join();
    ASSERT_TRUE(waiter.status().ok());
    space->ReturnSpace(100);
    space->MoveTail(100);
    space->TicketUngrant(waiter.ticket().get());
  }
  std::map<std::string, int> n = CountJournalEvents();
  EXPECT_EQ(n["reserve"], 2);
  EXPECT_GE(n["grant_sleep"], 1);
  EXPECT_GE(n["grant_wake"], 1);
  EXPECT_GE(n["wake_batch"], 1);
  EXPECT_GE(n["grant_wakeup"], 1);
  EXPECT_EQ(n["grant_granted"], 1);
  EXPECT_EQ(n["ticket_ungrant"], 2);
  EXPECT_EQ(n["return_space"], 1);
  EXPECT_EQ(n["move_tail"], 1);
  EXPECT_EQ(n["grant_bytes"], 2);
  tracing::Tracer::Get().ResetForTesting();
}

TEST(JournalTrace, DisabledJournalEventsRecordNothing) {
  tracing::Tracer::Get().ResetForTesting();
  auto space = testing::MakeSpace(1000);
  TicketRef t = *space->Reserve(100, 1, false);
  space->TicketUngrant(t.get());
  EXPECT_TRUE(CountJournalEvents().empty());
}

}  // namespace
}  // namespace walfs::journal
