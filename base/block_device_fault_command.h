// The text commands that drive a FaultDevice at run time: what a mount with
// `-o fault_injection` accepts in `/.walfs/fault` (like XFS's errortag
// files under /sys/fs/xfs), one command per write:
//
//   write N [ERR]          the N-th write from now fails (ERR: errno number or
//                          name, default EIO)
//   writes N [ERR]         the N-th write from now and every later one fail
//   tear N SECTORS [ERR]   the N-th write lands its first SECTORS sectors, then fails
//   flush N [ERR]          the N-th flush from now fails
//   flushes [ERR]          every flush from now fails
//   read OFFSET LEN [ERR]  reads touching bytes [OFFSET, OFFSET+LEN) of the image fail
//   clear                  no more faults
//
// Numbers are decimal or 0x-hex.  A torn write always reports its error: a
// disk that silently drops a write's tail is the crash harness's business,
// not a run-time fault.  FaultText() is what reading the file shows: the
// last command applied and the device's counters.
#pragma once

#include <string>
#include <string_view>

#include "base/block_device_fault.h"
#include "base/status.h"

namespace walfs {

// Applies one command to `dev`; InvalidArgument (EINVAL) naming what is
// wrong, with nothing changed, for anything else.
Status ApplyFaultCommand(FaultDevice* dev, std::string_view command);

// "last: <command>\n" and one "key: value" line per FaultCounters field.
std::string FaultText(const FaultDevice& dev, std::string_view last_command);

// An errno from "EIO", "ENOSPC", ... or a decimal number (1..4095).
Result<int> ParseErrnoName(std::string_view s);

}  // namespace walfs
