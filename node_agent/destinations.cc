#include "node_agent/destinations.h"

#include <dirent.h>
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "core/base/file_text.h"
#include "core/base/json_text.h"
#include "core/base/paths.h"
#include "node_agent/event_socket.h"

namespace ix {

namespace {

std::string RouteDirName(uid_t uid, const std::string& sweep) { return std::to_string(uid) + "-" + sweep; }

// route.json: what a restarted agent needs to deliver a route again.
std::string RouteJson(uid_t uid, const std::string& sweep, const std::string& collector, const std::string& token) {
  return JsonText(false, [&](auto& w) {
    w.StartObject();
    w.Key("uid"); w.Uint(uid);
    w.Key("sweep"); w.String(sweep.c_str());
    w.Key("collector"); w.String(collector.c_str());
    w.Key("token"); w.String(token.c_str());
    w.EndObject();
  });
}

}  // namespace

Destinations::Destinations(std::string spool_root, DeliveryOptions base, std::chrono::seconds route_idle)
    : root_(std::move(spool_root)), base_(std::move(base)), route_idle_(route_idle) {}

Destinations::~Destinations() { StopAll(std::chrono::milliseconds(2000)); }

Result<std::unique_ptr<Destinations::Destination>> Destinations::Start(const std::string& dir,
                                                                       const std::string& collector,
                                                                       const std::string& token) {
  auto d = std::make_unique<Destination>();
  d->dir = dir;
  Result<std::unique_ptr<Spool>> spool = Spool::Open(dir);
  if (!spool) return spool.error();
  d->spool = std::move(spool.value());
  DeliveryOptions o = base_;
  o.collector = collector;
  o.token = token;
  d->delivery = std::make_unique<Delivery>(*d->spool, o);
  if (Status s = d->delivery->Start(); !s) return s.error();
  d->last_used = std::chrono::steady_clock::now();
  return d;
}

Status Destinations::OpenDefault(const std::string& collector, const std::string& token) {
  if (collector.empty()) return Ok{};
  Result<std::unique_ptr<Destination>> d = Start(root_ + "/default", collector, token);
  if (!d) return d.error();
  default_ = std::move(d.value());
  return Ok{};
}

Status Destinations::SetRoute(uid_t uid, const std::string& sweep, const std::string& collector,
                              const std::string& token) {
  if (!IsValidSweepId(sweep)) return Error{"route: sweep '" + sweep + "' is not a sweep id ([A-Za-z0-9._-]{1,64})"};
  const auto key = std::make_pair(uid, sweep);
  const std::string dir = root_ + "/routes/" + RouteDirName(uid, sweep);
  if (Status made = MakeDirs(root_ + "/routes", 0700, 0700, "the spool's routes directory"); !made) return made;
  auto it = routes_.find(key);
  // The same route again (every task of the sweep sends it): nothing to do.
  if (it != routes_.end()) {
    it->second->last_used = std::chrono::steady_clock::now();
    int err = 0;
    if (ReadFileText(dir + "/route.json", &err) == RouteJson(uid, sweep, collector, token) + "\n") return Ok{};
    it->second->delivery->Stop(std::chrono::milliseconds(2000));
    routes_.erase(it);
  }
  Result<std::unique_ptr<Destination>> d = Start(dir, collector, token);
  if (!d) return d.error();
  if (Status w = WriteFileAtomic(dir + "/route.json", RouteJson(uid, sweep, collector, token) + "\n", 0600); !w) {
    return w;
  }
  routes_[key] = std::move(d.value());
  return Ok{};
}

std::vector<std::string> Destinations::Restore() {
  std::vector<std::string> problems;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root_ + "/routes", ec)) {
    const std::string dir = entry.path().string();
    int err = 0;
    const std::string text = ReadFileText(dir + "/route.json", &err);
    rapidjson::Document d;
    d.Parse(text.c_str());
    if (err || d.HasParseError() || !d.IsObject() || !d.HasMember("uid") || !d["uid"].IsUint() ||
        !d.HasMember("sweep") || !d["sweep"].IsString() || !d.HasMember("collector") || !d["collector"].IsString() ||
        !d.HasMember("token") || !d["token"].IsString()) {
      problems.push_back(dir + "/route.json: unreadable; the route is not replayed");
      continue;
    }
    const uid_t uid = d["uid"].GetUint();
    const std::string sweep = d["sweep"].GetString();
    if (!IsValidSweepId(sweep) || entry.path().filename() != RouteDirName(uid, sweep)) {
      problems.push_back(dir + ": does not match its route.json; not replayed");
      continue;
    }
    Result<std::unique_ptr<Destination>> r = Start(dir, d["collector"].GetString(), d["token"].GetString());
    if (!r) {
      problems.push_back(dir + ": " + r.error().message);
      continue;
    }
    routes_[{uid, sweep}] = std::move(r.value());
  }
  return problems;
}

Spool* Destinations::For(uid_t uid, const std::string& sweep) {
  if (!sweep.empty()) {
    auto it = routes_.find({uid, sweep});
    if (it != routes_.end()) {
      it->second->last_used = std::chrono::steady_clock::now();
      return it->second->spool.get();
    }
  }
  return default_ ? default_->spool.get() : nullptr;
}

void Destinations::Wake(Spool* spool) {
  if (default_ && default_->spool.get() == spool) default_->delivery->Wake();
  for (auto& [key, d] : routes_) {
    if (d->spool.get() == spool) d->delivery->Wake();
  }
}

void Destinations::Prune() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = routes_.begin(); it != routes_.end();) {
    const SpoolStats s = it->second->spool->Stats();
    if (s.pending_records == 0 && s.pending_results == 0 && now - it->second->last_used > route_idle_) {
      it->second->delivery->Stop(std::chrono::milliseconds(2000));
      const std::string dir = it->second->dir;
      it = routes_.erase(it);
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    } else {
      ++it;
    }
  }
}

DestinationTotals Destinations::Totals() const {
  DestinationTotals t;
  t.routes = routes_.size();
  auto add = [&](const Destination& d) {
    const DeliveryCounters c = d.delivery->Counters();
    t.events_delivered += c.events_delivered;
    t.events_skipped += c.events_skipped;
    t.results_delivered += c.results_delivered;
    t.results_skipped += c.results_skipped;
    t.retries += c.retries;
    t.pending_records += c.spool.pending_records;
    t.pending_results += c.spool.pending_results;
    t.spool_bytes += c.spool.event_bytes + c.spool.result_bytes;
    t.unauthorized += c.unauthorized ? 1 : 0;
    t.last_success_time = std::max(t.last_success_time, c.last_success_time);
    if (!c.last_error.empty()) t.last_error = c.last_error;
  };
  if (default_) add(*default_);
  for (const auto& [key, d] : routes_) add(*d);
  return t;
}

void Destinations::StopAll(std::chrono::milliseconds deadline) {
  if (default_) default_->delivery->Stop(deadline);
  for (auto& [key, d] : routes_) d->delivery->Stop(deadline);
}

}  // namespace ix
