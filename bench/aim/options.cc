#include "bench/aim/options.h"

#include <cctype>
#include <limits>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/cli.h"

namespace walfs::bench::aim {
namespace {

constexpr int kMaxUsers = 10000;
constexpr int kMaxJobs = 100000;
constexpr std::int64_t kMaxSizeKib = std::int64_t{1} << 30;  // 1 TiB

// --quick: four small load levels, the full fserver job list.
constexpr int kQuickEnd = 4;

Status Validate(const Options& o) {
  if (o.dirs.empty()) return Status::InvalidArgument("no test directory given (walfs-aim DIR...)");
  if (o.start_users < 1 || o.start_users > kMaxUsers)
    return Status::InvalidArgument(fmt::format("start users {} is not in 1..{}", o.start_users, kMaxUsers));
  if (o.end_users < o.start_users || o.end_users > kMaxUsers)
    return Status::InvalidArgument(
        fmt::format("end users {} is not in {}..{}", o.end_users, o.start_users, kMaxUsers));
  if (o.increment < 1) return Status::InvalidArgument("the user increment must be at least 1");
  if (o.jobs < 1 || o.jobs > kMaxJobs)
    return Status::InvalidArgument(fmt::format("jobs {} is not in 1..{}", o.jobs, kMaxJobs));
  if (o.reps < 1) return Status::InvalidArgument("--reps must be at least 1");
  // Every recipe needs files of at least one block at the largest load.
  if (o.filesize_kib + o.poolsize_kib / o.end_users < 1)
    return Status::InvalidArgument(
        fmt::format("FILESIZE + POOLSIZE / {} users is less than 1K", o.end_users));
  return Status::Ok();
}

}  // namespace

std::vector<int> Options::LoadLevels() const {
  std::vector<int> levels;
  for (int u = start_users; u <= end_users; u += increment) levels.push_back(u);
  return levels;
}

Result<std::int64_t> ParseSizeKib(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string suffix = text.substr(digits);
  std::int64_t scale = 0;
  if (suffix.empty() || suffix == "K" || suffix == "k") scale = 1;
  if (suffix == "M" || suffix == "m") scale = 1024;
  if (suffix == "G" || suffix == "g") scale = 1024 * 1024;
  if (digits == 0 || digits > 10 || scale == 0)
    return Status::InvalidArgument(fmt::format("bad size '{}' (want a number with K, M or G)", text));
  const std::int64_t value = std::stoll(text.substr(0, digits)) * scale;
  if (value > kMaxSizeKib) return Status::InvalidArgument(fmt::format("size '{}' is too large", text));
  return value;
}

Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args) {
  ParsedArgs parsed;
  Options& o = parsed.options;
  std::string filesize = "10K", poolsize = "1M";
  bool fs_only = false;

  CLI::App app{
      "AIM7/re-aim-7 fserver-style multi-user file system load.  Each user is a process\n"
      "running a shuffled list of the fserver mix's tests in DIR (several DIRs: each user\n"
      "moves to the next for every job).  Prints re-aim's table per load level."};
  app.name("walfs-aim");
  cli::AddVersion(app, "walfs-aim");
  app.add_option("DIR", o.dirs, "Directories to load (on the file systems under test)")->required();
  app.add_option("-s,--startusers", o.start_users, "Users at the first load level (default 1)");
  app.add_option("-e,--endusers", o.end_users, "Users at the last load level (default 5)");
  app.add_option("-i,--increment", o.increment, "Users added per load level (default 1)");
  app.add_option("-j,--jobs", o.jobs,
                 "Jobs per user before re-aim's rounding (default 100: 102 jobs with --fs-only)");
  auto* fs_flag = app.add_flag("--fs-only", fs_only, "Filesystem tests only (the default)");
  app.add_flag("--with-cpu", o.with_cpu, "Add the fserver CPU tests as think time")->excludes(fs_flag);
  app.add_flag("--sync", o.sync_calls,
               "Sync where re-aim calls system(\"sync\") (off: re-aim's -y): syncfs(), and on "
               "walfs its .walfs/sync (sync(2) never reaches a FUSE daemon)");
  app.add_option("--filesize", filesize, "FILESIZE: base size of every test file (default 10K)");
  app.add_option("--poolsize", poolsize, "POOLSIZE: shared among the users, added per file (default 1M)");
  app.add_option("--reps", o.reps, "Run every load level this many times, interleaved; report medians");
  app.add_option("--seed", o.seed, "Seed of the job lists and random offsets (default 1)");
  app.add_flag("--quick", o.quick, "Short run: users 1..4, one repetition");
  app.add_option("--json", o.json_path, "Write the table as JSON (one object per row)");
  app.add_option("--csv", o.csv_path, "Write the table as CSV");

  std::vector<const char*> argv{"walfs-aim"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    parsed.help = true;
    parsed.help_text = app.help();
    return parsed;
  } catch (const CLI::CallForVersion&) {
    parsed.help = true;
    parsed.help_text = cli::VersionText("walfs-aim") + "\n";
    return parsed;
  } catch (const CLI::ParseError& e) {
    return Status::InvalidArgument(cli::ParseErrorText(app, e, static_cast<int>(argv.size()),
                                                       const_cast<char**>(argv.data())));
  }
  if (o.quick) {
    if (app.count("--startusers") == 0) o.start_users = 1;
    if (app.count("--endusers") == 0) o.end_users = kQuickEnd;
  }
  WALFS_ASSIGN_OR_RETURN(o.filesize_kib, ParseSizeKib(filesize));
  WALFS_ASSIGN_OR_RETURN(o.poolsize_kib, ParseSizeKib(poolsize));
  WALFS_RETURN_IF_ERROR(Validate(o));
  return parsed;
}

}  // namespace walfs::bench::aim
