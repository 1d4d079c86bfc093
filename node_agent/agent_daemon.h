// The agent's loop: one thread that receives events on the agent's socket,
// spools them, and samples the node every interval; around it, a delivery
// thread per destination (destinations.h), the engine scraper
// (engine_scraper.h) and whoever serves /metrics (the `publish` hook).
//
// What each received datagram does (the agent/collector protocol,
// docs/AGENT.md):
//   any event        stamped with its sender and this node (StampEvent) and
//                    appended to the spool of its destination (the
//                    sender's route for its sweep, else the default)
//   route            + the token as a descriptor: the sender's sweep now
//                    goes to that collector
//   telemetry        + gpu_metrics.csv as a descriptor: the step is watched
//                    (StepWatch) until it finishes
//   finished         the step's CSV gets its last rows and is closed
//   result           + the file as a descriptor: copied into the spool and
//                    uploaded with its sha256
// A `hang` event is the agent's own: one a sender claims is refused.
// Datagrams that are truncated, carry several descriptors or fail the
// protocol's checks are dropped and counted, and the log says who sent
// them.
//
// Invariants: the loop never blocks on a job user: descriptors it writes
// to or reads from are regular files (checked), engine reads happen on the
// scraper's thread, every wait has a deadline. Everything to deliver is in
// an fsync'd spool before it counts as received.
#pragma once

#include <functional>
#include <string>

#include "node_agent/agent_config.h"
#include "node_agent/gpu_sample.h"
#include "node_agent/node_sample.h"
#include "node_agent/prometheus_text.h"

namespace ix {

// What the loop takes from outside, so tests can stand in for the machine.
struct AgentHooks {
  std::function<NodeSample()> sample_node;     // sysfs, statvfs
  std::function<GpuSnapshot()> sample_gpus;    // NVML
  std::function<void(const AgentMetrics&)> publish;  // /metrics; may be empty
  std::function<void(const std::string&)> log;       // one line; default stderr
  std::string hostname;                        // "" = gethostname()
};

// Runs the agent until `stop_fd` (an eventfd or signalfd; -1: never)
// becomes readable. Returns the exit status: 0 after a stop, 1 when it
// could not start (the log says why).
int RunAgentDaemon(const AgentConfig& config, AgentHooks hooks, int stop_fd);

}  // namespace ix
