#include "node_agent/step_watch.h"

#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "node_agent/gpu_metrics_csv.h"

namespace ix {

namespace {

Result<std::vector<unsigned>> ReadGpus(const rapidjson::Value& v) {
  std::vector<unsigned> gpus;
  if (!v.IsArray()) return Error{"telemetry event: field 'gpus' must be an array of GPU indices"};
  for (const auto& g : v.GetArray()) {
    if (!g.IsUint() || g.GetUint() > 1023) return Error{"telemetry event: field 'gpus' holds a value that is not a GPU index (0-1023)"};
    gpus.push_back(g.GetUint());
  }
  return gpus;
}

// Writes all of `text` (a regular file: no short writes but on errors).
bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<TelemetryRequest> ParseTelemetryEvent(std::string_view stamped_json) {
  rapidjson::Document d;
  d.Parse(stamped_json.data(), stamped_json.size());
  if (d.HasParseError() || !d.IsObject()) return Error{"telemetry event: not a JSON object"};
  TelemetryRequest r;
  if (!d.HasMember("step") || !d["step"].IsString()) return Error{"telemetry event: field 'step' must be a string"};
  r.step = d["step"].GetString();
  if (d.HasMember("sweep") && d["sweep"].IsString()) r.sweep = d["sweep"].GetString();
  if (d.HasMember("entry") && d["entry"].IsInt64()) r.entry = d["entry"].GetInt64();
  if (d.HasMember("gpus")) {
    Result<std::vector<unsigned>> gpus = ReadGpus(d["gpus"]);
    if (!gpus) return gpus.error();
    r.gpus = gpus.value();
  }
  if (d.HasMember("metrics_urls")) {
    if (!d["metrics_urls"].IsArray()) return Error{"telemetry event: field 'metrics_urls' must be an array of URLs"};
    for (const auto& u : d["metrics_urls"].GetArray()) {
      if (!u.IsString()) return Error{"telemetry event: field 'metrics_urls' holds a value that is not a string"};
      r.metrics_urls.emplace_back(u.GetString());
    }
  }
  return r;
}

TreeUsage MeasureTree(const std::vector<ProcessInfo>& all, pid_t root, uint64_t page_bytes, double ticks_per_second) {
  std::unordered_multimap<pid_t, const ProcessInfo*> children;
  const ProcessInfo* top = nullptr;
  for (const ProcessInfo& p : all) {
    children.emplace(p.ppid, &p);
    if (p.pid == root) top = &p;
  }
  TreeUsage u;
  if (!top) return u;
  std::vector<const ProcessInfo*> todo = {top};
  // A pid cycle cannot happen in one /proc pass, but a bound keeps a bad
  // input (tests, a racing reader) from looping.
  while (!todo.empty() && u.processes < all.size()) {
    const ProcessInfo* p = todo.back();
    todo.pop_back();
    if (p->exited()) continue;
    ++u.processes;
    u.rss_bytes += p->rss_pages * page_bytes;
    u.cpu_seconds += static_cast<double>(p->utime_ticks + p->stime_ticks) / ticks_per_second;
    auto [b, e] = children.equal_range(p->pid);
    for (auto it = b; it != e; ++it) todo.push_back(it->second);
  }
  return u;
}

Status StepWatch::Add(TelemetryRequest request, ProcessId sender, UniqueFd csv) {
  struct stat st{};
  if (!csv.valid() || ::fstat(csv.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error{"step " + request.step + ": the telemetry descriptor is not a regular file (refused)"};
  }
  const std::string step = request.step;
  Watched w{std::move(request), sender,           std::move(csv), 0, false, false, {}, HangWatch(hang_after_),
            std::nullopt,       std::nullopt};
  steps_.erase(step);
  steps_.emplace(step, std::move(w));
  return Ok{};
}

void StepWatch::WriteRows(Watched& w, const GpuSnapshot& gpus) {
  if (w.write_failed || gpus.gpus.empty()) return;
  std::string text;
  if (!w.header_done) text = GpuMetricsCsvHeader();
  text += GpuMetricsCsvRows(gpus.gpus, w.request.gpus);
  if (w.written + text.size() > kMaxCsvBytes) {
    w.write_failed = true;
    problems_.push_back("step " + w.request.step + ": gpu_metrics.csv reached " + std::to_string(kMaxCsvBytes >> 20) +
                        " MiB; no more rows are written");
    return;
  }
  if (!WriteAll(w.csv.get(), text)) {
    w.write_failed = true;
    problems_.push_back("step " + w.request.step + ": cannot write gpu_metrics.csv: " + std::strerror(errno));
    return;
  }
  w.header_done = true;
  w.written += text.size();
}

void StepWatch::WriteNow(const std::string& step, const GpuSnapshot& gpus) {
  auto it = steps_.find(step);
  if (it != steps_.end()) WriteRows(it->second, gpus);
}

void StepWatch::Sample(const GpuSnapshot& gpus, const std::vector<ProcessInfo>& processes, uint64_t page_bytes,
                       double ticks_per_second) {
  for (auto& [step, w] : steps_) {
    WriteRows(w, gpus);
    w.usage = MeasureTree(processes, w.sender.pid, page_bytes, ticks_per_second);
  }
}

std::vector<std::pair<std::string, std::vector<std::string>>> StepWatch::MetricsUrls() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& [step, w] : steps_) {
    if (!w.request.metrics_urls.empty()) out.emplace_back(step, w.request.metrics_urls);
  }
  return out;
}

bool StepWatch::ObserveEngines(const std::string& step, double now, std::optional<double> requests_running,
                               std::optional<double> generation_tokens) {
  auto it = steps_.find(step);
  if (it == steps_.end()) return false;
  it->second.requests_running = requests_running;
  it->second.generation_tokens = generation_tokens;
  return it->second.hang.Observe(now, requests_running, generation_tokens);
}

bool StepWatch::Finish(const std::string& step, const GpuSnapshot& gpus) {
  auto it = steps_.find(step);
  if (it == steps_.end()) return false;
  WriteRows(it->second, gpus);
  steps_.erase(it);
  return true;
}

std::vector<std::string> StepWatch::Orphans() const {
  std::vector<std::string> out;
  for (const auto& [step, w] : steps_) {
    if (LiveStartTime(w.sender.pid) != w.sender.start_time) out.push_back(step);
  }
  return out;
}

std::vector<WatchedStepView> StepWatch::View(double now) const {
  std::vector<WatchedStepView> out;
  for (const auto& [step, w] : steps_) {
    out.push_back({step, w.request.sweep, w.request.entry, w.request.uid, w.usage, w.hang.hung(),
                   w.hang.stalled_for(now), w.requests_running, w.generation_tokens});
  }
  return out;
}

std::vector<std::string> StepWatch::TakeProblems() {
  std::vector<std::string> out;
  out.swap(problems_);
  return out;
}

}  // namespace ix
