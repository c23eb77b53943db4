// The mount options of the crash specs (grow_crash_test, uninit_ag_test,
// fsck_repair_crash_test): no timed commits and no lazy push, so that the
// recorded writes are the ones the test's operations, syncs and unmount
// make, and a crash state is the same from run to run.
#pragma once

#include "fs/filesystem.h"

namespace walfs::fs::testing {

inline MountOptions QuietMount() {
  MountOptions o;
  o.commit_interval_s = 0;
  o.lazy_commit_ms = 0;
  return o;
}

}  // namespace walfs::fs::testing
