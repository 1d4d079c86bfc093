// CurlProber: a ReadinessProber on libcurl, for tests only: it is the
// reference SocketProber is checked against (same answers to the same
// servers) and the one-shot probes tests use to look at a server.
// Invariant: handle_ is a valid CURL* or null (then every probe reports
// that libcurl could not be initialised).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/process/readiness.h"

namespace ix {

class CurlProber final : public HttpGetProber {
 public:
  CurlProber();
  ~CurlProber() override;
  CurlProber(CurlProber&& other) noexcept;
  CurlProber& operator=(CurlProber&& other) noexcept;
  CurlProber(const CurlProber&) = delete;
  CurlProber& operator=(const CurlProber&) = delete;

 private:
  // HttpGetProber's GET; the body is capped at 4 MiB.
  ProbeResult Get(const std::string& url, const ProbeOptions& options, std::string* body) override;
  void* handle_ = nullptr;  // CURL*
};

// One-shot probes (a fresh handle each; prefer a CurlProber in loops).
ProbeResult ProbeHttpOk(const std::string& url, std::chrono::milliseconds timeout);
ProbeResult ProbeModelsNonEmpty(const std::string& url, std::chrono::milliseconds timeout);

// WaitReady with a fresh CurlProber.
Status WaitReady(const std::vector<ReadinessCheck>& checks, const WaitReadyOptions& options);

}  // namespace ix
