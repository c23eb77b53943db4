#include "tests/hostile/hostile_round.h"

#include <functional>
#include <memory>

#include <fmt/format.h>

#include "base/block_device_memory.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"

namespace walfs::hostile {

namespace {

// fsck, mount, walk, unmount, each on a fresh device from make_device():
// fills *r, returns the messages logged.
std::string Round(const std::function<std::unique_ptr<MemoryDevice>()>& make_device, RoundResult* r) {
  {
    std::unique_ptr<MemoryDevice> dev = make_device();
    Result<fs::FsckReport> report = fs::CheckImage(dev.get(), {.replay = true, .repair = false});
    if (!report.ok()) {
      r->fsck_flagged = true;
      r->fsck_exit = 8;
      r->fsck_first = report.status().ToString();
      if (report.status().message().empty()) r->violations.push_back("fsck: an error without a message");
    } else {
      r->fsck_exit = report->ExitCode();
      r->fsck_flagged = !report->opened || !report->problems.empty();
      if (!report->problems.empty()) r->fsck_first = report->problems.front().message;
      else if (!report->opened) r->fsck_first = "could not open the image";
      for (const fs::FsckProblem& p : report->problems)
        if (p.message.empty()) r->violations.push_back("fsck: a problem without a message");
    }
    if (r->mutation.must_flag && !r->fsck_flagged)
      r->violations.push_back(fmt::format("fsck found nothing wrong after: {}", r->mutation.description));
  }

  std::unique_ptr<MemoryDevice> dev = make_device();
  Result<std::unique_ptr<fs::Filesystem>> fs = fs::Filesystem::MountDevice(dev.get(), {.image = {}, .buffer_cache = 1024});
  if (!fs.ok()) {
    r->mount_error = fs.status().ToString();
    if (fs.status().message().empty()) r->violations.push_back("mount: refused without a message");
    return Messages::Get().Text();
  }
  r->mounted = true;
  ExerciseMounted(fs->get(), r);
  const Status s = (*fs)->Unmount();
  r->unmount_ok = s.ok();
  if (!s.ok()) {
    r->unmount_error = s.ToString();
    if (s.message().empty()) r->violations.push_back("unmount: an error without a message");
  }
  fs->reset();
  return Messages::Get().Text();
}

}  // namespace

RoundResult RunRound(const BaseImage& base, std::uint64_t seed, int kind) {
  ScratchImage scratch(base);
  RoundResult r;
  r.mutation = Mutate(base, seed, scratch.bytes(), kind);
  r.seed = seed;
  const DamagedImage damaged = scratch.Damaged(r.mutation.offset, r.mutation.length);
  Messages::Get().Clear();
  r.messages = Round([&] { return damaged.Device(); }, &r);
  return r;
}

RoundResult RunOnImage(std::vector<std::byte> image, const Mutation& m) {
  RoundResult r;
  r.mutation = m;
  Messages::Get().Clear();
  // fsck gets a copy; the mount, after it, the image itself.
  bool fsck_done = false;
  r.messages = Round(
      [&] {
        if (fsck_done) return std::make_unique<MemoryDevice>(std::move(image));
        fsck_done = true;
        return std::make_unique<MemoryDevice>(image);
      },
      &r);
  return r;
}

}  // namespace walfs::hostile
