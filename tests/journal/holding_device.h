// HoldingDevice: a BlockDevice wrapper for tests that holds batched requests
// until the test releases them, then completes the held ones newest first --
// a device far less kind than the contract (which completes in submission
// order), to show that the log's ordering does not depend on it, and a way
// to stall log I/O at a chosen moment.  Completions run on the device's own
// thread; Submit never waits for them.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "base/block_device.h"

namespace walfs::journal::testing {

class HoldingDevice final : public BlockDevice {
 public:
  explicit HoldingDevice(BlockDevice* inner)
      : BlockDevice(inner->size_bytes(), inner->logical_block_size(), inner->io_alignment()),
        inner_(inner),
        thread_([this] { Main(); }) {}
  ~HoldingDevice() override {
    Open();
    {
      std::unique_lock<std::mutex> l(mu_);
      idle_cv_.wait(l, [this] { return run_.empty() && !running_; });
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::string_view kind() const override { return "holding"; }
  std::size_t held() {
    std::lock_guard<std::mutex> l(mu_);
    return held_.size();
  }
  // Completes everything held so far, newest first.
  void ReleaseAll() {
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto it = held_.rbegin(); it != held_.rend(); ++it) run_.push_back(std::move(*it));
      held_.clear();
    }
    cv_.notify_all();
  }
  // From now on requests are held until released (the initial state).
  void Hold() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = false;
  }
  // From now on requests complete at once (in submission order).
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu_);
      open_ = true;
    }
    ReleaseAll();
  }

 protected:
  Status DoRead(std::uint64_t o, std::byte* b, std::size_t n) override { return inner_->Read(o, b, n); }
  Status DoWrite(std::uint64_t o, const std::byte* b, std::size_t n, IoFlags f) override {
    return inner_->Write(o, b, n, f);
  }
  Status DoFlush() override { return inner_->Flush(); }
  void DoSubmit(std::vector<IoRequest> batch) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      for (IoRequest& r : batch) (open_ ? run_ : held_).push_back(std::move(r));
    }
    cv_.notify_all();
  }

 private:
  void Main() {
    internal::MarkCompletionThread();
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return stop_ || !run_.empty(); });
      if (run_.empty()) return;
      IoRequest r = std::move(run_.front());
      run_.pop_front();
      running_ = true;
      l.unlock();
      Status s = Execute(r);
      r.done(s);
      l.lock();
      running_ = false;
      idle_cv_.notify_all();
    }
  }

  BlockDevice* inner_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<IoRequest> held_;
  std::deque<IoRequest> run_;
  bool open_ = false;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace walfs::journal::testing
