#include "tracing/event_filter.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "tracing/event.h"

namespace walfs::tracing {

namespace {

// The words of the text: identifiers, numbers, operators, && and ||.
Result<std::vector<std::string>> Tokens(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    } else if (c == '&' || c == '|') {
      if (j >= s.size() || s[j] != c) return Status::InvalidArgument(fmt::format("'{}' alone: use {}{}", c, c, c));
      ++j;
    } else if (c == '=' || c == '!') {
      if (j >= s.size() || s[j] != '=') return Status::InvalidArgument(fmt::format("'{}' alone: use {}=", c, c));
      ++j;
    } else if (c == '<' || c == '>') {
      if (j < s.size() && s[j] == '=') ++j;
    } else {
      return Status::InvalidArgument(fmt::format("unexpected '{}' (filters are FIELD OP NUMBER terms joined by "
                                                 "&& and ||)", c));
    }
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

Result<std::uint64_t> Number(const std::string& w) {
  std::uint64_t v = 0;
  const bool hex = w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X');
  const char* first = w.data() + (hex ? 2 : 0);
  const char* last = w.data() + w.size();
  auto [p, ec] = std::from_chars(first, last, v, hex ? 16 : 10);
  if (ec != std::errc() || p != last || first == last)
    return Status::InvalidArgument(fmt::format("'{}' is not a number (decimal or 0x hex)", w));
  return v;
}

}  // namespace

Result<std::unique_ptr<EventFilter>> EventFilter::Parse(std::string_view text, const EventDef& event) {
  std::vector<std::string> words;
  WALFS_ASSIGN_OR_RETURN(words, Tokens(text));
  if (words.empty()) return Status::InvalidArgument("an empty filter (write 0 to remove one)");
  auto f = std::unique_ptr<EventFilter>(new EventFilter());
  f->any_of_.emplace_back();
  std::size_t i = 0;
  for (;;) {
    if (i + 3 > words.size())
      return Status::InvalidArgument(fmt::format("'{}' ends early: each term is FIELD OP NUMBER", text));
    Term t;
    const std::string& field = words[i];
    if (field != "common_pid") {
      const std::span<const FieldDef> fields = event.fields();
      for (std::size_t k = 0; k < fields.size(); ++k)
        if (fields[k].name == field) {
          if (fields[k].kind == FieldKind::kChars)
            return Status::InvalidArgument(fmt::format("{} is a string field: filters compare numbers", field));
          t.field = static_cast<int>(k);
        }
      if (t.field < 0)
        return Status::InvalidArgument(fmt::format("{} has no field '{}' (see its format file)", event.full_name(), field));
    }
    const std::string& op = words[i + 1];
    if (op == "==") t.op = Op::kEq;
    else if (op == "!=") t.op = Op::kNe;
    else if (op == "<") t.op = Op::kLt;
    else if (op == "<=") t.op = Op::kLe;
    else if (op == ">") t.op = Op::kGt;
    else if (op == ">=") t.op = Op::kGe;
    else return Status::InvalidArgument(fmt::format("'{}' is not an operator (== != < <= > >=)", op));
    WALFS_ASSIGN_OR_RETURN(t.value, Number(words[i + 2]));
    f->any_of_.back().push_back(t);
    f->text_ += fmt::format("{}{} {} {}", f->text_.empty() ? "" : " ", field, op, words[i + 2]);
    i += 3;
    if (i == words.size()) break;
    if (words[i] == "||") {
      f->any_of_.emplace_back();
    } else if (words[i] != "&&") {
      return Status::InvalidArgument(fmt::format("'{}' after a term: join terms with && or ||", words[i]));
    }
    f->text_ += " " + words[i];
    ++i;
  }
  return f;
}

bool EventFilter::Matches(const std::uint64_t* values, std::uint32_t tid) const {
  for (const std::vector<Term>& all : any_of_) {
    bool pass = true;
    for (const Term& t : all) {
      const std::uint64_t v = t.field < 0 ? tid : values[t.field];
      switch (t.op) {
        case Op::kEq: pass = v == t.value; break;
        case Op::kNe: pass = v != t.value; break;
        case Op::kLt: pass = v < t.value; break;
        case Op::kLe: pass = v <= t.value; break;
        case Op::kGt: pass = v > t.value; break;
        case Op::kGe: pass = v >= t.value; break;
      }
      if (!pass) break;
    }
    if (pass) return true;
  }
  return false;
}

}  // namespace walfs::tracing
