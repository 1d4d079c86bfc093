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

class CurlProber final : public ReadinessProber {
 public:
  CurlProber();
  ~CurlProber() override;
  CurlProber(CurlProber&& other) noexcept;
  CurlProber& operator=(CurlProber&& other) noexcept;
  CurlProber(const CurlProber&) = delete;
  CurlProber& operator=(const CurlProber&) = delete;

  ProbeResult Probe(const ReadinessCheck& check, const ProbeOptions& options) override;
  // GET `url`: 200 is ready.
  ProbeResult HttpOk(const std::string& url, const ProbeOptions& options);
  // GET `url`: 200 with a non-empty model list is ready (EvaluateModels).
  ProbeResult ModelsNonEmpty(const std::string& url, const ProbeOptions& options);

 private:
  // Performs a GET; the body (capped at 4 MiB) goes to *body when given;
  // *answered says whether a whole HTTP answer came back.
  ProbeResult Get(const std::string& url, const ProbeOptions& options, std::string* body, bool* answered);
  void* handle_ = nullptr;  // CURL*
};

// One-shot probes (a fresh handle each; prefer a CurlProber in loops).
ProbeResult ProbeHttpOk(const std::string& url, std::chrono::milliseconds timeout);
ProbeResult ProbeModelsNonEmpty(const std::string& url, std::chrono::milliseconds timeout);

// WaitReady with a fresh CurlProber.
Status WaitReady(const std::vector<ReadinessCheck>& checks, const WaitReadyOptions& options);

}  // namespace ix
