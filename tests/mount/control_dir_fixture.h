// The ControlDirTest fixture: a ControlDir over the process's tracer, with
// the shell's view of it (cat, echo, ls).  The tracer is process-wide: every
// test starts and ends with Tracer::ResetForTesting(), which restores the
// options, disables every event and turns tracing on.
#pragma once

#include <fcntl.h>

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mount/control_dir.h"
#include "tracing/tracer.h"

namespace walfs::mount {

using tracing::Tracer;

constexpr std::uint64_t kMountRoot = 1;
constexpr std::uint32_t kRoot = 0;  // the caller of every Open below but the access specs

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline std::vector<std::string> EventLines(const std::string& text) {
  std::vector<std::string> out;
  for (std::string& l : Lines(text))
    if (!l.empty() && l[0] != '#') out.push_back(std::move(l));
  return out;
}

class ControlDirTest : public ::testing::Test {
 protected:
  void SetUp() override { Tracer::Get().ResetForTesting(); }
  void TearDown() override { Tracer::Get().ResetForTesting(); }

  ControlDir::Sources MakeSources() {
    ControlDir::Sources s;
    s.tracer = &Tracer::Get();
    s.stats = [] { return std::string("journal:\n  log_forces: 3"); };
    s.get_grant_wake = [this] { return grant_wake_; };
    s.set_grant_wake = [this](std::string_view v) {
      grant_wake_ = std::string(v);
      ++grant_wake_sets_;
      return Status::Ok();
    };
    s.parent_ino = kMountRoot;
    return s;
  }

  // The inode of a path below .walfs ("" is .walfs itself).
  std::uint64_t Ino(std::string_view path) {
    std::uint64_t ino = ControlDir::root_ino();
    while (!path.empty()) {
      const std::size_t slash = path.find('/');
      const std::string_view name = path.substr(0, slash);
      Result<ControlDir::Attr> a = dir_.Lookup(ino, name);
      EXPECT_TRUE(a.ok()) << path << ": " << a.status().ToString();
      if (!a.ok()) return 0;
      ino = a->ino;
      path = slash == std::string_view::npos ? "" : path.substr(slash + 1);
    }
    return ino;
  }

  std::uint64_t OpenOk(std::string_view path, int flags) {
    Result<ControlDir::Opened> h = dir_.Open(Ino(path), flags, kRoot);
    EXPECT_TRUE(h.ok()) << path << ": " << h.status().ToString();
    return h.ok() ? h->handle : 0;
  }

  // cat PATH: reads 4 KiB at a time from offset 0 until EOF.
  std::string Cat(std::string_view path) {
    const std::uint64_t h = OpenOk(path, O_RDONLY);
    std::string all;
    for (;;) {
      Result<std::string> r = dir_.Read(h, all.size(), 4096, false);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok() || r->empty()) break;
      all += *r;
    }
    dir_.Release(h);
    return all;
  }

  // echo VALUE > PATH: open with O_TRUNC, one write at offset 0.
  Status Echo(std::string_view path, std::string_view value) {
    Result<ControlDir::Opened> h = dir_.Open(Ino(path), O_WRONLY | O_TRUNC, kRoot);
    if (!h.ok()) return h.status();
    Result<std::size_t> n = dir_.Write(h->handle, 0, value);
    dir_.Release(h->handle);
    if (!n.ok()) return n.status();
    EXPECT_EQ(*n, value.size());
    return Status::Ok();
  }

  std::vector<std::string> Names(std::string_view path) {
    Result<std::vector<ControlDir::DirEntry>> entries = dir_.ReadDir(Ino(path));
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    std::vector<std::string> out;
    if (entries.ok())
      for (const auto& e : *entries) out.push_back(e.name);
    return out;
  }

  // Waits until a reader has gone to sleep in the tracer since `sleeps`.
  static void AwaitReaderSleep(std::uint64_t sleeps) {
    while (Tracer::Get().Stats().reader_sleeps == sleeps)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  std::string grant_wake_ = "wakeq";
  int grant_wake_sets_ = 0;
  ControlDir dir_{MakeSources()};
};

}  // namespace walfs::mount
