// What every walfs program does the same way on its command line (STYLE.md
// rule 24): -V/--version prints the walfs version and the on-disk format
// versions, and a usage error is one line on stderr with a hint, exit 2
// (fsck.walfs: 16, as fsck(8) says), never an uncaught exception.
//
//   CLI::App app{"mkfs.walfs: make a walfs filesystem"};
//   cli::AddVersion(app, "mkfs.walfs");
//   ... options ...
//   if (auto code = cli::Parse(app, argc, argv)) return *code;  // help, version or a usage error
//
// For checks CLI11 cannot express (an option's allowed range depending on
// another), UsageError() prints the same one line and returns the code.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace walfs::cli {

inline constexpr int kUsageExit = 2;       // every program but fsck.walfs
inline constexpr int kFsckUsageExit = 16;  // fsck(8): "usage or syntax error"

// "mkfs.walfs (walfs 0.1.0): image format 1, log format 1".
std::string VersionText(std::string_view program);

// Adds -V and --version to `app`, printing VersionText(program).
void AddVersion(CLI::App& app, std::string_view program);

// Parses; nullopt when the program should go on.  Otherwise the exit code:
// 0 after --help or --version (printed on stdout), `usage_exit` after a
// usage error, printed as "PROGRAM: WHAT; see PROGRAM --help" on stderr.
std::optional<int> Parse(CLI::App& app, int argc, char** argv, int usage_exit = kUsageExit);

// The one-line text of a parse error, as Parse prints it: CLI11's message,
// or, when CLI11 stopped at a missing required argument, the first option
// that the app (or the subcommand it names) does not know, which is the
// mistake.  For a program that reports usage errors itself (walfs-aim).
std::string ParseErrorText(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv);

// An option check: a whole number of at least `min` ("must be a whole
// number of at least 1, not 0"), unlike CLI::PositiveNumber, whose message
// prints the largest double.
CLI::Validator AtLeast(long long min);
// A number above 0 (a duration, a ratio).
CLI::Validator Positive();

// A size as mkfs.walfs and walfs-growfs take it: bytes, or with a K, M, G
// or T suffix (binary; "B" after it allowed: "10g", "64M", "1TB").
// InvalidArgument saying what is wrong.
Result<std::uint64_t> ParseSize(std::string_view text);

// A file that cannot be used, as coreutils and trace-cmd say it: one line
// "PROGRAM: PATH: what is wrong" on stderr (the status's message, without
// its code name; PATH not repeated when the message starts with it).
// Returns 1.
int FileError(std::string_view program, std::string_view path, const Status& s);

// Prints "PROGRAM: WHAT; see PROGRAM --help" on stderr and returns usage_exit.
int UsageError(std::string_view program, std::string_view what, int usage_exit = kUsageExit);

// The whole of a small file (a /proc file, a file of a mount's .walfs
// directory); empty when it cannot be read.
std::string ReadSmallFile(const std::filesystem::path& path);

}  // namespace walfs::cli
