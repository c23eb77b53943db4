#include "tools/trace_list.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/cli.h"
#include "tracing/event_table.h"
#include "tracing/trace_file_reader.h"

namespace walfs::tracing {

namespace {

namespace fs = std::filesystem;

struct Line {
  std::string name;   // subsystem/event
  std::string state;  // the kind (file) or on/off (mount)
  std::vector<std::string> fields;
};

void Print(std::vector<Line> lines) {
  std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.name < b.name; });
  std::size_t name_w = 5, state_w = 5;
  for (const Line& l : lines) {
    name_w = std::max(name_w, l.name.size());
    state_w = std::max(state_w, l.state.size());
  }
  for (const Line& l : lines) {
    std::string fields;
    for (const std::string& f : l.fields) fields += (fields.empty() ? "" : " ") + f;
    fmt::print("{:<{}}  {:<{}}  {}\n", l.name, name_w, l.state, state_w, fields);
  }
}

// Field names with runs of string fields of one name joined: ["name[24]", ...].
// `names[i]` and `chars[i]`: the i-th 8-byte field's name and whether it is
// 8 bytes of a string.
std::vector<std::string> JoinFields(const std::vector<std::string>& names, const std::vector<bool>& chars) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < names.size();) {
    if (!chars[i]) {
      out.push_back(names[i++]);
      continue;
    }
    std::size_t n = 1;
    while (i + n < names.size() && chars[i + n] && names[i + n] == names[i]) ++n;
    out.push_back(fmt::format("{}[{}]", names[i], 8 * n));
    i += n;
  }
  return out;
}

int ListFile(const std::string& path) {
  auto reader = TraceFileReader::Open(path);
  if (!reader.ok()) return cli::FileError("walfs-trace", path, reader.status());
  // The catalogue comes in sections among the records: read them all.
  std::vector<TraceEntry> chunk;
  do {
    if (Status s = (*reader)->ReadChunk(&chunk); !s.ok()) return cli::FileError("walfs-trace", path, s);
  } while (!chunk.empty());
  std::vector<Line> lines;
  for (const EventInfo* e : (*reader)->events().Events()) {
    std::vector<std::string> names;
    std::vector<bool> chars;
    for (const FieldInfo& f : e->fields) {
      names.push_back(f.name);
      chars.push_back(f.kind == FieldKind::kChars);
    }
    lines.push_back({e->subsystem + "/" + e->name, std::string(EventKindName(e->kind)), JoinFields(names, chars)});
  }
  Print(std::move(lines));
  return 0;
}

int ListMount(const std::string& mount) {
  const fs::path events = fs::path(mount) / ".walfs" / "events";
  std::error_code ec;
  if (!fs::is_directory(events, ec)) {
    fmt::print(stderr, "walfs-trace: {}: not a walfs mount or trace file (no {})\n", mount, events.string());
    return 1;
  }
  std::vector<Line> lines;
  for (const fs::directory_entry& sub : fs::directory_iterator(events, ec)) {
    if (!sub.is_directory()) continue;
    for (const fs::directory_entry& ev : fs::directory_iterator(sub.path(), ec)) {
      if (!ev.is_directory()) continue;
      // "\tfield:u64 head;\t..." / "\tfield:char comm[8];\t...", after the common_ fields.
      std::vector<std::string> names;
      std::vector<bool> chars;
      std::istringstream format(cli::ReadSmallFile(ev.path() / "format"));
      for (std::string l; std::getline(format, l);) {
        const std::size_t at = l.find("field:"), semi = l.find(';');
        if (at == std::string::npos || semi == std::string::npos) continue;
        const std::string decl = l.substr(at + 6, semi - at - 6);
        std::string name = decl.substr(decl.rfind(' ') + 1);
        if (name.starts_with("common_")) continue;
        const bool is_chars = decl.starts_with("char ");
        if (is_chars) name = name.substr(0, name.find('['));
        names.push_back(name);
        chars.push_back(is_chars);
      }
      std::string enable = cli::ReadSmallFile(ev.path() / "enable");
      while (!enable.empty() && enable.back() == '\n') enable.pop_back();
      lines.push_back({sub.path().filename().string() + "/" + ev.path().filename().string(),
                       enable == "1" ? "on" : enable == "0" ? "off" : enable, JoinFields(names, chars)});
    }
  }
  if (ec) {
    fmt::print(stderr, "walfs-trace: {}: {}\n", events.string(), ec.message());
    return 1;
  }
  Print(std::move(lines));
  return 0;
}

}  // namespace

int ListEvents(const std::string& file_or_mount) {
  std::error_code ec;
  return fs::is_directory(file_or_mount, ec) ? ListMount(file_or_mount) : ListFile(file_or_mount);
}

}  // namespace walfs::tracing
