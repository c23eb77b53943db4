#include "crash/runner.h"

#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "base/messages.h"
#include "crash/checker.h"
#include "crash/planner.h"
#include "crash/random_workload.h"
#include "crash/short_workload.h"

namespace walfs::crash {
namespace {

// The failing state, what is wrong, and the operations up to it.
std::string FailureText(const History& h, const std::vector<std::string>& errors, const std::string& state,
                        std::size_t limit) {
  std::string msg = fmt::format("seed {}, {}:", h.seed, state);
  for (const std::string& e : errors) msg += "\n  " + e;
  msg += "\nops (recorded device ops [start, end)):";
  for (const OpRec& o : h.log)
    if (o.start < limit) msg += fmt::format("\n  [{}, {}) {}", o.start, o.end, o.text);
  return msg;
}

double CpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

}  // namespace

std::string_view WorkloadName(WorkloadKind k) { return k == WorkloadKind::kRandom ? "random" : "short"; }

std::optional<WorkloadKind> ParseWorkload(std::string_view name) {
  if (name == "random") return WorkloadKind::kRandom;
  if (name == "short") return WorkloadKind::kShort;
  return std::nullopt;
}

RunResult RunCrashTest(const RunOptions& options) {
  // Each crash state makes a few images.  Left to itself glibc maps and
  // unmaps every one, and faulting their pages in costs more than all the
  // checks; keep them in the heap instead (a no-op under the sanitizers).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = CpuSeconds();
  RunResult r;
  r.workload = options.workload;
  r.seed = options.seed;
  auto fail = [&](std::string first, std::string full) {
    r.failures += 1;
    r.first_error = std::move(first);
    r.failure = std::move(full);
  };
  std::unique_ptr<Workload> w;
  int samples = options.samples;
  if (options.workload == WorkloadKind::kRandom) {
    w = std::make_unique<RandomWorkload>(
        options.seed, RandomWorkloadOptions{.ops = options.ops, .forget_linked = options.forget_linked,
                                            .low_lsn = options.low_lsn, .preallocate = options.preallocate});
  } else {
    auto s = std::make_unique<ShortWorkload>(options.seed);
    r.sequence = DescribeSequence(s->sequence());
    w = std::move(s);
    samples = (samples + 3) / 4;  // a few ops: fewer writes in flight to reorder
  }
  Status s = w->Run(options.discard);
  const History& h = w->history();
  r.ops = w->op_count();
  r.device_ops = w->recording().op_count();
  r.flushes = w->recording().FlushPoints().size();
  if (!s.ok()) {
    fail("the workload failed: " + s.ToString(), FailureText(h, {s.ToString()}, "the workload", SIZE_MAX));
  } else if (auto states = PlanCrashStates(w->recording(),
                                           {.seed = options.seed, .samples = samples, .max_tries = 400,
                                            .first_op = h.first_interesting_op,
                                            .every_prefix = options.workload == WorkloadKind::kShort});
             !states.ok()) {
    fail("planning crash states failed: " + states.status().ToString(), states.status().ToString());
  } else {
    Checker checker(h);
    // A torn state's mount warns that it trimmed the log, as it should for
    // a user; here that is every torn state, so the messages stay in the
    // ring, and a failing state's are part of its report.
    ScopedMessageSink quiet(Messages::Sink::kNone);
    for (const CrashState& st : *states) {
      Messages::Get().Clear();
      auto img = Materialize(w->recording(), st);
      r.crash_states += 1;
      r.torn += st.kind == CrashState::Kind::kTorn;
      r.reordered += st.kind == CrashState::Kind::kReordered;
      std::vector<std::string> errors;
      if (!img.ok()) errors.push_back("materializing the image: " + img.status().ToString());
      else errors = checker.Check(img->get(), st.limit, st.moment);
      if (!errors.empty()) {
        std::string full = FailureText(h, errors, st.description, st.limit);
        if (const std::string said = Messages::Get().Text(); !said.empty()) full += "\nthe state's messages:\n" + said;
        fail(fmt::format("{}: {}", st.description, errors.front()), std::move(full));
        break;
      }
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = CpuSeconds() - cpu0;
  return r;
}

}  // namespace walfs::crash
