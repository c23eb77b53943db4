// The function tracer's hooks, on code built with -finstrument-functions
// (this file always is; see tests/tracing/CMakeLists.txt).
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "tracing/reader.h"
#include "tracing/tracer.h"

namespace walfs::tracing {
namespace {

__attribute__((noinline)) int Traced(int x) {
  asm volatile("");
  return x + 1;
}

TEST(FunctionTrace, InstrumentedFunctionsRecordEntryAndExit) {
  Tracer::Get().ResetForTesting();
  ASSERT_TRUE(Catalogue::Get().SetSubsystemEnabled("func", true).ok());
  EXPECT_EQ(Traced(1), 2);
  ASSERT_TRUE(Catalogue::Get().SetSubsystemEnabled("func", false).ok());
  const auto fn = reinterpret_cast<std::uintptr_t>(&Traced);
  const EventDef* entry = Catalogue::Get().Find("func", "entry");
  const EventDef* exit = Catalogue::Get().Find("func", "exit");
  ASSERT_NE(entry, nullptr);
  ASSERT_NE(exit, nullptr);
  std::vector<std::uint16_t> seen;
  TraceReader reader(&Tracer::Get());
  for (;;) {
    auto got = reader.Read(4096, 0);
    if (!got.ok()) break;
    for (const auto& e : *got)
      if (e.record.fields[0] == fn) seen.push_back(e.record.event_id);
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], entry->id());
  EXPECT_EQ(seen[1], exit->id());
  Tracer::Get().ResetForTesting();
}

}  // namespace
}  // namespace walfs::tracing
