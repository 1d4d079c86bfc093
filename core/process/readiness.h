// Readiness: HTTP probes that say whether a server answers (`/health` with
// 200) and serves a model (`/v1/models` with at least one entry), a check
// that a node's engine is connected to the head of its step, and a wait
// that runs a process's checks in order, probing every few tens of
// milliseconds until they pass, a deadline passes, or the caller says stop
// (e.g. a watched process died). docs/PROCESS.md.
//
// The prober is an interface: ix-stepd probes with SocketProber
// (core/process/http_probe.h), plain sockets, no proxy, no redirects, no
// threads. Connection refused is the normal "not yet".
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/recipe/launch_plan.h"
#include "core/base/result.h"

namespace ix {

// Timeouts of one probe.
struct ProbeOptions {
  std::chrono::milliseconds timeout{2000};         // the whole request
  std::chrono::milliseconds connect_timeout{250};  // connecting only (local servers)
};

// The outcome of one probe. `http_status` is 0 when no HTTP answer came
// (connection refused, timeout); `detail` says what was seen when not ready
// ("HTTP 503", "HTTP 200 but the model list is empty", curl's message).
struct ProbeResult {
  bool ready = false;
  // A whole answer came (status line, headers and body). http_status may be
  // set without it: a probe cut short after the headers.
  bool answered = false;
  long http_status = 0;
  std::string detail;
};

// Whether a /v1/models answer lists a model: status 200 and a JSON object
// whose "data" is an array with at least one entry. Pure.
ProbeResult EvaluateModels(long http_status, std::string_view body);

// Runs one readiness check. Implementations must not throw.
class ReadinessProber {
 public:
  virtual ~ReadinessProber() = default;
  virtual ProbeResult Probe(const ReadinessCheck& check, const ProbeOptions& options) = 0;
};

// A ReadinessProber whose every check is one HTTP GET: the derived class
// says how the GET is made (SocketProber, or CurlProber in the tests), this
// one what each kind of check makes of the answer, so both judge alike.
class HttpGetProber : public ReadinessProber {
 public:
  ProbeResult Probe(const ReadinessCheck& check, const ProbeOptions& options) override;
  // GET `url`: 200 is ready.
  ProbeResult HttpOk(const std::string& url, const ProbeOptions& options);
  // GET `url`: 200 with a non-empty model list is ready (EvaluateModels).
  ProbeResult ModelsNonEmpty(const std::string& url, const ProbeOptions& options);
  // No HTTP: ready while this network namespace holds an established TCP
  // connection to `addr` (tcp_peers.h); how a node after the head of a
  // multi-node step knows its engine joined the head.
  virtual ProbeResult Connected(const std::string& addr);

 protected:
  // Performs a GET. `answered` when a whole HTTP answer came back; then
  // `ready` on 200, else `detail` is "HTTP N". The decoded body goes to
  // *body when given.
  virtual ProbeResult Get(const std::string& url, const ProbeOptions& options, std::string* body) = 0;
};

// How WaitReady waits. Invariant: interval > 0; `deadline` is required
// (a default time_point is long past: one probe per check).
struct WaitReadyOptions {
  std::chrono::steady_clock::time_point deadline;  // give up after this
  // From one probe's start to the next: 1/16 of the time the check has
  // waited so far, clamped to [first_interval, interval]. A server is seen
  // at most ~6% (or first_interval) after it answers: one up in 20 ms
  // within a millisecond or two; a slow one costs one probe per interval.
  std::chrono::milliseconds first_interval{1};
  std::chrono::milliseconds interval{20};
  ProbeOptions probe;                              // each probe is also cut at the deadline
  // Asked before every probe; a reason stops the wait (e.g. "engine (pid
  // 12) exited with status 1"). Empty = never.
  std::function<std::optional<std::string>()> abort;
};

// The pause from one probe's start to the next after a check has waited
// `waited` (see WaitReadyOptions).
std::chrono::milliseconds NextProbeGap(std::chrono::milliseconds waited, const WaitReadyOptions& options);

// Runs `checks` in order: each is probed until it passes, then the next.
// Every check is probed at least once, even past the deadline. Ok when all
// pass; otherwise an Error naming the check, why the wait ended, the last
// outcome and the time spent:
// `readiness check 1 of 2 (http_ok http://127.0.0.1:8000/health) not ready
// after 600.000 s (29817 probes); last: HTTP 503`.
Status WaitReady(const std::vector<ReadinessCheck>& checks, const WaitReadyOptions& options,
                 ReadinessProber& prober);

}  // namespace ix
