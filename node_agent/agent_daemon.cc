#include "node_agent/agent_daemon.h"

#include <poll.h>
#include <rapidjson/document.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "core/base/json_text.h"
#include "core/base/paths.h"
#include "core/base/proc_fs.h"
#include "node_agent/delivery.h"
#include "node_agent/destinations.h"
#include "node_agent/engine_scraper.h"
#include "node_agent/event_socket.h"
#include "node_agent/spool.h"
#include "node_agent/step_watch.h"

namespace ix {

namespace {

constexpr uint64_t kMaxResultBytes = uint64_t{64} << 20;  // the collector's limit
constexpr size_t kMaxDatagramsPerWake = 1000;             // then spool them, then go on

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// The fields of a stamped event the loop acts on.
struct EventHead {
  std::string event, step, sweep, name, collector;
  int64_t entry = -1;
};

EventHead ReadHead(const std::string& stamped) {
  rapidjson::Document d;
  d.Parse(stamped.c_str(), stamped.size());
  EventHead h;
  auto str = [&](const char* k) { return d.HasMember(k) && d[k].IsString() ? std::string(d[k].GetString()) : ""; };
  if (d.HasParseError() || !d.IsObject()) return h;
  h.event = str("event");
  h.step = str("step");
  h.sweep = str("sweep");
  h.name = str("name");
  h.collector = str("collector");
  if (d.HasMember("entry") && d["entry"].IsInt64()) h.entry = d["entry"].GetInt64();
  return h;
}

// The agent's own `hang` event for a watched step.
std::string HangEventJson(const WatchedStepView& s, double now) {
  return JsonText(false, [&](auto& w) {
    w.StartObject();
    // An id no sender can have made: sender ids are "STEP:SEQ" with the
    // step as Slurm names it, never with '~'.
    const std::string id = s.step + "~hang:" + std::to_string(static_cast<uint64_t>(now * 1e6));
    w.Key("id"); w.String(id.c_str());
    w.Key("event"); w.String("hang");
    w.Key("step"); w.String(s.step.c_str());
    w.Key("time"); w.Double(now);
    if (!s.sweep.empty()) {
      w.Key("sweep"); w.String(s.sweep.c_str());
    }
    if (s.entry >= 0) {
      w.Key("entry"); w.Int64(s.entry);
    }
    w.Key("stalled_seconds"); w.Double(s.stalled_seconds);
    if (s.requests_running) {
      w.Key("requests_running"); w.Double(*s.requests_running);
    }
    w.EndObject();
  });
}

class AgentLoop {
 public:
  AgentLoop(const AgentConfig& c, AgentHooks h)
      : config_(c), hooks_(std::move(h)), watch_(c.hang_after_s), destinations_(c.spool, BaseDelivery()) {
    if (hooks_.hostname.empty()) hooks_.hostname = HostName();
  }

  Status Start();
  int Run(int stop_fd);

 private:
  DeliveryOptions BaseDelivery() {
    DeliveryOptions o;
    o.ca_file = config_.ca_file;
    o.log = [this](const std::string& line) { Log("delivery: " + line); };
    return o;
  }
  void Log(const std::string& line) {
    if (hooks_.log) {
      hooks_.log(line);
    } else {
      std::fprintf(stderr, "ix-node-agent: %s\n", line.c_str());
    }
  }
  void Drop(const ReceivedDatagram& d, const std::string& why) {
    ++dropped_;
    Log("dropped an event from pid " + std::to_string(d.pid) + " uid " + std::to_string(d.uid) + ": " + why);
  }
  void OnSocket();
  void Handle(ReceivedDatagram& d, std::map<Spool*, std::vector<std::string>>& batches);
  void Special(const EventHead& h, ReceivedDatagram& d, const std::string& stamped);
  void OnTick();
  void OnReadings();
  void Publish();

  AgentConfig config_;
  AgentHooks hooks_;
  StepWatch watch_;
  Destinations destinations_;
  std::unique_ptr<EventSocket> socket_;
  EngineScraper scraper_;
  NodeSample node_;
  GpuSnapshot gpus_;
  uint64_t received_ = 0, dropped_ = 0, undeliverable_ = 0, ticks_ = 0;
};

Status AgentLoop::Start() {
  // Made at once, so a spool that cannot be is an error at the start, not
  // at the first route.
  if (Status made = MakeDirs(config_.spool, 0700, 0755, "the spool"); !made) return made;
  std::string token;
  if (!config_.collector.empty()) {
    Result<std::string> t = ReadTokenFile(config_.token_file);
    if (!t) return t.error();
    token = t.value();
  }
  if (Status d = destinations_.OpenDefault(config_.collector, token); !d) return d;
  for (const std::string& p : destinations_.Restore()) Log(p);
  Result<EventSocket> s = EventSocket::Bind(config_.socket);
  if (!s) return s.error();
  socket_ = std::make_unique<EventSocket>(std::move(s.value()));
  return Ok{};
}

void AgentLoop::Special(const EventHead& h, ReceivedDatagram& d, const std::string& stamped) {
  if (h.event == "route") {
    if (!d.fd.valid()) return Log("route from uid " + std::to_string(d.uid) + ": no token descriptor; ignored");
    Result<std::string> token = ReadTokenFd(d.fd.get(), "the route token of sweep " + h.sweep, d.uid);
    Status set = token ? destinations_.SetRoute(d.uid, h.sweep, h.collector, token.value()) : Status(token.error());
    if (!set) Log("route of sweep " + h.sweep + " from uid " + std::to_string(d.uid) + ": " + set.error().message);
  } else if (h.event == "telemetry") {
    Result<TelemetryRequest> r = ParseTelemetryEvent(stamped);
    if (!r) return Log(r.error().message);
    r.value().uid = d.uid;
    const std::string step = r.value().step;
    Status added = watch_.Add(r.value(), ProcessId{d.pid, LiveStartTime(d.pid)}, std::move(d.fd));
    if (!added) return Log(added.error().message);
    watch_.WriteNow(step, hooks_.sample_gpus());
  } else if (h.event == "finished") {
    if (watch_.Watching(h.step)) watch_.Finish(h.step, hooks_.sample_gpus());
  }
}

void AgentLoop::Handle(ReceivedDatagram& d, std::map<Spool*, std::vector<std::string>>& batches) {
  if (d.truncated) return Drop(d, "longer than " + std::to_string(kMaxEventBytes) + " bytes");
  if (d.bad_descriptors) return Drop(d, "more than one descriptor");
  if (!d.has_credentials) return Drop(d, "no sender credentials");
  Result<std::string> stamped = StampEvent(d.bytes, d.pid, d.uid, d.gid, hooks_.hostname);
  if (!stamped) return Drop(d, stamped.error().message);
  const EventHead h = ReadHead(stamped.value());
  if (h.event == "hang") return Drop(d, "hang events are the agent's own");
  ++received_;
  Special(h, d, stamped.value());
  Spool* spool = destinations_.For(d.uid, h.sweep);
  if (!spool) {
    ++undeliverable_;
    return;
  }
  if (h.event == "result") {
    if (!d.fd.valid()) return Log("result " + h.name + " from uid " + std::to_string(d.uid) + ": no descriptor");
    Result<SpoolResult> r = spool->AddResult(h.sweep, h.entry, h.name, d.fd.get(), kMaxResultBytes);
    if (!r) Log("result " + h.name + " of sweep " + h.sweep + ": " + r.error().message);
  }
  batches[spool].push_back(stamped.value());
}

void AgentLoop::OnSocket() {
  std::map<Spool*, std::vector<std::string>> batches;
  for (size_t n = 0; n < kMaxDatagramsPerWake; ++n) {
    std::optional<ReceivedDatagram> d = socket_->Receive();
    if (!d) break;
    Handle(*d, batches);
  }
  for (auto& [spool, records] : batches) {
    if (Status s = spool->Append(records); !s) {
      dropped_ += records.size();
      Log("spool " + spool->dir() + ": " + s.error().message + "; " + std::to_string(records.size()) + " events lost");
      continue;
    }
    destinations_.Wake(spool);
  }
}

void AgentLoop::OnTick() {
  ++ticks_;
  node_ = hooks_.sample_node();
  gpus_ = hooks_.sample_gpus();
  Result<std::vector<ProcessInfo>> procs = ListProcesses();
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  watch_.Sample(gpus_, procs ? procs.value() : std::vector<ProcessInfo>{}, page, ticks);
  for (const std::string& step : watch_.Orphans()) {
    watch_.Finish(step, gpus_);
    Log("step " + step + ": its ix-stepd is gone without a finished event; its telemetry ends");
  }
  for (const std::string& p : watch_.TakeProblems()) Log(p);
  scraper_.Request(watch_.MetricsUrls());
  if (ticks_ % 60 == 0) destinations_.Prune();
  Publish();
}

void AgentLoop::OnReadings() {
  std::map<Spool*, std::vector<std::string>> batches;
  for (const StepEngineReading& r : scraper_.Take()) {
    if (!watch_.ObserveEngines(r.step, r.time, r.reading.requests_running, r.reading.generation_tokens)) continue;
    for (const WatchedStepView& s : watch_.View(r.time)) {
      if (s.step != r.step) continue;
      Log("step " + s.step + ": hung (requests running, no token for " + std::to_string(config_.hang_after_s) + " s)");
      Result<std::string> stamped = StampEvent(HangEventJson(s, r.time), ::getpid(), ::getuid(), ::getgid(),
                                               hooks_.hostname);
      Spool* spool = destinations_.For(s.uid, s.sweep);
      if (stamped && spool) batches[spool].push_back(stamped.value());
    }
  }
  for (auto& [spool, records] : batches) {
    if (spool->Append(records)) destinations_.Wake(spool);
  }
}

void AgentLoop::Publish() {
  if (!hooks_.publish) return;
  AgentMetrics m;
  m.node = node_;
  m.gpus = gpus_;
  for (const WatchedStepView& s : watch_.View(UnixNow())) {
    StepMetrics sm;
    sm.step = s.step;
    sm.sweep = s.sweep;
    sm.entry = s.entry;
    sm.processes = s.usage.processes;
    sm.rss_bytes = s.usage.rss_bytes;
    sm.cpu_seconds_total = s.usage.cpu_seconds;
    sm.hung = s.hung;
    sm.stalled_seconds = s.stalled_seconds;
    sm.requests_running = s.requests_running;
    sm.generation_tokens_total = s.generation_tokens;
    m.steps.push_back(sm);
  }
  const DestinationTotals t = destinations_.Totals();
  m.counters.events_received_total = received_;
  m.counters.events_dropped_total = dropped_ + socket_->counters().truncated + socket_->counters().bad_descriptors;
  m.counters.events_delivered_total = t.events_delivered;
  m.counters.delivery_retries_total = t.retries;
  m.counters.spool_records = t.pending_records;
  m.counters.spool_bytes = t.spool_bytes;
  if (!config_.collector.empty() || t.routes > 0) m.counters.delivery_up = t.unauthorized == 0 && t.last_success_time > 0;
  if (t.last_success_time > 0) m.counters.last_delivery_unix = t.last_success_time;
  hooks_.publish(m);
}

int AgentLoop::Run(int stop_fd) {
  UniqueFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  itimerspec spec{};
  spec.it_interval.tv_sec = config_.interval_s;
  spec.it_value.tv_nsec = 1;  // the first sample at once
  if (!timer.valid() || ::timerfd_settime(timer.get(), 0, &spec, nullptr) != 0) {
    Log("cannot create the sampling timer");
    return 1;
  }
  Log("listening on " + config_.socket + ", sampling every " + std::to_string(config_.interval_s) + " s");
  for (;;) {
    pollfd fds[4] = {{socket_->fd(), POLLIN, 0}, {timer.get(), POLLIN, 0}, {scraper_.fd(), POLLIN, 0},
                     {stop_fd, POLLIN, 0}};
    if (::poll(fds, 4, -1) < 0) continue;  // EINTR
    if (fds[3].revents) break;
    if (fds[0].revents) OnSocket();
    if (fds[1].revents) {
      uint64_t expirations = 0;
      (void)!::read(timer.get(), &expirations, sizeof expirations);
      OnTick();
    }
    if (fds[2].revents) OnReadings();
  }
  OnSocket();  // what was sent before the stop is spooled
  scraper_.Stop();
  destinations_.StopAll(std::chrono::milliseconds(2000));
  Log("stopped");
  return 0;
}

}  // namespace

int RunAgentDaemon(const AgentConfig& config, AgentHooks hooks, int stop_fd) {
  AgentLoop loop(config, std::move(hooks));
  if (Status s = loop.Start(); !s) {
    std::fprintf(stderr, "ix-node-agent: %s\n", s.error().message.c_str());
    return 1;
  }
  return loop.Run(stop_fd);
}

}  // namespace ix
