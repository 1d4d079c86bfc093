#include "core/readiness.h"

#include <curl/curl.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace ix {
namespace {

constexpr size_t kMaxBody = 4u << 20;

// The body of one answer, capped.
struct Body {
  std::string* out = nullptr;
  bool truncated = false;
};

size_t OnData(char* data, size_t size, size_t count, void* user) {
  auto* b = static_cast<Body*>(user);
  const size_t n = size * count;
  if (!b->out) return n;  // not wanted: drop
  if (b->out->size() + n > kMaxBody) {
    b->truncated = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  b->out->append(data, n);
  return n;
}

bool GlobalInit() {
  static const bool ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return ok;
}

long Ms(std::chrono::milliseconds d) { return static_cast<long>(std::max<int64_t>(1, d.count())); }

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

CurlProber::CurlProber() {
  if (GlobalInit()) handle_ = curl_easy_init();
}

CurlProber::~CurlProber() {
  if (handle_) curl_easy_cleanup(static_cast<CURL*>(handle_));
}

CurlProber::CurlProber(CurlProber&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }

CurlProber& CurlProber::operator=(CurlProber&& other) noexcept {
  if (this != &other) {
    if (handle_) curl_easy_cleanup(static_cast<CURL*>(handle_));
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

ProbeResult CurlProber::Get(const std::string& url, const ProbeOptions& options, std::string* body,
                            bool* answered) {
  ProbeResult r;
  *answered = false;
  if (!handle_) {
    r.detail = "libcurl could not be initialised";
    return r;
  }
  CURL* h = static_cast<CURL*>(handle_);
  Body sink{body};
  if (body) body->clear();
  char err[CURL_ERROR_SIZE] = {};
  // Options are set again every time (reset keeps the connection cache).
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, Ms(std::min(options.connect_timeout, options.timeout)));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, Ms(options.timeout));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "inferencex-readiness");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnData);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  r.http_status = status;
  if (rc != CURLE_OK) {
    if (sink.truncated) {
      r.detail = "answer larger than " + std::to_string(kMaxBody >> 20) + " MiB";
    } else {
      r.detail = err[0] ? std::string(err) : std::string(curl_easy_strerror(rc));
    }
    return r;
  }
  *answered = true;
  r.ready = status == 200;
  if (!r.ready) r.detail = "HTTP " + std::to_string(status);
  return r;
}

ProbeResult CurlProber::HttpOk(const std::string& url, const ProbeOptions& options) {
  bool answered = false;
  return Get(url, options, nullptr, &answered);
}

ProbeResult CurlProber::ModelsNonEmpty(const std::string& url, const ProbeOptions& options) {
  std::string body;
  bool answered = false;
  ProbeResult r = Get(url, options, &body, &answered);
  return answered ? EvaluateModels(r.http_status, body) : r;
}

ProbeResult CurlProber::Probe(const ReadinessCheck& check, const ProbeOptions& options) {
  return check.kind == ReadinessTemplate::Kind::kHttpOk ? HttpOk(check.url, options)
                                                         : ModelsNonEmpty(check.url, options);
}

ProbeResult ProbeHttpOk(const std::string& url, std::chrono::milliseconds timeout) {
  ProbeOptions o;
  o.timeout = timeout;
  return CurlProber().HttpOk(url, o);
}

ProbeResult ProbeModelsNonEmpty(const std::string& url, std::chrono::milliseconds timeout) {
  ProbeOptions o;
  o.timeout = timeout;
  return CurlProber().ModelsNonEmpty(url, o);
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
    std::optional<ProbeResult> last_full;  // the last probe that had all of options.probe.timeout
    int probes = 0;
    auto gap = std::min(options.first_interval, options.interval);
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
      if (!cut) last_full = last;
      ++probes;
      if (last.ready) break;
      const auto now = Clock::now();
      if (now >= options.deadline) {
        // A probe cut short by the deadline without an answer says less
        // than the last one that had its full time.
        const std::string what = cut && last.http_status == 0 && last_full
                                     ? last_full->detail + " (then, cut at the deadline: " + last.detail + ")"
                                     : last.detail;
        return Error{name + " not ready after " + Seconds(now - start) + " s (" + std::to_string(probes) +
                     " probes); last: " + what};
      }
      const auto next = std::min<Clock::time_point>(probe_start + gap, options.deadline);
      gap = std::min(gap * 2, options.interval);
      if (next > now) std::this_thread::sleep_until(next);
    }
  }
  return Ok{};
}

Status WaitReady(const std::vector<ReadinessCheck>& checks, const WaitReadyOptions& options) {
  CurlProber prober;
  return WaitReady(checks, options, prober);
}

}  // namespace ix
