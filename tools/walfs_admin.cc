// walfs-admin: shows and changes an unmounted walfs image's label and UUID,
// as xfs_admin does for XFS, and shows the errors mounts recorded.
//
//   walfs-admin -l IMAGE             label = "data"
//   walfs-admin -u IMAGE             UUID = 0f6c...
//   walfs-admin -e IMAGE             errors = 0 (or the count, then the first
//                                    and the last error a mount recorded, as
//                                    dumpe2fs -h shows ext4's)
//   walfs-admin -L data IMAGE        set the label (up to 64 bytes; -L -- or -L "" clears it)
//   walfs-admin -U generate IMAGE    a new random UUID (or -U 01234567-89ab-...)
//   walfs-admin -L backup -U generate -l -u IMAGE   several at once, in the order given
//
// Only the superblock is rewritten (fs/super.h, through the format's own
// encoder, CRC and all).  The metadata blocks keep the UUID they were made
// with: a new UUID moves the old one to the superblock's meta_uuid, as XFS
// v5 does (fs/format/superblock_format.h).  A change needs the log clean --
// a log still to be replayed holds changes made under the old superblock --
// as xfs_admin does; printing does not, and opens the image read-only (it
// works on an image its user may not write).  Like mkfs.walfs and fsck.walfs it
// holds the image lock (base/file_lock.h) throughout, so it refuses an image
// a walfs daemon has mounted or another tool is using.  Exit status: 0 done,
// 1 refused or failed (one line saying why, nothing changed), 2 a usage
// error (an unknown option, a label too long, a malformed or nil UUID).
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/block_device_file.h"
#include "fs/format/superblock_format.h"
#include "fs/mkfs.h"
#include "fs/super.h"
#include "fs/super_copy.h"
#include "tools/cli.h"

namespace walfs {
namespace {

constexpr int kExitOk = 0, kExitFail = 1;
constexpr std::string_view kProgram = "walfs-admin";

CLI::Validator LabelFits() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.size() <= fs::format::kLabelSize) return "";
        return fmt::format("label is {} bytes; at most {}", text.size(), fs::format::kLabelSize);
      },
      fmt::format("TEXT<={}B", fs::format::kLabelSize));
}

// "generate" or a UUID that is not nil: a nil UUID names no filesystem
// (blkid, fstab's UUID= and statfs's f_fsid could not tell images apart).
CLI::Validator UuidArgument() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text == "generate") return "";
        if (text == "nil")
          return "the nil UUID is not allowed: it would name no filesystem; give a UUID or 'generate'";
        auto u = fs::format::ParseUuid(text);
        if (!u.ok()) return std::string(u.status().message());
        if (*u == fs::format::Uuid{})
          return "the nil UUID is not allowed: it would name no filesystem; give a UUID or 'generate'";
        return "";
      },
      "UUID|generate");
}

// xfs_admin clears a label with `-L --`; CLI11 would read that "--" as the
// end of the options, so it becomes the empty label first.
void EmptyLabelForDashDash(int argc, char** argv) {
  static char empty[] = "";
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == "-L" || a == "--label") && std::string_view(argv[i + 1]) == "--") argv[i + 1] = empty;
  }
}

int Run(int argc, char** argv) {
  CLI::App app{"walfs-admin: show or change an unmounted walfs image's label and UUID",
               std::string(kProgram)};
  cli::AddVersion(app, kProgram);
  std::string image, label, uuid_text;
  bool print_label = false, print_uuid = false, print_errors = false;  // when: parse_order()'s
  auto* show_label = app.add_flag("-l,--print-label", print_label, "print the label: label = \"...\"");
  auto* show_uuid = app.add_flag("-u,--print-uuid", print_uuid, "print the UUID: UUID = ...");
  auto* show_errors = app.add_flag("-e,--print-errors", print_errors,
                                   "print the errors mounts recorded (errors = N, first error = ..., last "
                                   "error = ...); fsck.walfs -y clears them once it has repaired the image");
  auto* set_label = app.add_option("-L,--label", label,
                                   fmt::format("set the label (up to {} bytes); -- or \"\" clears it",
                                               fs::format::kLabelSize))
                        ->check(LabelFits());
  auto* set_uuid = app.add_option("-U,--uuid", uuid_text,
                                  "set the UUID: a UUID, or 'generate' for a new random one")
                       ->check(UuidArgument());
  app.add_option("IMAGE", image, "image file or block device, not mounted")->required();
  app.footer("Flags run in the order given.  -L and -U need the log clean (replayed); every flag\n"
             "needs the image lock: not mounted, not in use by mkfs.walfs or fsck.walfs.");
  EmptyLabelForDashDash(argc, argv);
  if (auto code = cli::Parse(app, argc, argv)) return *code;
  if (!show_label->count() && !show_uuid->count() && !show_errors->count() && !set_label->count() &&
      !set_uuid->count())
    return cli::UsageError(kProgram, "nothing to do: give -l, -u, -e, -L LABEL or -U UUID");
  auto fail = [&](std::string_view why) {
    fmt::print(stderr, "{}: {}: {}\n", kProgram, image, why);
    return kExitFail;
  };

  // The lock for as long as the device is open: a mounted image changes
  // under us, and a daemon would write its own superblock back over ours.
  // Only showing opens it read-only, so -l and -u work on an image nobody
  // may write (mode 0444, `chattr +i`, read-only media), as xfs_db -r does.
  const bool changing = set_label->count() || set_uuid->count();
  auto dev = FileDevice::Open(image, {.exclusive = true, .read_only = !changing});
  if (!dev.ok()) {
    fmt::print(stderr, "{}: {}{}\n", kProgram, dev.status().message(),
               changing && CannotOpenForWriting(dev.status())
                   ? "; -L and -U rewrite the superblock, which needs write access to the image "
                     "(-l and -u alone do not); nothing changed"
                   : "");
    return kExitFail;
  }
  auto sb = fs::ReadSuperblock(dev->get());
  if (!sb.ok()) return fail(fmt::format("{}; nothing changed", sb.status().message()));
  if (changing) {
    auto dirty = fs::LogNeedsRecovery(dev->get(), *sb);
    if (!dirty.ok())
      return fail(fmt::format("the log cannot be read ({}); run fsck.walfs {} (-L zeroes a log that "
                              "cannot be replayed); nothing changed",
                              dirty.status().message(), image));
    if (*dirty)
      return fail(fmt::format("the log holds changes not yet replayed (it was not unmounted "
                              "cleanly); replay the log first: mount and unmount it, or run "
                              "fsck.walfs {}; nothing changed",
                              image));
  }

  // In the order given, as xfs_admin runs its xfs_db commands; printed
  // only once the superblock is written.
  std::vector<std::string> lines;
  for (const CLI::Option* opt : app.parse_order()) {
    if (opt == show_label) {
      lines.push_back(fmt::format("label = \"{}\"", sb->label));
    } else if (opt == show_uuid) {
      lines.push_back(fmt::format("UUID = {}", fs::format::UuidString(sb->uuid)));
    } else if (opt == show_errors) {
      // The record as last written back: a log still to be replayed may
      // hold a later one (mount and unmount, or fsck.walfs, replays it).
      const fs::format::ErrorRecord& e = sb->errors;
      lines.push_back(fmt::format("errors = {}", e.count));
      if (!e.empty()) {
        lines.push_back(fmt::format("first error = {}", fs::format::ErrorEventString(e.first)));
        lines.push_back(fmt::format("last error = {}", fs::format::ErrorEventString(e.last)));
      }
    } else if (opt == set_label) {
      sb->label = label;
      lines.push_back(fmt::format("new label = \"{}\"", sb->label));
    } else if (opt == set_uuid) {
      sb->ChangeUuid(uuid_text == "generate" ? fs::NewUuid() : *fs::format::ParseUuid(uuid_text));
      lines.push_back(fmt::format("new UUID = {}", fs::format::UuidString(sb->uuid)));
    }
  }
  if (changing) {
    if (Status s = fs::WriteSuperblock(dev->get(), *sb); !s.ok())
      return fail(fmt::format("writing the superblock: {}", s.message()));
    // The copies in the AG headers follow (fsck rebuilds a damaged
    // superblock from them, and checks that they agree with it).
    if (Status s = fs::WriteSuperblockCopies(dev->get(), *sb); !s.ok())
      return fail(fmt::format("writing the superblock's copies in the AG headers: {}", s.message()));
  }
  for (const std::string& line : lines) fmt::print("{}\n", line);
  return kExitOk;
}

}  // namespace
}  // namespace walfs

int main(int argc, char** argv) { return walfs::Run(argc, argv); }
