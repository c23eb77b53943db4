// The `walfs IMAGE MOUNTPOINT -o ...` command line as libfuse's fuse_opt
// parses it (tools/walfs.cc): walfs's own -o options (Config, kMountOptions,
// ProcessMountArg), the help text help2man makes the man page of (MountUsage), and
// the whole-number and timeout values checked as text (ParseNumber,
// ParseTimeout).  README "Mounting" lists the options.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace walfs::tools {

struct Config {
  char* image = nullptr;
  // As given: fuse_parse_cmdline would resolve it (realpath) and call a
  // missing one a bad command line; walfs checks it as part of mounting.
  char* mountpoint = nullptr;
  char* wake = nullptr;
  // Numbers are taken as text and parsed whole (fuse_opt's %u takes "-3"
  // as 4294967293 and "5s" as 5): ParseNumber.
  char* logbufs = nullptr;
  char* logbsize = nullptr;
  char* threads = nullptr;
  char* commit = nullptr;  // seconds; parsed whole (fuse_opt's %u ignores trailing text)
  int writeback_cache = -1;  // -1: the default (on)
  char* wb_reserve_mb = nullptr;
  char* wb_push_ms = nullptr;  // milliseconds; parsed whole
  char* lazy_commit = nullptr;  // milliseconds; parsed whole
  char* zeroout_kb = nullptr;   // KiB; parsed whole
  int trace_poll = 0;
  int ro = 0;
  int norecovery = 0;
  int sync_io = 0;   // io=sync: pread/pwrite instead of io_uring
  int force_io_inline = 0, force_io_device = 0;  // force_io=inline|device
  int uring_io = 0;  // io=uring: io_uring even for an image in memory
  int fault_injection = 0;
  int discard = 0;
  char* trace_wakeup = nullptr;
  char* trace_delay_us = nullptr;
  char* trace_recursion = nullptr;
  char* trace_buffer_kb = nullptr;
  // What the kernel may cache and skip (mount/kernel_policy.h).
  char* attr_timeout = nullptr;
  char* entry_timeout = nullptr;
  char* negative_timeout = nullptr;
  int flush_requests = 0;
  int opendir_requests = 0;
  int no_killpriv_v2 = 0;
  char* transport = nullptr;    // auto, dev or uring
  char* uring_lanes = nullptr;  // lanes per ring queue; parsed whole
  int remount = 0;
  int help = 0;
  std::string bad_choice;  // set by ProcessMountArg: what is wrong with an io=/force_io= value

  Config() = default;
  Config(const Config&) = delete;
  Config& operator=(const Config&) = delete;
  // fuse_opt_parse strdup()s every string option.
  ~Config() {
    for (char* p :
         {image, mountpoint, wake, commit, trace_wakeup, trace_recursion, attr_timeout, entry_timeout,
          negative_timeout, wb_reserve_mb, wb_push_ms, logbufs, logbsize, threads, trace_delay_us, trace_buffer_kb,
          lazy_commit, zeroout_kb, transport, uring_lanes})
      free(p);
  }
};

// walfs's -o options for fuse_opt_parse, each into its Config field.
extern const fuse_opt kMountOptions[];

// fuse_opt_parse's callback: IMAGE and MOUNTPOINT, `remount` and `ro`, and
// a walfs choice given a value not among its choices (bad_choice).
int ProcessMountArg(void* data, const char* arg, int key, fuse_args* args);

// The help, in the layout help2man turns into the man page (dist/man/).
void MountUsage();

// "walfs: WHAT; see walfs --help", exit status 2.
int MountUsageError(std::string_view what);

// `name=text` as a whole number from lo to hi into *out (untouched when the
// option was not given); false after printing why not (MountUsageError).
bool ParseNumber(const char* name, const char* text, std::uint64_t lo, std::uint64_t hi, std::uint64_t* out,
                 std::string_view unit = "");

// A cache timeout option's seconds: a number from 0 to a year; false when
// it is not one.
bool ParseTimeout(const char* text, double* out);

}  // namespace walfs::tools
