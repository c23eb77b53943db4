// A kill-test campaign (docs/killtest.md): one fresh image, then rounds of
// mount -> loads -> SIGKILL the daemon at a random moment -> remount (log
// recovery) -> check every acknowledged fsync and every unsynced change older
// than the margin -> clean unmount -> fsck -n.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/killtest/daemon.h"
#include "bench/killtest/writer.h"
#include "base/status.h"

namespace walfs::bench::killtest {

struct CampaignOptions {
  int rounds = 20;
  std::uint64_t seed = 1;
  std::string dir = "/dev/shm";  // where the image, ledgers and logs live
  std::string bin_dir;           // walfs, mkfs.walfs, fsck.walfs, walfs-aim
  std::string fio_dir;           // bench/fio ("" or missing: no fio load)
  std::string image_size = "1g";
  int writers = 4;
  int files_per_writer = 8;
  int min_delay_ms = 300;
  int max_delay_ms = 4000;
  bool aim = true;
  bool fio = true;
  std::string fio_size = "64m";
  int timeout_s = 60;  // for a mount, an unmount, a load to die
  int unsynced_writers = 1;       // writers that never fsync (bench/killtest/unsynced.h)
  int unsynced_pause_us = 500;    // their sleep before each change
  int unsynced_margin_ms = 200;   // their changes older than this at the kill are checked
  int open_writers = 1;           // writers into files they hold open (bench/killtest/open_writer.h)
  int open_pause_us = 500;        // their sleep before each write
  int open_margin_ms = 1000;      // their writes older than this at the kill are checked
  std::string mount_options;      // walfs -o OPTS ("": the defaults)
  std::string transport;          // "dev" or "uring": every mount serves through it ("": its choice)
  int quiet_every = 4;            // rounds 1, 1+N, 1+2N, ...: the unsynced writers alone (0: never)
};

struct RoundResult {
  int round = 0;
  int delay_ms = 0;
  bool quiet = false;  // the unsynced writers ran alone
  std::uint64_t ops_acked = 0;
  std::uint64_t files_checked = 0;
  std::uint64_t unsynced_checked = 0;     // unsynced changes old enough to be checked
  std::uint64_t unsynced_too_recent = 0;  // newer than the margin (or in flight)
  std::uint64_t unsynced_missing = 0;     // checked ones not there
  std::uint64_t open_checked = 0;         // open writers' writes old enough to be checked
  std::uint64_t open_lost = 0;            // checked ones not there
  double open_oldest_lost_ms = 0;         // the oldest lost one's age at the kill
  double recovery_ms = 0;
  std::string replayed;  // the daemon's recovery summary
  std::string fsck = "-";
  std::string failure;   // empty: the round survived
};

class Campaign {
 public:
  explicit Campaign(CampaignOptions options) : o_(std::move(options)) {}
  ~Campaign();

  // Makes the work directory and the image.
  Status Prepare();
  RoundResult RunRound(int round);
  // Keeps the work directory (after a failure) or removes it.
  void Finish(bool keep);
  const std::string& work_dir() const { return work_; }

 private:
  std::string Loads(int round, std::vector<pid_t>* pids);
  std::string RemoveLoadDirs(int round);

  const CampaignOptions o_;
  std::string work_;
  Setup setup_;
  Daemon daemon_;
  std::vector<FileState> files_;
};

}  // namespace walfs::bench::killtest
