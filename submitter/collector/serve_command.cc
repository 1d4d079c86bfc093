#include "submitter/collector/serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <mutex>

#include "core/base/text.h"
#include "core/process/spawn.h"
#include "submitter/collector/collector.h"
#include "submitter/collector/command_usage.h"
#include "submitter/collector/token_file.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_db.h"

namespace ix {
namespace {

const char kUsage[] =
    "Usage: ixsubmit serve --token-file FILE [--listen ADDR:PORT] [--db PATH] [--threads N]\n"
    "\n"
    "The collector: node agents POST events and PUT result files here, into the sweep\n"
    "database. Runs in the foreground until SIGTERM or SIGINT; prints\n"
    "\"ixsubmit serve: listening on ADDR:PORT\" once ready.\n"
    "\n"
    "Options:\n"
    "  --token-file FILE  the bearer token agents send, on the file's first line; the file must\n"
    "                     be regular and private (chmod 600), at most 4096 bytes\n"
    "  --listen ADDR:PORT where to listen (default 127.0.0.1:9478; 0.0.0.0:9478 or [::]:9478\n"
    "                     for every interface; port 0: any free port)\n"
    "  --db PATH          the sweep database (default: the sweep's, $XDG_STATE_HOME/inferencex/ix.db)\n"
    "  --threads N        connections served at once, 1 to 256 (default 8)\n"
    "\n"
    "Exit status: 0 when stopped by a signal; 1 when it cannot start; 2 on misuse.\n";

// The value of `--name VALUE` or `--name=VALUE` at args[i] (advancing i),
// or nullopt when args[i] is not that flag.
Result<std::optional<std::string>> FlagValue(const std::vector<std::string>& args, size_t& i, const std::string& name) {
  const std::string& a = args[i];
  if (a.rfind(name + "=", 0) == 0) return std::optional<std::string>(a.substr(name.size() + 1));
  if (a != name) return std::optional<std::string>();
  if (i + 1 >= args.size()) return Error{"argument " + name + ": expected a value"};
  return std::optional<std::string>(args[++i]);
}

Status ApplyFlag(ServeCommandLine& c, const std::string& name, const std::string& value) {
  if (name == "--listen") {
    Result<ListenAddress> a = ParseListenAddress(value);
    if (!a) return Error{"argument --listen: " + a.error().message};
    c.listen = a.value();
  } else if (name == "--db") {
    if (value.empty()) return Error{"argument --db: expected a path"};
    c.db = value;
  } else if (name == "--token-file") {
    if (value.empty()) return Error{"argument --token-file: expected a path"};
    c.token_file = value;
  } else {
    uint64_t n = 0;
    if (!ParseUnsigned(value, n) || n < 1 || n > 256) {
      return Error{"argument --threads: must be a whole number from 1 to 256, not '" + value + "'"};
    }
    c.threads = static_cast<size_t>(n);
  }
  return Ok{};
}

// SIGTERM and SIGINT, blocked in every thread (the collector's inherit the
// mask) and taken by sigwait in the main one.
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

void LogLine(const std::string& line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "ixsubmit serve: %s\n", line.c_str());
}

Result<std::string> DbPath(const std::optional<std::string>& db) {
  Result<DbPathChoice> choice = ChooseDbPath(db, CurrentEnvironment(), PathExistsOnDisk);
  if (!choice) return choice.error();
  if (!choice.value().note.empty()) LogLine("note: " + choice.value().note);
  if (std::optional<std::string> fs = NetworkFsOf(choice.value().path)) {
    LogLine("warning: the database " + choice.value().path + " is on " + *fs +
            "; SQLite's WAL is unsafe there when used from more than one host: use a local disk (--db PATH)");
  }
  return choice.value().path;
}

}  // namespace

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  const std::string rule = "must be HOST:PORT or [IPV6]:PORT with PORT 0 to 65535, e.g. 127.0.0.1:9478";
  ListenAddress a;
  std::string_view port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return Error{rule};
    a.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) return Error{rule};
    a.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  uint64_t n = 0;
  if (a.host.empty() || !ParseUnsigned(port, n) || n > 65535) return Error{rule};
  a.port = static_cast<int>(n);
  return a;
}

std::string FormatListenAddress(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ServeCommandLine> ParseServeCommandLine(const std::vector<std::string>& args) {
  ServeCommandLine c;
  c.listen = ParseListenAddress(kDefaultCollectorListen).value();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      c.help = true;
      return c;
    }
    bool matched = false;
    for (const char* name : {"--listen", "--db", "--token-file", "--threads"}) {
      Result<std::optional<std::string>> v = FlagValue(args, i, name);
      if (!v) return v.error();
      if (!v.value()) continue;
      if (Status ok = ApplyFlag(c, name, *v.value()); !ok) return ok.error();
      matched = true;
      break;
    }
    if (!matched) {
      return Error{"unrecognized argument: " + args[i] + " (takes --token-file, --listen, --db, --threads)"};
    }
  }
  if (c.token_file.empty()) return Error{"argument --token-file: required (the file holding the bearer token)"};
  return c;
}

int RunServeCommand(const std::vector<std::string>& args) {
  Result<ServeCommandLine> parsed = ParseServeCommandLine(args);
  if (std::optional<int> done = UsageExitStatus("serve", parsed, kUsage)) return *done;
  const ServeCommandLine& c = parsed.value();
  Result<std::string> token = ReadTokenFile(c.token_file);
  if (!token) return LogLine(token.error().message), 1;
  Result<std::string> db = DbPath(c.db);
  if (!db) return LogLine(db.error().message), 1;

  const sigset_t stop = StopSignals();
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is an error return, not death
  CollectorOptions o;
  o.host = c.listen.host;
  o.port = c.listen.port;
  o.db_path = db.value();
  o.token = std::move(token).value();
  o.threads = c.threads;
  o.log = LogLine;
  Result<std::unique_ptr<Collector>> collector = Collector::Start(std::move(o));
  if (!collector) return LogLine(collector.error().message), 1;
  std::printf("ixsubmit serve: listening on %s\n", FormatListenAddress(c.listen.host, collector.value()->port()).c_str());
  std::fflush(stdout);
  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  LogLine(std::string("stopping (") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ")");
  collector.value()->Stop();
  return 0;
}

}  // namespace ix
