// ThreadReport: what each thread of a process is doing, for a test that
// finds the walfs daemon still running (or hung) when it should not be.
//
// Per thread: its id, name, state and the kernel function it waits in
// (/proc/PID/task/TID/{comm,stat,wchan}), its kernel stack where readable
// (root), and its user stack from gdb where gdb is installed.  A CI log then
// says where the daemon stood instead of only "still runs".
#pragma once

#include <sys/types.h>

#include <string>

namespace walfs::testing {

std::string ThreadReport(pid_t pid);

}  // namespace walfs::testing
