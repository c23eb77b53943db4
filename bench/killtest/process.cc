#include "bench/killtest/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace walfs::bench::killtest {

Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  // Everything exec needs is built before fork: the child only makes
  // async-signal-safe calls.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env_store = options.env;
  std::vector<char*> cenv;
  for (char** e = environ; *e != nullptr; ++e) cenv.push_back(*e);
  for (std::string& e : env_store) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const bool path_search = argv.at(0).find('/') == std::string::npos;
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno(errno, "fork");
  if (pid == 0) {
    if (options.own_group) ::setpgid(0, 0);
    if (options.term_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);
    }
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    if (!options.log_path.empty()) {
      const int fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
    }
    environ = cenv.data();
    if (path_search)
      ::execvp(cargv[0], cargv.data());
    else
      ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  if (options.own_group) ::setpgid(pid, pid);  // either side may win the race
  return pid;
}

std::optional<int> WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return 0;  // not our child (already reaped)
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void KillGroupAndReap(pid_t pid) {
  if (pid <= 0) return;
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by {}", strsignal(WTERMSIG(status)));
  return fmt::format("wait status {}", status);
}

RunResult Run(const std::vector<std::string>& argv) {
  char templ[] = "/tmp/walfs-killtest-run-XXXXXX";
  const int fd = ::mkstemp(templ);
  RunResult r;
  if (fd < 0) {
    r.output = fmt::format("mkstemp: {}", std::strerror(errno));
    return r;
  }
  ::close(fd);
  SpawnOptions so = LogTo(templ);
  so.own_group = false;
  Result<pid_t> pid = Spawn(argv, so);
  if (!pid.ok()) {
    r.output = std::string(pid.status().message());
  } else {
    int status = 0;
    while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.output = Slurp(templ);
  }
  ::unlink(templ);
  return r;
}

std::string Slurp(const std::string& path, std::size_t from) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return from < s.size() ? s.substr(from) : std::string();
}

}  // namespace walfs::bench::killtest
