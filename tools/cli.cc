#include "tools/cli.h"

#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/version.h"
#include "fs/format/superblock_format.h"
#include "journal/log_format.h"

namespace walfs::cli {

Result<std::uint64_t> ParseSize(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("empty size");
  std::size_t pos = 0;
  std::uint64_t v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    const std::uint64_t d = static_cast<std::uint64_t>(text[pos] - '0');
    if (v > (UINT64_MAX - d) / 10) return Status::InvalidArgument(fmt::format("size \"{}\" overflows", text));
    v = v * 10 + d;
    ++pos;
  }
  if (pos == 0) return Status::InvalidArgument(fmt::format("size \"{}\" is not a number", text));
  int shift = 0;
  if (pos < text.size()) {
    switch (text[pos] | 0x20) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: return Status::InvalidArgument(fmt::format("size \"{}\": unknown unit", text));
    }
    ++pos;
    if (pos < text.size() && (text[pos] | 0x20) == 'b') ++pos;  // "10GB", "64mb"
    if (pos != text.size()) return Status::InvalidArgument(fmt::format("size \"{}\": trailing text", text));
  }
  if (shift && v > (UINT64_MAX >> shift)) return Status::InvalidArgument(fmt::format("size \"{}\" overflows", text));
  return v << shift;
}

std::string VersionText(std::string_view program) {
  return fmt::format("{} (walfs {}): image format {}, log format {}", program, kWalfsVersion,
                     fs::format::kFormatVersion, journal::kLogFormatVersion);
}

void AddVersion(CLI::App& app, std::string_view program) {
  // -V as well, as mkfs.xfs, e2fsck and mount.fuse3 take it.
  app.set_version_flag("-V,--version", VersionText(program), "print the walfs and on-disk format versions");
}

CLI::Validator AtLeast(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        long long v = 0;
        std::size_t used = 0;
        try {
          v = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || v < min)
          return fmt::format("must be a whole number of at least {}, not '{}'", min, text);
        return "";
      },
      fmt::format("INT>={}", min));
}

CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !(v > 0))
          return fmt::format("must be a number above 0, not '{}'", text);
        return "";
      },
      "NUMBER>0");
}

int FileError(std::string_view program, std::string_view path, const Status& s) {
  const std::string_view m = s.message();
  if (m.starts_with(path))
    fmt::print(stderr, "{}: {}\n", program, m);
  else
    fmt::print(stderr, "{}: {}: {}\n", program, path, m);
  return 1;
}

int UsageError(std::string_view program, std::string_view what, int usage_exit) {
  fmt::print(stderr, "{}: {}; see {} --help\n", program, what, program);
  return usage_exit;
}

std::optional<int> Parse(CLI::App& app, int argc, char** argv, int usage_exit) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string program = app.get_name();
    if (program.empty() && argc > 0) program = argv[0];
    if (const auto slash = program.rfind('/'); slash != std::string::npos) program = program.substr(slash + 1);
    return UsageError(program, ParseErrorText(app, e, argc, argv), usage_exit);
  }
}

namespace {

// The first option on the command line that neither the app nor the
// subcommand it stands under (nor that one's parents) knows; empty if none.
// The scan ends at "--" and at the first positional word that names no
// subcommand: after it an option may be the positional's own (a program
// walfs-trace record runs, with its arguments).
std::string FirstUnknownOption(const CLI::App& app, int argc, char** argv) {
  std::vector<const CLI::App*> scope{&app};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.empty() || arg[0] != '-') {
      const std::string word(arg);
      const std::vector<const CLI::App*> sub = scope.back()->get_subcommands(
          [&word](const CLI::App* a) { return !a->get_name().empty() && a->check_name(word); });
      if (sub.empty()) break;
      scope.push_back(sub.front());
      continue;
    }
    if (arg.size() < 2 || (arg[1] >= '0' && arg[1] <= '9')) continue;  // "-", a negative number
    const bool is_long = arg[1] == '-';
    const std::string name = is_long ? std::string(arg.substr(0, arg.find('='))) : std::string(arg.substr(0, 2));
    const CLI::Option* known = nullptr;
    for (const CLI::App* a : scope)
      if (known == nullptr) known = a->get_option_no_throw(name);
    if (known == nullptr) return std::string(arg);
    // "--mount /mnt", "-o out": the next word is the option's value.
    const bool value_attached = is_long ? arg.find('=') != std::string_view::npos : arg.size() > 2;
    if (known->get_items_expected_min() > 0 && !value_attached) ++i;
  }
  return {};
}

}  // namespace

std::string ParseErrorText(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  // CLI11's own text is one line ("The following argument was not
  // expected: -q"); its help dump after it is not printed.
  std::string what = e.what();
  // CLI11 checks required arguments before unknown ones: `prog --bogus`
  // would say "MNT is required" (and `walfs-trace record --mount M --bogus`
  // "--output is required") about a command line whose mistake is --bogus.
  // Name an unknown option first.
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    if (std::string unknown = FirstUnknownOption(app, argc, argv); !unknown.empty())
      what = fmt::format("The following argument was not expected: {}", unknown);
  }
  while (!what.empty() && (what.back() == '\n' || what.back() == '.')) what.pop_back();
  for (char& c : what)
    if (c == '\n') c = ' ';
  return what;
}

std::string ReadSmallFile(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace walfs::cli
