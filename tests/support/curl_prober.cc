#include <curl/curl.h>

#include <algorithm>
#include <cstdio>

#include "tests/support/curl_prober.h"

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

}  // namespace

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

ProbeResult CurlProber::Get(const std::string& url, const ProbeOptions& options, std::string* body) {
  ProbeResult r;
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
  r.answered = true;
  r.ready = status == 200;
  if (!r.ready) r.detail = "HTTP " + std::to_string(status);
  return r;
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

Status WaitReady(const std::vector<ReadinessCheck>& checks, const WaitReadyOptions& options) {
  CurlProber prober;
  return WaitReady(checks, options, prober);
}

}  // namespace ix
