#include "core/process/readiness.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/process/tcp_peers.h"

namespace ix {
namespace {

std::string Seconds(std::chrono::steady_clock::duration d) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3f", std::chrono::duration<double>(d).count());
  return s;
}

std::string Excerpt(std::string_view body) {
  std::string s(body.substr(0, 80));
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return "'" + s + (body.size() > 80 ? "...'" : "'");
}

}  // namespace

ProbeResult EvaluateModels(long http_status, std::string_view body) {
  ProbeResult r;
  r.answered = true;
  r.http_status = http_status;
  if (http_status != 200) {
    r.detail = "HTTP " + std::to_string(http_status);
    return r;
  }
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) {
    r.detail = std::string("HTTP 200 but the body is not JSON (") + rapidjson::GetParseError_En(doc.GetParseError()) +
               " at offset " + std::to_string(doc.GetErrorOffset()) + "): " + Excerpt(body);
    return r;
  }
  if (!doc.IsObject() || !doc.HasMember("data") || !doc["data"].IsArray()) {
    r.detail = "HTTP 200 but the body is not a model list (expected {\"data\": [...]}): " + Excerpt(body);
    return r;
  }
  if (doc["data"].Empty()) {
    r.detail = "HTTP 200 but the model list is empty";
    return r;
  }
  r.ready = true;
  return r;
}

ProbeResult HttpGetProber::HttpOk(const std::string& url, const ProbeOptions& options) {
  return Get(url, options, nullptr);
}

ProbeResult HttpGetProber::ModelsNonEmpty(const std::string& url, const ProbeOptions& options) {
  std::string body;
  ProbeResult r = Get(url, options, &body);
  return r.answered ? EvaluateModels(r.http_status, body) : r;
}

ProbeResult HttpGetProber::Probe(const ReadinessCheck& check, const ProbeOptions& options) {
  switch (check.kind) {
    case ReadinessTemplate::Kind::kHttpOk:
      return HttpOk(check.url, options);
    case ReadinessTemplate::Kind::kModelsNonEmpty:
      return ModelsNonEmpty(check.url, options);
    case ReadinessTemplate::Kind::kConnected:
      break;
  }
  return Connected(check.url);
}

ProbeResult HttpGetProber::Connected(const std::string& addr) {
  ProbeResult r;
  Result<bool> c = HasEstablishedTo(addr);
  r.ready = c && c.value();
  r.detail = !c ? c.error().message : r.ready ? "connected" : "no established TCP connection to " + addr;
  return r;
}

std::chrono::milliseconds NextProbeGap(std::chrono::milliseconds waited, const WaitReadyOptions& options) {
  // The wait so far bounds how late a server may be seen: 1/16 of it.
  return std::clamp(waited / 16, std::min(options.first_interval, options.interval), options.interval);
}

Status WaitReady(const std::vector<ReadinessCheck>& checks, const WaitReadyOptions& options,
                 ReadinessProber& prober) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (size_t i = 0; i < checks.size(); ++i) {
    const ReadinessCheck& check = checks[i];
    const std::string name = "readiness check " + std::to_string(i + 1) + " of " + std::to_string(checks.size()) +
                             " (" + ReadinessKindName(check.kind) + " " + check.url + ")";
    ProbeResult last;
    // The last probe that had all of options.probe.timeout or got a whole
    // answer: what a probe cut short at the deadline must not hide.
    std::optional<ProbeResult> last_full;
    int probes = 0;
    const auto check_start = Clock::now();
    for (;;) {
      if (options.abort) {
        if (std::optional<std::string> why = options.abort()) {
          return Error{name + ": stopped waiting after " + Seconds(Clock::now() - start) + " s (" +
                       std::to_string(probes) + " probes): " + *why +
                       (probes ? "; last: " + last.detail : std::string())};
        }
      }
      const auto probe_start = Clock::now();
      ProbeOptions po = options.probe;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(options.deadline - probe_start);
      if (probes > 0 || left.count() > 0) {
        po.timeout = std::max(std::chrono::milliseconds(1), std::min(po.timeout, left));
      }
      last = prober.Probe(check, po);
      const bool cut = po.timeout < options.probe.timeout;
      if (!cut || last.answered) last_full = last;
      ++probes;
      if (last.ready) break;
      const auto now = Clock::now();
      if (now >= options.deadline) {
        // A probe cut short by the deadline without a whole answer (none,
        // or its headers only) says less than the last one that had its
        // full time.
        const std::string what = cut && !last.answered && last_full
                                     ? last_full->detail + " (then, cut at the deadline: " + last.detail + ")"
                                     : last.detail;
        return Error{name + " not ready after " + Seconds(now - start) + " s (" + std::to_string(probes) +
                     " probes); last: " + what};
      }
      const auto gap = NextProbeGap(std::chrono::duration_cast<std::chrono::milliseconds>(now - check_start), options);
      const auto next = std::min<Clock::time_point>(probe_start + gap, options.deadline);
      if (next > now) std::this_thread::sleep_until(next);
    }
  }
  return Ok{};
}

}  // namespace ix
