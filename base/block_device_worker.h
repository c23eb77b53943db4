// BlockDeviceWorker: one thread that runs a device's batched requests one at
// a time, in submission order, and runs each request's callback right after
// it.  The batched path of every device without a native asynchronous engine
// (MemoryDevice, FileDevice's pread/pwrite engine, FaultDevice,
// RecordingDevice) is a worker, so they all keep BlockDevice's completion
// contract the same way:
//
//   class MyDevice : public BlockDevice {
//     void DoSubmit(std::vector<IoRequest> batch) override {
//       worker_.EnqueueRequests(std::move(batch),
//                               [this](const IoRequest& r) { return Execute(r); });
//     }
//     ...
//     BlockDeviceWorker worker_{"walfs-mydev"};   // declared last: stops first
//   };
//
// Because tasks run one at a time, a task starts only after every earlier one
// has completed: a flush covers every write submitted before it, which is
// stronger than BlockDevice promises.  The worker must be stopped (Stop(), or
// its destructor) before anything its tasks touch is destroyed, so declare it
// last in the owning class.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/block_device.h"
#include "base/mutex.h"

namespace walfs {

class BlockDeviceWorker {
 public:
  struct Task {
    std::function<Status()> run;  // on the worker thread
    IoCallback done;              // then this, with run's result
  };

  // Starts the thread, named `name` (at most 15 characters are kept).
  explicit BlockDeviceWorker(std::string name);
  ~BlockDeviceWorker();
  BlockDeviceWorker(const BlockDeviceWorker&) = delete;
  BlockDeviceWorker& operator=(const BlockDeviceWorker&) = delete;

  // Queues tasks behind every task queued before.  May be called from a task.
  void Enqueue(std::vector<Task> tasks) EXCLUDES(mu_);
  // Enqueue() with one task per request: execute(req), then req.done.
  void EnqueueRequests(std::vector<IoRequest> batch,
                       const std::function<Status(const IoRequest&)>& execute) EXCLUDES(mu_);
  // Runs every queued task (including ones queued by tasks meanwhile), then
  // joins the thread.  Idempotent; Enqueue() after Stop() is a bug.
  void Stop() EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);

  const std::string name_;
  Mutex mu_;  // leaf lock: never held while a task or callback runs
  CondVar cv_{&mu_};
  std::deque<Task> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the fields above exist
};

}  // namespace walfs
