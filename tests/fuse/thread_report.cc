#include "tests/fuse/thread_report.h"

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The state letter of /proc/.../stat: the field after the parenthesised
// name, which may itself hold spaces and parentheses.
char StateOf(const std::string& stat) {
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
}

}  // namespace

std::string ThreadReport(pid_t pid) {
  const std::filesystem::path tasks = fmt::format("/proc/{}/task", pid);
  std::error_code ec;
  std::string out;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    const std::filesystem::path t = task.path();
    out += fmt::format("  thread {} {} state {} in {}\n", t.filename().string(), Trimmed(Slurp(t / "comm")),
                       StateOf(Slurp(t / "stat")), Trimmed(Slurp(t / "wchan")));
    std::istringstream stack(Slurp(t / "stack"));
    for (std::string frame; std::getline(stack, frame);) out += "      " + frame + "\n";
  }
  if (ec) return fmt::format("(no threads of pid {}: {})\n", pid, ec.message());
  if (RunTool("command -v gdb >/dev/null").exit_code == 0) {
    out += "user stacks (gdb):\n" + RunTool(fmt::format("timeout 60 gdb -p {} -batch -ex 'thread apply all bt 30' "
                                                         "2>/dev/null | grep '^#\\|^Thread'",
                                                         pid))
                                         .out;
  }
  return out;
}

}  // namespace walfs::testing
