#include "base/block_device_worker.h"

#include <pthread.h>

#include <utility>

#include "base/check.h"

namespace walfs {

BlockDeviceWorker::BlockDeviceWorker(std::string name)
    : name_(std::move(name)), thread_([this] { Loop(); }) {}

BlockDeviceWorker::~BlockDeviceWorker() { Stop(); }

void BlockDeviceWorker::Enqueue(std::vector<Task> tasks) {
  MutexLock l(&mu_);
  // While stopping, only the worker's own callbacks may add work (it is
  // drained before the thread exits); anyone else is using a dying device.
  WALFS_CHECK_MSG(!stopping_ || std::this_thread::get_id() == thread_.get_id(),
                  "request submitted to a device being destroyed");
  const bool was_empty = queue_.empty();
  for (Task& t : tasks) queue_.push_back(std::move(t));
  // The worker sleeps only on an empty queue, so only that case needs a wake.
  if (was_empty) cv_.Signal();
}

void BlockDeviceWorker::EnqueueRequests(
    std::vector<IoRequest> batch, const std::function<Status(const IoRequest&)>& execute) {
  std::vector<Task> tasks;
  tasks.reserve(batch.size());
  for (IoRequest& req : batch) {
    IoCallback done = std::move(req.done);
    tasks.push_back({[execute, req = std::move(req)] { return execute(req); }, std::move(done)});
  }
  Enqueue(std::move(tasks));
}

void BlockDeviceWorker::Stop() {
  WALFS_CHECK_MSG(std::this_thread::get_id() != thread_.get_id(),
                  "a completion callback destroyed its own device");
  {
    MutexLock l(&mu_);
    stopping_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void BlockDeviceWorker::Loop() {
  internal::MarkCompletionThread();
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  while (true) {
    Task task;
    {
      MutexLock l(&mu_);
      while (queue_.empty() && !stopping_) cv_.Wait(&mu_);
      // Stopping drains the queue first: every accepted request completes.
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    Status s = task.run();
    task.done(std::move(s));
  }
}

}  // namespace walfs
