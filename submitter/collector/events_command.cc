#include "submitter/collector/events_command.h"

#include <time.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/base/json_text.h"
#include "core/base/text.h"
#include "core/process/spawn.h"
#include "submitter/collector/command_usage.h"
#include "submitter/collector/event_validation.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_db.h"

namespace ix {
namespace {

const char kUsage[] =
    "Usage: ixsubmit events [SWEEP_ID] [--db PATH] [--json] [--results]\n"
    "\n"
    "What the collector (`ixsubmit serve`) stored: the events of every sweep or of SWEEP_ID,\n"
    "ordered by time, as a table (time, node, step, event, id) or, with --json, a JSON array\n"
    "of the events as received. With --results: the result files (sweep, entry, name, size,\n"
    "sha256) instead.\n"
    "\n"
    "  --db PATH   the sweep database (default: the sweep's, $XDG_STATE_HOME/inferencex/ix.db)\n"
    "\n"
    "Exit status: 0; 1 when the database cannot be read; 2 on misuse.\n";

struct EventsCommandLine {
  std::optional<std::string> sweep, db;
  bool json = false, results = false, help = false;
};

Result<EventsCommandLine> Parse(const std::vector<std::string>& args) {
  EventsCommandLine c;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      c.help = true;
    } else if (a == "--json") {
      c.json = true;
    } else if (a == "--results") {
      c.results = true;
    } else if (a == "--db" || a.rfind("--db=", 0) == 0) {
      if (a == "--db" && i + 1 >= args.size()) return Error{"argument --db: expected a path"};
      c.db = a == "--db" ? args[++i] : a.substr(5);
      if (c.db->empty()) return Error{"argument --db: expected a path"};
    } else if (!a.empty() && a[0] != '-' && !c.sweep) {
      if (Status ok = CheckSweepId(a); !ok) return Error{"SWEEP_ID '" + a + "': " + ok.error().message};
      c.sweep = a;
    } else {
      return Error{"unrecognized argument: " + a + " (takes SWEEP_ID, --db, --json, --results)"};
    }
  }
  return c;
}


std::string Line(const char* format, const std::string& a, const std::string& b, const std::string& c,
                 const std::string& d, const std::string& e) {
  std::string out(4096, '\0');
  const int n = std::snprintf(out.data(), out.size(), format, a.c_str(), b.c_str(), c.c_str(), d.c_str(), e.c_str());
  out.resize(n < 0 ? 0 : std::min(static_cast<size_t>(n), out.size() - 1));
  return out;
}

}  // namespace

std::string UtcTimeText(double unix_seconds) {
  double whole = std::floor(unix_seconds);
  long millis = std::lround((unix_seconds - whole) * 1000);
  if (millis == 1000) {
    whole += 1;
    millis = 0;
  }
  const time_t t = static_cast<time_t>(whole);
  struct tm tm {};
  if (!gmtime_r(&t, &tm)) return std::to_string(unix_seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::string EventsJson(const std::vector<StoredEvent>& events) {
  if (events.empty()) return "[]\n";
  std::string out = "[\n";
  for (size_t i = 0; i < events.size(); ++i) out += events[i].body + (i + 1 < events.size() ? ",\n" : "\n");
  return out + "]\n";
}

std::string EventsTable(const std::vector<StoredEvent>& events) {
  const char* format = "%-24s %-20s %-16s %-12s %s\n";
  std::string out = Line(format, "TIME", "NODE", "STEP", "EVENT", "ID");
  for (const StoredEvent& e : events) {
    out += Line(format, UtcTimeText(e.time), Printable(e.node.value_or("-")), Printable(e.step), e.event,
                Printable(e.id));
  }
  return out;
}

// The members of a result file in --results --json, in order: each key
// with the field it holds.
using ResultField =
    std::variant<std::string StoredResultInfo::*, int64_t StoredResultInfo::*, double StoredResultInfo::*>;
const std::pair<const char*, ResultField> kResultMembers[] = {
    {"sweep", &StoredResultInfo::sweep}, {"entry", &StoredResultInfo::entry}, {"name", &StoredResultInfo::name},
    {"size", &StoredResultInfo::size},   {"sha256", &StoredResultInfo::sha256},
    {"received", &StoredResultInfo::received}};

// One JSON value, as its type writes it.
template <class Writer, class Value>
void WriteValue(Writer& w, const Value& v) {
  if constexpr (std::is_same_v<Value, std::string>) {
    w.String(v.c_str());
  } else if constexpr (std::is_same_v<Value, double>) {
    w.Double(v);
  } else {
    w.Int64(v);
  }
}

std::string ResultsJson(const std::vector<StoredResultInfo>& results) {
  return JsonText(true, [&](auto& w) {
    w.StartArray();
    for (const StoredResultInfo& r : results) {
      w.StartObject();
      for (const auto& [key, field] : kResultMembers) {
        w.Key(key);
        std::visit([&](auto member) { WriteValue(w, r.*member); }, field);
      }
      w.EndObject();
    }
    w.EndArray();
  }) + "\n";
}

std::string ResultsTable(const std::vector<StoredResultInfo>& results) {
  const char* format = "%-26s %6s %-32s %10s  %s\n";
  std::string out = Line(format, "SWEEP", "ENTRY", "NAME", "SIZE", "SHA256");
  for (const StoredResultInfo& r : results) {
    out += Line(format, r.sweep, std::to_string(r.entry), r.name, std::to_string(r.size), r.sha256);
  }
  return out;
}

int RunEventsCommand(const std::vector<std::string>& args) {
  Result<EventsCommandLine> parsed = Parse(args);
  if (std::optional<int> done = UsageExitStatus("events", parsed, kUsage)) return *done;
  const EventsCommandLine& c = parsed.value();
  Result<std::string> path = ExistingDbPath(c.db, CurrentEnvironment(), PathExistsOnDisk);
  if (!path) return std::fprintf(stderr, "ixsubmit events: %s\n", path.error().message.c_str()), 1;
  Result<CollectorStore> store = CollectorStore::Open(path.value());
  if (!store) return std::fprintf(stderr, "ixsubmit events: %s\n", store.error().message.c_str()), 1;
  std::string out;
  if (c.results) {
    Result<std::vector<StoredResultInfo>> r = store.value().ListResults(c.sweep);
    if (!r) return std::fprintf(stderr, "ixsubmit events: %s\n", r.error().message.c_str()), 1;
    out = c.json ? ResultsJson(r.value()) : ResultsTable(r.value());
  } else {
    Result<std::vector<StoredEvent>> e = store.value().ListEvents(c.sweep);
    if (!e) return std::fprintf(stderr, "ixsubmit events: %s\n", e.error().message.c_str()), 1;
    out = c.json ? EventsJson(e.value()) : EventsTable(e.value());
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace ix
