// EngineScraper: reads the watched steps' engine /metrics on a thread of
// its own, so that the agent's loop keeps draining its socket (whose queue
// holds only net.unix.max_dgram_qlen datagrams, 10 by the kernel's default)
// while an engine takes its time to answer. The loop hands it a round of
// (step, URLs), and is woken through an eventfd when the readings are in.
//
// Invariants: at most one round is in flight (a round asked for while one
// runs replaces the one waiting); Stop() ends the thread within the read
// deadline; readings come out in the order rounds went in.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/unique_fd.h"
#include "node_agent/engine_metrics.h"

namespace ix {

struct StepEngineReading {
  std::string step;
  double time = 0;        // unix seconds when read
  EngineReading reading;  // the step's engines combined (CombineReadings)
};

class EngineScraper {
 public:
  explicit EngineScraper(std::chrono::milliseconds timeout = std::chrono::milliseconds(500));
  ~EngineScraper();
  EngineScraper(const EngineScraper&) = delete;
  EngineScraper& operator=(const EngineScraper&) = delete;

  // Readable (poll) when readings are waiting; -1 when the eventfd could
  // not be made (then Take() is polled on every tick).
  int fd() const { return wake_.get(); }
  void Request(std::vector<std::pair<std::string, std::vector<std::string>>> round);
  // The readings in so far (and clears the eventfd).
  std::vector<StepEngineReading> Take();
  void Stop();

 private:
  void Run();

  std::chrono::milliseconds timeout_;
  UniqueFd wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::vector<std::pair<std::string, std::vector<std::string>>>> waiting_;
  std::vector<StepEngineReading> done_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ix
