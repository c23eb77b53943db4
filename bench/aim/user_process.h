// One simulated user: the child process that runs its shuffled job list, and
// the fixed-size messages it sends up the runner's pipe.
//
// A child says kReady, waits until the runner closes the start pipe (every
// child sees EOF at once: re-aim's SIGUSR1 "gun"), then runs its jobs,
// sending kJobDone after each (the runner's progress line), and ends with
// kFinished and exit status 0, or kFailed -- which test, errno, message --
// and exit status 1.  Each message is one write() of at most PIPE_BUF
// bytes, so messages from many children never interleave.
#pragma once

#include <climits>
#include <cstdint>

#include "bench/aim/workfile.h"
#include "bench/aim/workspace.h"

namespace walfs::bench::aim {

struct UserMessage {
  enum Type : std::int32_t { kReady = 1, kJobDone = 2, kFinished = 3, kFailed = 4 };
  std::int32_t type = 0;
  std::int32_t user = 0;
  std::int64_t mono_ns = 0;  // MonotonicNanos() when sent
  std::int32_t test = -1;    // kFailed: index into Mix::tests
  std::int32_t err = 0;      // kFailed: errno
  char text[232] = {};       // kFailed: the Status message, NUL-terminated
};
static_assert(sizeof(UserMessage) == 256 && sizeof(UserMessage) <= PIPE_BUF,
              "a message must be one atomic pipe write");

struct UserSpec {
  const Mix* mix = nullptr;
  const Workspace* workspace = nullptr;
  int user = 0;              // 0-based
  std::uint64_t seed = 0;    // run seed; the user's generators derive from it
  std::int64_t blocks = 0;   // disk_iteration_count of this load level
  bool sync_calls = false;
  int message_fd = -1;       // write end of the runner's pipe
  int start_fd = -1;         // read end of the start pipe
};

// The seed of user `user`'s job list and random numbers.
std::uint64_t UserSeed(std::uint64_t run_seed, int user);

// Runs in the forked child; never returns (_exit: no atexit handlers, no
// stdio flush of the parent's buffers).
[[noreturn]] void RunUserProcess(const UserSpec& spec);

}  // namespace walfs::bench::aim
