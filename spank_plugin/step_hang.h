// StepHang: ix-stepd's hang detection for one step, from the plan's hang
// policy (PlannedHang, docs/STEP.md "Hangs"). Every poll reads each check's
// metrics URL once and feeds one HangWatch per server and, with per_label,
// per label value (vLLM's `engine`: one DP rank). A server that is busy
// (a `busy` gauge above zero) while none of its `progress` counters moves,
// or that does not answer while its process lives, for after_s seconds is
// hung. The router's check has no counters of its own: its progress is the
// engines' counters summed, so requests held at the router while nothing
// reaches an engine are a hang too.
//
// Invariants: Poll reports a hang at most once (the first one found ends
// the step); the fetch is the caller's (a SocketProber in ix-stepd, a fake
// in tests), so the logic runs without the network; time is the caller's.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/process/hang_watch.h"
#include "core/recipe/launch_plan.h"

namespace ix {

// What a hang was: the server, the label value (a DP rank) when judged per
// label, for how long, the busy reading and the last counters (name, value;
// an unset value was never read).
struct HangFinding {
  std::string process;
  std::string label;        // per_label's name ("" when judged summed)
  std::string label_value;  // the rank, when judged per label
  double stalled_s = 0;
  bool answered = true;  // false: no /metrics answer for stalled_s
  std::optional<double> busy;
  std::vector<std::pair<std::string, std::optional<double>>> counters;

  // "engine (engine=2): 4 requests busy and no progress for 30.0 s
  // (vllm:generation_tokens_total 1234, ...)"
  std::string Describe() const;
  // {"process":...,"label":...,"stalled_s":...,"answered":...,"busy":...,"counters":{...}}
  std::string Json() const;
};

class StepHang {
 public:
  // The body of `url` when it answered 200 within the poll's time; nullopt
  // when it did not answer.
  using Fetch = std::function<std::optional<std::string>(const std::string& url)>;

  explicit StepHang(PlannedHang policy) : policy_(std::move(policy)) {}

  // One poll at `now` (seconds, a clock that does not go backwards). The
  // first hang found, if any, once.
  std::optional<HangFinding> Poll(double now, const Fetch& fetch);

  double after_s() const { return policy_.after_s; }
  bool empty() const { return policy_.checks.empty(); }

 private:
  // One watched series: a check's server, or one label value of it.
  struct Series {
    HangWatch watch;
    std::optional<double> busy;
  };
  // The engines' progress this poll: each progress counter summed over
  // every engine series that answered (unset when one did not).
  using Totals = std::map<std::string, std::optional<double>>;

  std::optional<HangFinding> PollCheck(double now, const HangCheck& check, const std::optional<std::string>& body,
                                       Totals& totals);
  std::optional<HangFinding> Judge(double now, const HangCheck& check, const std::string& value, Series& s,
                                   bool answered, const std::vector<std::string>& names);

  PlannedHang policy_;
  std::map<std::pair<std::string, std::string>, Series> series_;  // (process, label value)
  bool reported_ = false;
};

}  // namespace ix
