// Running a command-line tool from a test: its exit status and everything it
// printed (stdout and stderr together).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace walfs::testing {

struct ToolRun {
  int exit_code = -1;
  std::string out;
};

inline ToolRun RunTool(const std::string& command) {
  ToolRun r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace walfs::testing
