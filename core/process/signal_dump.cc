#include "core/process/signal_dump.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "core/base/file_text.h"
#include "core/base/text.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kQuietAfterGrowth{100};
constexpr milliseconds kMaxWait{1000};
constexpr milliseconds kPoll{20};

std::string SignalName(int sig) {
  if (sig == SIGUSR1) return "SIGUSR1";
  if (sig == SIGUSR2) return "SIGUSR2";
  return "signal " + std::to_string(sig);
}

}  // namespace

std::optional<uint64_t> CaughtSignals(std::string_view status_text) {
  constexpr std::string_view kKey = "\nSigCgt:";
  const std::string text = "\n" + std::string(status_text);
  const size_t at = text.find(kKey);
  if (at == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(text).substr(at + kKey.size());
  rest = rest.substr(0, rest.find('\n'));
  rest = Trim(rest);
  uint64_t mask = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), mask, 16);
  if (ec != std::errc() || end != rest.data() + rest.size() || rest.empty()) return std::nullopt;
  return mask;
}

bool CatchesSignal(uint64_t caught, int sig) { return sig >= 1 && sig <= 64 && (caught >> (sig - 1)) & 1; }

SignalDump SendDumpSignal(const std::vector<ProcessInfo>& processes, int sig, int dir, const std::string& log) {
  SignalDump dump;
  dump.signal = sig;
  dump.log = log;
  if (!log.empty()) dump.log_offset = FileSizeAt(dir, log);
  for (const ProcessInfo& p : processes) {
    if (p.exited() || p.pid == ::getpid()) continue;
    int err = 0;
    const std::optional<uint64_t> caught =
        CaughtSignals(ReadFileTextAt(ProcDirFd(), std::to_string(p.pid) + "/status", &err));
    if (err != 0 || !caught || !CatchesSignal(*caught, sig)) continue;
    // The start time read with the tree: a pid reused since is not the server's.
    if (LiveStartTime(p.pid) != p.start_time || ::kill(p.pid, sig) != 0) continue;
    dump.sent.push_back(p.pid);
  }
  return dump;
}

void AwaitDumps(const std::vector<SignalDump>& dumps, int dir, Clock::time_point deadline) {
  struct Watched {
    const SignalDump* dump;
    off_t size;
    Clock::time_point changed;
  };
  std::vector<Watched> logs;
  const Clock::time_point start = Clock::now();
  for (const SignalDump& d : dumps) {
    if (!d.sent.empty() && d.log_offset >= 0) logs.push_back({&d, d.log_offset, start});
  }
  const Clock::time_point end = std::min(deadline, start + kMaxWait);
  while (!logs.empty() && Clock::now() < end) {
    std::this_thread::sleep_for(kPoll);
    bool settled = true;
    const Clock::time_point now = Clock::now();
    for (Watched& w : logs) {
      const off_t size = FileSizeAt(dir, w.dump->log);
      if (size != w.size) w = {w.dump, size, now};
      // Settled: it grew, then stayed still a while.
      settled = settled && w.size > w.dump->log_offset && now - w.changed >= kQuietAfterGrowth;
    }
    if (settled) return;
  }
}

std::string DumpSection(const SignalDump& dump, int dir, size_t cap) {
  if (dump.sent.empty()) return "";
  std::string pids;
  for (pid_t p : dump.sent) pids += " " + std::to_string(p);
  std::string out = "\n== " + SignalName(dump.signal) + " (a faulthandler dump) sent to" + pids + ", which catch it\n";
  if (dump.log_offset < 0) return out + "(no log to read the dump from)\n";
  const std::string gained = ReadFileFromAt(dir, dump.log, dump.log_offset, cap);
  out += "what log " + Printable(dump.log) + " gained after it:\n";
  out += gained.empty() ? "(nothing: the processes did not run their handler in time)\n" : gained;
  if (!out.empty() && out.back() != '\n') out += "\n";
  return out;
}

}  // namespace ix
