// EventSink: where ix-stepd reports a step's events (started, placement,
// ready, failure, finished) for the node agent. One JSON object per
// datagram on a unix datagram socket, sent without blocking: a missing,
// full or slow agent costs the step nothing and loses only events (counted
// in dropped()). The agent learns who sent each event from the kernel
// (SO_PASSCRED), so events need no token.
//
// Invariant: a sink built with an empty path sends nothing and drops nothing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ix {

class EventSink {
 public:
  explicit EventSink(std::string socket_path = "");
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  bool enabled() const { return !path_.empty(); }
  // {"event":EVENT,"step":STEP,"time":UNIX_SECONDS, FIELDS..., RAW...}:
  // `fields` are strings, `raw` values already JSON (objects, numbers).
  void Send(const std::string& event, const std::string& step,
            const std::vector<std::pair<std::string, std::string>>& fields = {},
            const std::vector<std::pair<std::string, std::string>>& raw = {});
  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }
  const std::string& last_error() const { return last_error_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t sent_ = 0, dropped_ = 0;
  std::string last_error_;
};

// The JSON text of one event (what Send sends), for tests and logs.
std::string EventJson(const std::string& event, const std::string& step, double unix_time,
                      const std::vector<std::pair<std::string, std::string>>& fields,
                      const std::vector<std::pair<std::string, std::string>>& raw);

}  // namespace ix
