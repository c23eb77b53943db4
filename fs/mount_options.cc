#include <fmt/format.h>

#include "fs/filesystem.h"

namespace walfs::fs {

std::string MountOptions::OptionsText() const {
  auto onoff = [](bool b) { return b ? "on" : "off"; };
  return fmt::format(
      "image={}\nro={}\nnorecovery={}\nlogbufs={}\nlogbsize={}\ncommit={}\nlazy_commit_ms={}\nzeroout_kb={}\n"
      "io={}\nforce_io={}\ndiscard={}\nfault_injection={}\n",
      image, onoff(read_only), onoff(norecovery), logbufs, logbsize, commit_interval_s, lazy_commit_ms, zeroout_kb,
      !io_uring ? "sync" : io_uring_in_memory ? "uring" : "default",
      inline_force_io ? "inline" : "device", onoff(discard), onoff(fault_injection));
}

}  // namespace walfs::fs
