#include "tracing/trace_plot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>

#include <fmt/format.h>

namespace walfs::tracing {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Log sector size of the LSN's low 32 bits (journal/lsn.h, kLogSectorSize):
// the tracer does not link the journal, so the plot names it here.
constexpr std::uint64_t kLogSectorBytes = 512;
constexpr std::size_t kMaxOps = 8;  // opcodes drawn in fuse_latency.png
constexpr int kRateBuckets = 300;   // time slices of the per-second figures


// gnuplot's single-quoted string: '' stands for one quote.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

// gnuplot's double-quoted string (titles: \n is a line break there).
std::string Title(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!f) return Status::IoError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  f << text;
  f.close();
  if (!f) return Status::IoError(fmt::format("cannot write {}", path));
  return Status::Ok();
}

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0777) == 0 || errno == EEXIST) {
    struct stat st{};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::IoError(fmt::format("{} is not a directory", dir));
    return Status::Ok();
  }
  return Status::IoError(fmt::format("cannot create the directory {}: {}", dir, std::strerror(errno)));
}

// Runs `gnuplot script` with stderr into `log`; the exit status or -1 when
// the program could not be run (errno_out then says why).
int RunGnuplot(const std::string& program, const std::string& script, const std::string& log,
               int* errno_out) {
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    *errno_out = errno;
    return -1;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    *errno_out = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    return -1;
  }
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
    }
    const char* argv[] = {program.c_str(), script.c_str(), nullptr};
    ::execvp(program.c_str(), const_cast<char* const*>(argv));
    const int e = errno;
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  int exec_errno = 0;
  const ssize_t n = ::read(err_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    *errno_out = exec_errno;
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  if (s.size() > 2000) s = s.substr(0, 2000) + "...";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

const TracePlot::Resolved& TracePlot::Resolve(std::uint16_t id, const EventTable& events) {
  Resolved& r = resolved_[id];
  if (r.role != Role::kUnresolved) return r;
  const EventInfo* e = events.ById(id);
  if (e == nullptr) return r;  // not defined yet: try again at the next record
  r.role = Role::kNone;
  auto need = [&](Role role, std::initializer_list<std::string_view> names) {
    if (FieldIndexes(*e, names, r.field.data())) r.role = role;
  };
  const std::string& s = e->subsystem;
  const std::string& n = e->name;
  if (s == "journal" && n == "grant_bytes") {
    need(Role::kGrantBytes, {"reserve", "write", "tail_space"});
    r.field[3] = FieldIndex(*e, "log_bytes");  // newer builds: the log's size
  } else if (s == "journal" && n == "grant_sleep") {
    need(Role::kGrantSleep, {"head"});
  } else if (s == "journal" && n == "grant_wake") {
    need(Role::kGrantWake, {"head"});
  } else if (s == "journal" && n == "wake_batch") {
    need(Role::kWakeBatch, {"count"});
  } else if (s == "log" && n == "log_submit") {
    need(Role::kLogSubmit, {"lsn", "bytes"});
  } else if (s == "log" && n == "ail_push") {
    need(Role::kAilPush, {"target"});
  } else if (s == "log" && n == "cil_push") {
    need(Role::kCilPush, {});
  } else if (s == "log" && n == "log_force") {
    need(Role::kLogForce, {"wait_ns", "already"});
  } else if (s == "fs" && n.size() > 5 && n.ends_with("_exit")) {
    need(Role::kFuseExit, {"latency_ns"});
    if (r.role == Role::kFuseExit) {
      const std::string op = n.substr(0, n.size() - 5);
      auto it = std::find(ops_.begin(), ops_.end(), op);
      if (it == ops_.end()) {
        ops_.push_back(op);
        latency_.push_back({});
        latency_total_ns_.push_back(0);
        it = ops_.end() - 1;
      }
      r.op = static_cast<int>(it - ops_.begin());
    }
  }
  return r;
}

void TracePlot::Add(const TraceEntry& entry, const EventTable& events) {
  if (entry.type != TraceEntry::Type::kRecord) return;
  const Record& rec = entry.record;
  ++records_;
  const Resolved& r = Resolve(rec.event_id, events);
  if (r.role == Role::kUnresolved || r.role == Role::kNone) return;
  ++used_;
  const std::uint64_t t = rec.timestamp;
  first_ns_ = std::min(first_ns_, t);
  last_ns_ = std::max(last_ns_, t);
  auto f = [&](int i) { return rec.fields[r.field[static_cast<std::size_t>(i)]]; };
  switch (r.role) {
    case Role::kGrantBytes:
      grant_.push_back({t, f(0), f(1), f(2)});
      if (r.field[3] >= 0) log_bytes_ = f(3);
      break;
    case Role::kLogSubmit:
      head_.push_back({t, (f(0) & 0xffffffffu) * kLogSectorBytes, 0, 0});
      submits_.push_back({t, f(1), 0, 0});
      break;
    case Role::kAilPush:
      ail_target_.push_back({t, (f(0) & 0xffffffffu) * kLogSectorBytes, 0, 0});
      break;
    case Role::kGrantSleep:
      sleeps_.push_back({t, f(0), 0, 0});
      break;
    case Role::kGrantWake:
      wakes_.push_back({t, f(0), 0, 0});
      break;
    case Role::kWakeBatch:
      batches_.push_back({t, f(0), 0, 0});
      break;
    case Role::kCilPush:
      pushes_.push_back({t, 0, 0, 0});
      break;
    case Role::kLogForce:
      if (f(1) == 0) forces_.push_back({t, f(0), 0, 0});
      break;
    case Role::kFuseExit: {
      const std::uint64_t ns = f(0);
      const int b = ns == 0 ? 0 : std::min(kLatencyBuckets - 1, static_cast<int>(std::bit_width(ns)) - 1);
      ++latency_[static_cast<std::size_t>(r.op)][static_cast<std::size_t>(b)];
      latency_total_ns_[static_cast<std::size_t>(r.op)] += ns;
      break;
    }
    case Role::kUnresolved:
    case Role::kNone:
      break;
  }
}

Result<PlotReport> TracePlot::Draw(const PlotOptions& o) const {
  if (o.out_dir.empty()) return Status::InvalidArgument("no output directory");
  WALFS_RETURN_IF_ERROR(MakeDir(o.out_dir));
  PlotReport report;
  const std::string dir = o.out_dir;
  const double span_s = used_ ? static_cast<double>(last_ns_ - first_ns_) / 1e9 : 0;
  auto secs = [&](std::uint64_t t) { return static_cast<double>(t - first_ns_) / 1e9; };
  std::string heading = o.title.empty() ? std::string("walfs trace") : o.title;
  if (!o.when.empty()) heading += ", " + o.when;

  std::string gp;
  gp += "# Written by walfs-trace plot; rerun with: gnuplot plot.gp\n";
  gp += "set terminal pngcairo size 1280,720 noenhanced font 'sans,11'\n";
  gp += "set grid\nset key outside right top\nset datafile missing 'NaN'\n";
  auto path = [&](const std::string& file) { return Quote(dir + "/" + file); };
  auto begin_figure = [&](const std::string& png, const std::string& what) {
    gp += "\nreset\nset grid\nset key outside right top\nset datafile missing 'NaN'\n";
    gp += fmt::format("set output {}\nset title {}\n", path(png),
                      Title(what + "\n" + heading));
  };
  // Slices of time for the per-second figures.
  const double slice_s = std::max(span_s / kRateBuckets, 1e-3);
  const int slices = std::max(1, static_cast<int>(std::ceil(span_s / slice_s)) + 1);
  auto slice_of = [&](std::uint64_t t) {
    return std::min(slices - 1, static_cast<int>(secs(t) / slice_s));
  };
  auto rate = [&](double count) {
    return count == 0 ? std::string("NaN") : fmt::format("{:.6g}", count / slice_s);
  };

  // log_space.png
  if (!grant_.empty() || !head_.empty() || !ail_target_.empty()) {
    std::string data = "# seconds reserve_grant_MiB write_grant_MiB log_used_MiB\n";
    const std::size_t step = std::max<std::size_t>(1, (grant_.size() + kMaxPoints - 1) / kMaxPoints);
    for (std::size_t i = 0; i < grant_.size(); i += step) {
      Sample m = grant_[i];
      for (std::size_t j = i; j < std::min(grant_.size(), i + step); ++j) {
        m.a = std::max(m.a, grant_[j].a);
        m.b = std::max(m.b, grant_[j].b);
        m.c = std::max(m.c, grant_[j].c);
      }
      data += fmt::format("{:.6f} {:.4f} {:.4f} {:.4f}\n", secs(m.t), static_cast<double>(m.a) / kMiB,
                          static_cast<double>(m.b) / kMiB, static_cast<double>(m.c) / kMiB);
    }
    WALFS_RETURN_IF_ERROR(WriteFile(dir + "/log_space.dat", data));
    std::string head = "# seconds log_head_offset_MiB\n";
    const std::size_t hstep = std::max<std::size_t>(1, (head_.size() + kMaxPoints - 1) / kMaxPoints);
    for (std::size_t i = 0; i < head_.size(); i += hstep)
      head += fmt::format("{:.6f} {:.4f}\n", secs(head_[i].t), static_cast<double>(head_[i].a) / kMiB);
    WALFS_RETURN_IF_ERROR(WriteFile(dir + "/log_head.dat", head));
    std::string target = "# seconds ail_push_target_offset_MiB\n";
    const std::size_t astep = std::max<std::size_t>(1, (ail_target_.size() + kMaxPoints - 1) / kMaxPoints);
    for (std::size_t i = 0; i < ail_target_.size(); i += astep)
      target += fmt::format("{:.6f} {:.4f}\n", secs(ail_target_[i].t), static_cast<double>(ail_target_[i].a) / kMiB);
    WALFS_RETURN_IF_ERROR(WriteFile(dir + "/ail_target.dat", target));
    begin_figure("log_space.png", "Log space: grant heads, space in use, log head");
    gp += "set xlabel 'seconds since the first plotted event'\nset ylabel 'MiB'\n";
    std::vector<std::string> series;
    if (!grant_.empty()) {
      series.push_back(fmt::format("{} using 1:2 with lines lw 3 title 'reserve grant head'", path("log_space.dat")));
      series.push_back(fmt::format("{} using 1:3 with lines lw 1.5 dt 2 title 'write grant head (dashed)'", path("log_space.dat")));
      series.push_back(fmt::format("{} using 1:4 with lines lw 2 title 'log in use (tail to head)'", path("log_space.dat")));
      if (log_bytes_ > 0)
        series.push_back(fmt::format("{:.4f} with lines lw 2 lc rgb 'black' dt 3 title 'log size'",
                                     static_cast<double>(log_bytes_) / kMiB));
    }
    if (!head_.empty())
      series.push_back(fmt::format("{} using 1:2 with points pt 7 ps 0.4 title 'log head offset'", path("log_head.dat")));
    if (!ail_target_.empty())
      series.push_back(fmt::format("{} using 1:2 with points pt 2 ps 0.6 title 'AIL push target offset'",
                                   path("ail_target.dat")));
    gp += "plot ";
    for (std::size_t i = 0; i < series.size(); ++i) gp += (i ? ", \\\n     " : "") + series[i];
    gp += "\n";
    report.drawn.push_back({"log_space.png", fmt::format("{} grant_bytes samples, {} log writes, {} AIL pushes{}", grant_.size(), head_.size(), ail_target_.size(),
                                                         log_bytes_ > 0 ? fmt::format(", a {:.2f} MiB log", static_cast<double>(log_bytes_) / kMiB) : "")});
  } else {
    report.skipped.push_back({"log_space.png", "no journal_grant_bytes or log_log_submit events"});
  }

  // grant_waits.png
  if (!sleeps_.empty() || !wakes_.empty() || !batches_.empty()) {
    std::vector<std::array<double, 5>> rows(static_cast<std::size_t>(slices));
    for (const Sample& s : sleeps_) rows[static_cast<std::size_t>(slice_of(s.t))][s.a == 0 ? 0 : 1] += 1;
    for (const Sample& s : wakes_) rows[static_cast<std::size_t>(slice_of(s.t))][s.a == 0 ? 2 : 3] += 1;
    for (const Sample& s : batches_) rows[static_cast<std::size_t>(slice_of(s.t))][4] += 1;
    // One data block per series (gnuplot's `index`): only the slices with
    // events, and a blank line where slices without any lie between, so a
    // line joins only neighbouring slices.
    static constexpr const char* kColumns[] = {"sleeps_reserve/s", "sleeps_write/s", "wakes_reserve/s",
                                               "wakes_write/s", "wake_batches/s"};
    static constexpr const char* kSeries[] = {
        "pt 7 ps 0.5 title 'sleeps, reserve head'", "pt 7 ps 0.5 title 'sleeps, write head'",
        "pt 6 ps 0.5 title 'wakes, reserve head'", "pt 6 ps 0.5 title 'wakes, write head'",
        "pt 4 ps 0.5 title 'wake batches'"};
    std::string data, plot;
    int block = 0;
    for (std::size_t c = 0; c < std::size(kColumns); ++c) {
      std::string rows_text;
      int last = -2;
      for (int i = 0; i < slices; ++i) {
        const double count = rows[static_cast<std::size_t>(i)][c];
        if (count == 0) continue;
        if (last >= 0 && i != last + 1) rows_text += "\n";  // a gap: the line breaks
        rows_text += fmt::format("{:.6f} {}\n", (i + 0.5) * slice_s, rate(count));
        last = i;
      }
      if (rows_text.empty()) continue;  // gnuplot warns of an empty block
      data += fmt::format("{}# index {}: seconds {}\n{}", block ? "\n\n" : "", block, kColumns[c], rows_text);
      plot += fmt::format("{}{} index {} using 1:2 with linespoints {}", plot.empty() ? "plot " : ", \\\n     ",
                          path("grant_waits.dat"), block, kSeries[c]);
      ++block;
    }
    WALFS_RETURN_IF_ERROR(WriteFile(dir + "/grant_waits.dat", data));
    begin_figure("grant_waits.png", "Grant-head sleeps and wakes per second");
    gp += fmt::format("set xlabel 'seconds (slices of {:.3g} ms)'\nset ylabel 'events per second'\nset logscale y\n",
                      slice_s * 1e3);
    gp += plot + "\n";
    report.drawn.push_back({"grant_waits.png", fmt::format("{} sleeps, {} wakes, {} wake batches", sleeps_.size(), wakes_.size(), batches_.size())});
  } else {
    report.skipped.push_back({"grant_waits.png", "no grant-head sleeps or wakes (the log never ran out of space)"});
  }

  // log_writes.png
  if (!pushes_.empty() || !submits_.empty()) {
    std::vector<std::array<double, 3>> rows(static_cast<std::size_t>(slices));
    for (const Sample& s : pushes_) rows[static_cast<std::size_t>(slice_of(s.t))][0] += 1;
    for (const Sample& s : submits_) {
      auto& r = rows[static_cast<std::size_t>(slice_of(s.t))];
      r[1] += 1;
      r[2] += static_cast<double>(s.a) / kMiB;
    }
    std::string data = "# seconds cil_pushes/s iclog_writes/s MiB/s\n";
    for (int i = 0; i < slices; ++i) {
      const auto& r = rows[static_cast<std::size_t>(i)];
      data += fmt::format("{:.6f} {} {} {}\n", (i + 0.5) * slice_s, rate(r[0]), rate(r[1]), rate(r[2]));
    }
    WALFS_RETURN_IF_ERROR(WriteFile(dir + "/log_writes.dat", data));
    begin_figure("log_writes.png", "CIL pushes and iclog writes");
    gp += fmt::format("set xlabel 'seconds (slices of {:.3g} ms)'\nset ylabel 'per second'\nset y2label 'MiB/s written to the log'\n"
                      "set ytics nomirror\nset y2tics\nset logscale y\n",
                      slice_s * 1e3);
    gp += fmt::format(
        "plot {0} using 1:2 with linespoints pt 7 ps 0.5 title 'CIL pushes/s', \\\n"
        "     {0} using 1:3 with linespoints pt 6 ps 0.5 title 'iclog writes/s', \\\n"
        "     {0} using 1:4 axes x1y2 with lines lw 2 title 'MiB/s (right axis)'\n",
        path("log_writes.dat"));
    report.drawn.push_back({"log_writes.png", fmt::format("{} CIL pushes, {} iclog writes", pushes_.size(), submits_.size())});
  } else {
    report.skipped.push_back({"log_writes.png", "no log_cil_push or log_log_submit events"});
  }

  // force_latency.png
  if (!forces_.empty()) {
    std::string data = "# seconds force_wait_us\n";
    const std::size_t step = std::max<std::size_t>(1, (forces_.size() + kMaxPoints - 1) / kMaxPoints);
    for (std::size_t i = 0; i < forces_.size(); i += step) {
      Sample m = forces_[i];
      for (std::size_t j = i; j < std::min(forces_.size(), i + step); ++j) m.a = std::max(m.a, forces_[j].a);
      data += fmt::format("{:.6f} {:.3f}\n", secs(m.t), std::max(0.001, static_cast<double>(m.a) / 1e3));
    }
    WALFS_RETURN_IF_ERROR(WriteFile(dir + "/force_latency.dat", data));
    std::vector<std::uint64_t> w;
    w.reserve(forces_.size());
    for (const Sample& s : forces_) w.push_back(s.a);
    std::sort(w.begin(), w.end());
    const auto pct = [&](double p) { return static_cast<double>(w[static_cast<std::size_t>(p * static_cast<double>(w.size() - 1))]) / 1e3; };
    begin_figure("force_latency.png",
                 fmt::format("Log force waits: p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us, {} forces",
                             pct(0.5), pct(0.99), static_cast<double>(w.back()) / 1e3, w.size()));
    gp += "set xlabel 'seconds'\nset ylabel 'wait (us)'\nset logscale y\n";
    gp += fmt::format("plot {} using 1:2 with points pt 7 ps 0.4 title 'force wait'\n", path("force_latency.dat"));
    report.drawn.push_back({"force_latency.png", fmt::format("{} forces that waited", forces_.size())});
  } else {
    report.skipped.push_back({"force_latency.png", "no log_log_force event that waited"});
  }

  // fuse_latency.png
  std::vector<std::size_t> busiest(ops_.size());
  std::iota(busiest.begin(), busiest.end(), 0);
  auto total = [&](std::size_t i) { return std::accumulate(latency_[i].begin(), latency_[i].end(), std::uint64_t{0}); };
  // By the time the opcode took in all, not by its count: a few slow fsyncs
  // matter more than many cached getattrs.
  std::stable_sort(busiest.begin(), busiest.end(),
                   [&](std::size_t a, std::size_t b) { return latency_total_ns_[a] > latency_total_ns_[b]; });
  while (!busiest.empty() && total(busiest.back()) == 0) busiest.pop_back();
  std::string left_out;
  for (std::size_t k = kMaxOps; k < busiest.size(); ++k) left_out += (left_out.empty() ? "" : ", ") + ops_[busiest[k]];
  if (busiest.size() > kMaxOps) busiest.resize(kMaxOps);
  if (!busiest.empty()) {
    std::string data = "latency_us";  // the column heads gnuplot titles the lines with
    for (std::size_t i : busiest) data += " " + ops_[i];
    data += "\n";
    int lo = kLatencyBuckets, hi = -1;
    for (std::size_t i : busiest)
      for (int b = 0; b < kLatencyBuckets; ++b)
        if (latency_[i][static_cast<std::size_t>(b)] != 0) {
          lo = std::min(lo, b);
          hi = std::max(hi, b);
        }
    for (int b = lo; b <= hi; ++b) {
      // The bucket [2^b, 2^(b+1)) ns, placed at its geometric middle.
      data += fmt::format("{:.6g}", std::ldexp(1.0, b) * std::sqrt(2.0) / 1e3);
      for (std::size_t i : busiest) {
        const std::uint64_t c = latency_[i][static_cast<std::size_t>(b)];
        data += c == 0 ? std::string(" NaN") : fmt::format(" {}", c);
      }
      data += "\n";
    }
    WALFS_RETURN_IF_ERROR(WriteFile(dir + "/fuse_latency.dat", data));
    begin_figure("fuse_latency.png",
                 left_out.empty()
                     ? std::string("FUSE request latency per opcode (daemon side)")
                     : fmt::format("FUSE request latency, the {} opcodes of most total time (left out: {})",
                                   busiest.size(), left_out));
    gp += "set xlabel 'latency (us, log-2 buckets)'\nset ylabel 'requests'\nset logscale xy\nset key autotitle columnhead\n";
    gp += fmt::format("plot for [i=2:{}] {} using 1:i with linespoints pt 7 ps 0.6 lw 2\n", busiest.size() + 1,
                      path("fuse_latency.dat"));
    std::uint64_t n = 0;
    for (std::size_t i : busiest) n += total(i);
    report.drawn.push_back({"fuse_latency.png", fmt::format("{} requests of {} opcodes{}", n, busiest.size(),
                                                            left_out.empty() ? "" : "; left out: " + left_out)});
  } else {
    report.skipped.push_back({"fuse_latency.png", "no fs_<op>_exit events"});
  }

  if (report.drawn.empty())
    return Status::InvalidArgument(fmt::format(
        "the trace has none of the events the figures draw ({} records read): record the journal, "
        "log and fs subsystems",
        records_));

  const std::string script = dir + "/plot.gp";
  WALFS_RETURN_IF_ERROR(WriteFile(script, gp));
  const std::string log = dir + "/gnuplot.log";
  int err = 0;
  const int rc = RunGnuplot(o.gnuplot, script, log, &err);
  if (rc < 0) {
    if (err == ENOENT)
      return Status::NotFound(fmt::format("{} not found (scripts/setup.sh installs gnuplot-nox)", o.gnuplot));
    return Status::IoError(fmt::format("cannot run {}: {}", o.gnuplot, std::strerror(err)));
  }
  if (rc != 0)
    return Status::IoError(fmt::format("{} {} failed (exit {}): {}", o.gnuplot, script, rc, ReadSmallFile(log)));
  for (const PlotReport::Figure& f : report.drawn) {
    struct stat st{};
    if (::stat((dir + "/" + f.file).c_str(), &st) != 0 || st.st_size == 0)
      return Status::IoError(fmt::format("gnuplot drew no {}: {}", f.file, ReadSmallFile(log)));
  }
  return report;
}

}  // namespace walfs::tracing
