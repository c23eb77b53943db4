#include "tests/hostile/hostile_guard.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace walfs::hostile {

namespace {

std::atomic<std::uint64_t> current_seed{0};
std::atomic<bool> in_round{false};

// Async-signal-safe: formats the seed by hand and write(2)s the line.
void SayDied() {
  if (!in_round.load()) return;
  char buf[64];
  char digits[24];
  int n = 0;
  std::uint64_t v = current_seed.load();
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  const char prefix[] = "\nwalfs-hostile: round seed=";
  int len = 0;
  for (const char c : prefix)
    if (c != '\0') buf[len++] = c;
  while (n > 0) buf[len++] = digits[--n];
  const char suffix[] = " died\n";
  for (const char c : suffix)
    if (c != '\0') buf[len++] = c;
  (void)!write(STDERR_FILENO, buf, static_cast<std::size_t>(len));
}

void OnFatalSignal(int sig) {
  SayDied();
  signal(sig, SIG_DFL);
  raise(sig);
}

void InstallOnce() {
  static const bool installed = [] {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
      struct sigaction old {};
      sigaction(sig, nullptr, &old);
      // Leave a sanitizer's own handler alone; its death callback speaks.
      if (old.sa_handler == SIG_DFL) signal(sig, OnFatalSignal);
    }
    if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(SayDied);
    return true;
  }();
  (void)installed;
}

}  // namespace

RoundGuard::RoundGuard(double timeout_s) : timeout_s_(timeout_s) {
  InstallOnce();
  watcher_ = std::thread([this] { Watch(); });
}

RoundGuard::~RoundGuard() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  watcher_.join();
}

void RoundGuard::Begin(std::uint64_t seed) {
  current_seed.store(seed);
  in_round.store(true);
  {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = true;
    ++generation_;
  }
  cv_.notify_all();
}

void RoundGuard::End() {
  in_round.store(false);
  {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = false;
  }
  cv_.notify_all();
}

void RoundGuard::Watch() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(l);
      continue;
    }
    const std::uint64_t gen = generation_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    while (!stop_ && armed_ && generation_ == gen)
      if (cv_.wait_until(l, deadline) == std::cv_status::timeout && armed_ && generation_ == gen) {
        std::fprintf(stderr, "\nwalfs-hostile: round seed=%llu hung for %.0f s\n",
                     static_cast<unsigned long long>(current_seed.load()), timeout_s_);
        std::abort();
      }
  }
}

}  // namespace walfs::hostile
