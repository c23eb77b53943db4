// After a crash: what the writers' ledgers say, and whether the remounted
// filesystem holds it (the promise is in writer.h).
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/killtest/writer.h"

namespace walfs::bench::killtest {

// One writer's ledger for one round.
struct LedgerSummary {
  std::uint64_t acks = 0;
  std::map<int, std::uint64_t> begun;   // file -> last begun generation / record
  std::map<int, std::uint64_t> acked;   // file -> last acknowledged one
  std::vector<std::string> errors;      // E lines whose call failed before the kill
};

// Reads a ledger; E lines at or after `kill_ns` (or with ENOTCONN,
// ECONNABORTED, ENODEV: the dead connection) are expected and dropped.
LedgerSummary ReadLedger(const std::string& path, std::int64_t kill_ns);

struct CheckOutcome {
  std::uint64_t files_checked = 0;
  std::vector<std::string> failures;  // one line each: file, what was found, what was allowed
};

// Checks every file of `files` (the state before the round, updated here to
// what the file holds now) against the ledgers, then puts the files in a
// state the next round can continue from: an appended file is cut back to
// its last whole acknowledged record (and removed once past 1 MiB).
CheckOutcome CheckAndNormalise(std::uint64_t seed, const std::string& mnt,
                               const std::vector<LedgerSummary>& ledgers,
                               std::vector<FileState>* files);

// Monotonic clock in ns (the ledgers' E lines use it).
std::int64_t NowNs();

// The rest of a ledger's "E <op> <errno> <monotonic ns>" line (a writer's
// call failed, and it exited): "<op> failed with <ERRNO> before the kill",
// or "" when that is expected (the daemon was gone: ENOTCONN, ECONNABORTED,
// ENODEV; or the call failed after the kill).
std::string LedgerErrorBeforeKill(std::istream& fields, std::int64_t kill_ns);

}  // namespace walfs::bench::killtest
