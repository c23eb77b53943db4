// Crash specs of the log with the write-recording device: a randomized
// transaction workload with forces, then, for every prefix of the write
// stream that ends at a flush (whole, and with its last write torn) and for
// sampled reorderings of the writes in flight, recovery must give an image
// that is exactly the state after some transaction t -- never a partial
// transaction or checkpoint -- with t at or past every transaction whose
// force had returned by then; and recovering again must change nothing.
// The workload wraps the log, so crashes land around its physical end too:
// records split across it (two writes) and in-flight windows straddling it.
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "journal/log.h"
#include "journal/log_recover.h"
#include "journal/transaction.h"
#include "tests/journal/log_test_fixture.h"
#include "tests/sanitizer_build.h"

namespace walfs::journal {
namespace log_crash_test {  // this file's own names (unity builds share one TU)
namespace {

using testing::Blocks;
using testing::Fill;
using testing::ImageBytes;
using testing::kBlockSize;
using testing::kPayloadOffset;
using testing::TestJournal;

constexpr std::uint32_t kSectors = 1160;  // 580 KiB: the workload wraps it (asserted)
constexpr std::uint32_t kBlocks = 8;
constexpr std::size_t kPayload = kBlockSize - kPayloadOffset;

// The payloads of every block, concatenated.
using Image = std::string;

Image ReadImage(BlockDevice* dev) {
  Image img;
  for (std::uint32_t i = 0; i < kBlocks; ++i) img += testing::PayloadOnDisk(dev, i);
  return img;
}

std::string WholeDevice(BlockDevice* dev) {
  std::string all(dev->size_bytes(), '\0');
  EXPECT_TRUE(dev->Read(0, all.data(), all.size()).ok());
  return all;
}

struct Workload {
  std::vector<Image> states;  // states[t]: after transaction t (0: before any)
  // (ops recorded when the force returned, every transaction up to this one
  // is durable)
  std::vector<std::pair<std::size_t, std::size_t>> forced;
  std::unique_ptr<RecordingDevice> rec;
  std::unique_ptr<MemoryDevice> disk;
};

// Runs `count` random transactions on a fresh log over a recording device.
// `lazy`: with the CIL's lazy push (100 us), and pauses that let it fire,
// so that checkpoints are also written without FUA or flush and a crash
// state may lose any of them that no flush covered.
Workload RunWorkload(std::uint64_t seed, int count, bool lazy) {
  Workload w;
  w.disk = std::make_unique<MemoryDevice>(ImageBytes(kSectors));
  w.rec = std::move(RecordingDevice::Create(w.disk.get())).value();
  LogOptions o = testing::TestLogOptions(w.rec.get(), kSectors);
  o.iclog_count = 4;
  o.iclog_bytes = 16 * 1024;
  // The reservations of a 1 KiB-block filesystem: a log small enough for
  // the workload to wrap.
  o.geometry.block_size = 1024;
  o.push_bytes = 24 * 1024;  // background checkpoints between forces
  if (lazy) o.lazy_push_ns = 100'000;
  auto opened = Log::Open(o);
  // The log is barely above the minimum these reservations allow: a table
  // that grows fails here, with the reason, and the specs stop on an empty
  // workload instead of the binary aborting.
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return w;
  TestJournal j(std::move(opened).value(), kBlocks);
  std::mt19937_64 rng(seed);
  Image model(std::size_t{kBlocks} * kPayload, '\0');
  w.states.push_back(model);
  for (int t = 1; t <= count; ++t) {
    auto tx = Transaction::Begin(j.get(), TransType::kWrite);
    EXPECT_TRUE(tx.ok());
    const int nblocks = 1 + static_cast<int>(rng() % 3);
    std::vector<std::uint32_t> picked;
    for (int k = 0; k < nblocks; ++k) {
      const auto b = static_cast<std::uint32_t>(rng() % kBlocks);
      if (std::find(picked.begin(), picked.end(), b) == picked.end()) picked.push_back(b);
    }
    std::sort(picked.begin(), picked.end());
    for (std::uint32_t b : picked) testing::LockBlock(j[b]);
    for (std::uint32_t b : picked) {
      const auto first = static_cast<std::uint32_t>(rng() % kPayload);
      const auto len = static_cast<std::uint32_t>(
          1 + rng() % std::min<std::uint64_t>(kPayload - first, 1500));
      Fill(&*tx, j[b], kPayloadOffset + first, len, static_cast<std::uint8_t>(t));
      std::memset(model.data() + std::size_t{b} * kPayload + first, t & 0xff, len);
    }
    auto seq = tx->Commit();
    for (std::uint32_t b : picked) testing::UnlockBlock(j[b]);
    EXPECT_TRUE(seq.ok()) << seq.status().ToString();
    w.states.push_back(model);
    if (lazy && rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(400));
    if (rng() % 6 == 0) {
      EXPECT_TRUE(j->Force(*seq).ok());
      w.forced.emplace_back(w.rec->op_count(), static_cast<std::size_t>(t));
    }
  }
  // The workload is meant to wrap the log (recovery across its end).
  const Lsn head = j->Stats().head;
  EXPECT_GE(CycleOf(head), 2u) << "the workload did not wrap the log: head " << LsnString(head);
  if (lazy) {
    EXPECT_GT(j->Stats().cil.lazy_written, 5u) << "the lazy push hardly ran";
    EXPECT_GT(j->Stats().writer.lazy_records, 5u);
  }
  // The crash: the log stops where it is, without an unmount record.
  j->Halt();
  return w;
}

// The last transaction whose force had returned before op `n` was issued.
std::size_t RequiredAt(const Workload& w, std::size_t n) {
  std::size_t t = 0;
  for (const auto& [ops, tx] : w.forced)
    if (ops <= n) t = std::max(t, tx);
  return t;
}

// Recovers `dev` twice and checks the image against the workload's states.
void CheckRecovered(const Workload& w, MemoryDevice* dev, std::size_t required,
                    const std::string& what) {
  RecoverOptions ro;
  ro.log = LogRegion{dev, testing::kLogOffset, kSectors};
  ro.metadata = dev;
  auto first = RecoverLog(ro);
  ASSERT_TRUE(first.ok()) << what << ": " << first.status().ToString();
  const Image img = ReadImage(dev);
  std::size_t found = SIZE_MAX;
  for (std::size_t t = w.states.size(); t-- > 0;)
    if (w.states[t] == img) {
      found = t;
      break;
    }
  ASSERT_NE(found, SIZE_MAX) << what << ": the recovered image is no transaction's state";
  EXPECT_GE(found, required) << what << ": a forced transaction was lost";
  const std::string once = WholeDevice(dev);
  auto second = RecoverLog(ro);
  ASSERT_TRUE(second.ok()) << what << ": " << second.status().ToString();
  EXPECT_TRUE(WholeDevice(dev) == once) << what << ": recovering again changed the image";
}

// Every flush prefix, and 150 sampled reorderings; under TSan every 8th
// flush (and the last) and 40 samples: recovery, which each state runs, is
// single-threaded, so more states buy the race detector nothing (the gcc
// and ASan jobs check them all).
constexpr std::size_t kFlushStride = walfs::testing::ForBuild({.full = 1, .address = 1, .thread = 8});
constexpr int kReorderSamples = walfs::testing::ForBuild({.full = 150, .address = 150, .thread = 40});

// (seed, lazy push)
class LogCrash : public ::testing::TestWithParam<std::tuple<std::uint64_t, bool>> {
 protected:
  std::uint64_t Seed() const { return std::get<0>(GetParam()); }
  bool Lazy() const { return std::get<1>(GetParam()); }
};

TEST_P(LogCrash, EveryFlushPrefixRecoversToAForcedConsistentState) {
  Workload w = RunWorkload(Seed(), 300, Lazy());
  ASSERT_FALSE(w.forced.empty());
  const std::vector<std::size_t> flushes = w.rec->FlushPoints();
  ASSERT_GT(flushes.size(), 10u);
  const std::vector<RecordedOp> ops = w.rec->ops();
  std::size_t states = 0;
  for (std::size_t k = 0; k < flushes.size(); ++k) {
    if (k % kFlushStride != 0 && k + 1 != flushes.size()) continue;
    const std::size_t f = flushes[k];
    const std::size_t n = f + 1;
    auto img = w.rec->MaterializePrefix(n);
    ASSERT_TRUE(img.ok());
    CheckRecovered(w, img->get(), RequiredAt(w, n), "prefix " + std::to_string(n));
    ++states;
    // The same moment with the last write before the flush torn: it had not
    // completed, so only forces that returned before it was issued count.
    std::size_t last_write = SIZE_MAX;
    for (std::size_t i = f; i-- > 0;)
      if (ops[i].kind == RecordedOp::Kind::kWrite) {
        last_write = i;
        break;
      }
    if (last_write == SIZE_MAX || ops[last_write].data.size() <= kLogSectorSize) continue;
    auto torn = w.rec->MaterializePrefix(last_write + 1, /*torn_sectors=*/1);
    ASSERT_TRUE(torn.ok());
    CheckRecovered(w, torn->get(), RequiredAt(w, last_write),
                   "torn write " + std::to_string(last_write));
    ++states;
  }
  RecordProperty("crash_states", static_cast<int>(states));
}

TEST_P(LogCrash, SampledReorderingsOfWritesInFlightRecover) {
  Workload w = RunWorkload(Seed() ^ 0x5eed, 240, Lazy());
  ASSERT_FALSE(w.forced.empty());
  const std::size_t total = w.rec->op_count();
  std::mt19937_64 rng(Seed());
  for (int s = 0; s < kReorderSamples; ++s) {
    const std::size_t n = 1 + rng() % total;
    CrashSampleOptions o;
    o.seed = rng();
    o.land_probability = 0.5;
    o.tear_probability = 0.3;
    o.before_completions = (s % 2) == 1;
    auto img = w.rec->SampleCrashState(n, o);
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    // A force that returned before the crash moment saw its record durable.
    const std::size_t moment = o.before_completions ? n - 1 : n;
    CheckRecovered(w, img->get(), RequiredAt(w, moment),
                   "sample " + std::to_string(s) + " at " + std::to_string(n));
  }
}

// Seeds 1-3; under TSan seed 1 only: the enumeration after the workload is
// single-threaded (recovery of each prefix), so more seeds buy the race
// detector nothing but minutes.
std::vector<std::uint64_t> CrashSeeds() {
  constexpr int kSeeds = walfs::testing::ForBuild({.full = 3, .address = 3, .thread = 1});
  std::vector<std::uint64_t> seeds;
  for (int s = 1; s <= kSeeds; ++s) seeds.push_back(static_cast<std::uint64_t>(s));
  return seeds;
}

INSTANTIATE_TEST_SUITE_P(Seeds, LogCrash,
                         ::testing::Combine(::testing::ValuesIn(CrashSeeds()), ::testing::Bool()),
                         [](const auto& p) {
                           return fmt::format("seed{}{}", std::get<0>(p.param),
                                              std::get<1>(p.param) ? "_lazy" : "");
                         });

}  // namespace
}  // namespace log_crash_test
}  // namespace walfs::journal
