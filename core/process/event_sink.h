// EventSink: where ix-stepd (and `ixsubmit task`) report a step's events
// (started, placement, ready, failure, finished, telemetry, result) to the
// node agent. One JSON object per datagram on a unix datagram socket, sent
// without blocking: a missing, full or slow agent costs the step nothing and
// loses only events (counted in dropped()). The agent learns who sent each
// event from the kernel (SO_PASSCRED), so events need no token; a datagram
// may carry one descriptor (SCM_RIGHTS), so the agent never opens a path the
// job user controls.
//
// Every event gets `"id":"STEP:SEQ"` (SEQ counts from 1 per sink), which the
// agent and the collector keep and deduplicate by; with SetEntry, also the
// sweep and entry it belongs to.
//
// The socket is a path, or a descriptor already connected to it (slurmstepd
// connects on the host and ix-stepd inherits it: under Pyxis the path does
// not exist in the container). When sending on the descriptor fails (the
// agent restarted and its socket is a new one), the path is tried.
//
// Invariant: a sink with neither sends nothing and drops nothing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ix {

class EventSink {
 public:
  explicit EventSink(std::string socket_path = "");
  // Takes `connected_fd` (may be -1: none) and falls back to `socket_path`.
  EventSink(int connected_fd, std::string socket_path);
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  bool enabled() const { return !path_.empty() || connected_fd_ >= 0; }
  // Adds "sweep" and "entry" to every event from now on.
  void SetEntry(std::string sweep, int64_t entry);
  // {"event":EVENT,"step":STEP,"time":UNIX_SECONDS,"id":"STEP:SEQ",
  // ["sweep":..,"entry":..,] FIELDS..., RAW...}: `fields` are strings, `raw`
  // values already JSON (objects, numbers). `pass_fd` >= 0 goes along as the
  // datagram's descriptor (the caller keeps its own copy). False when the
  // event was dropped.
  bool Send(const std::string& event, const std::string& step,
            const std::vector<std::pair<std::string, std::string>>& fields = {},
            const std::vector<std::pair<std::string, std::string>>& raw = {}, int pass_fd = -1);
  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }
  const std::string& last_error() const { return last_error_; }

 private:
  bool SendOn(int fd, bool to_path, const std::string& text, int pass_fd);

  std::string path_;
  int fd_ = -1;            // unconnected, for sendto(path_)
  int connected_fd_ = -1;  // inherited, connected to the agent
  std::string sweep_;
  int64_t entry_ = -1;
  uint64_t seq_ = 0, sent_ = 0, dropped_ = 0;
  std::string last_error_;
};

// Sends `bytes` as one datagram on `fd` (to `path` when given, else to the
// socket `fd` is connected to), with `pass_fd` >= 0 as its SCM_RIGHTS
// descriptor, without blocking; EINTR is retried. The bytes sent, or -1
// with errno set. (`path` must fit sockaddr_un.)
ssize_t SendDatagramOn(int fd, const std::string* path, std::string_view bytes, int pass_fd);

// The JSON text of one event (what Send sends), for tests and logs.
std::string EventJson(const std::string& event, const std::string& step, double unix_time,
                      const std::vector<std::pair<std::string, std::string>>& fields,
                      const std::vector<std::pair<std::string, std::string>>& raw);

}  // namespace ix
