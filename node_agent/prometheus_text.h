// The agent's state as Prometheus text exposition format 0.0.4, what
// GET /metrics serves (metrics_server.h). Names and units follow
// Prometheus's conventions: base units (bytes, seconds, watts, joules,
// celsius, hertz, ratios 0..1), `_total` on counters and only on counters,
// HELP and TYPE before each family's samples.
//
// The families (labels in braces):
//   ix_node_numa_memory_{total,free,available}_bytes{numa_node}
//   ix_node_shm_{size,free,used}_bytes{path}
//   ix_nvml_up                                  1 when NVML sampled, else 0
//   ix_gpu_info{gpu,uuid,name}                  1 per GPU
//   ix_gpu_power_watts, ix_gpu_energy_joules_total, ix_gpu_temperature_celsius,
//   ix_gpu_{sm,memory}_clock_hertz, ix_gpu_{utilization,memory_utilization}_ratio,
//   ix_gpu_memory_{used,total}_bytes, ix_gpu_xid_events_total   {gpu,uuid}
//   ix_gpu_ecc_errors_total{gpu,uuid,type="corrected"|"uncorrected"}
//   ix_step_processes, ix_step_resident_memory_bytes, ix_step_cpu_seconds_total,
//   ix_step_hung, ix_step_engine_requests_running,
//   ix_step_engine_generation_tokens_total, ix_step_stalled_seconds
//                                               {step[,sweep,entry]}
//   ix_agent_events_{received,dropped,delivered}_total, ix_agent_delivery_retries_total,
//   ix_agent_spool_records, ix_agent_spool_bytes, ix_agent_delivery_up,
//   ix_agent_last_delivery_timestamp_seconds, ix_agent_steps_watched
//
// A reading that is unset has no sample line (never a 0 standing in for
// "unknown"), and a family with no sample is left out whole. Label values
// are escaped (\\, \", \n) and made valid UTF-8 (a bad byte becomes
// U+FFFD), so any input renders to text Prometheus parses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node_agent/gpu_sample.h"
#include "node_agent/node_sample.h"

namespace ix {

// What GET /metrics answers with.
inline constexpr char kPrometheusTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// One watched step as the metrics show it. Invariant: `step` is "JOB.STEP"
// (non-empty); `entry` is -1 when the step is no sweep entry.
struct StepMetrics {
  std::string step;
  std::string sweep;  // "" when not known
  int64_t entry = -1;
  size_t processes = 0;            // in the step's process tree
  uint64_t rss_bytes = 0;          // summed over the tree
  double cpu_seconds_total = 0;    // user + system, summed over the live tree
  bool hung = false;               // HangWatch::hung()
  double stalled_seconds = 0;      // HangWatch::stalled_for(now)
  std::optional<double> requests_running;          // summed over the step's engines
  std::optional<double> generation_tokens_total;   // summed over the step's engines
};

// The agent's own counters. Invariant: the *_total fields only grow over
// the agent's life (they are Prometheus counters).
struct AgentCounters {
  uint64_t events_received_total = 0;   // datagrams taken as events
  uint64_t events_dropped_total = 0;    // bad or truncated datagrams
  uint64_t events_delivered_total = 0;  // acknowledged by a collector
  uint64_t delivery_retries_total = 0;
  uint64_t spool_records = 0;           // queue depth, not yet delivered
  uint64_t spool_bytes = 0;
  std::optional<bool> delivery_up;             // unset when no collector is configured
  std::optional<double> last_delivery_unix;    // unset before the first delivery
};

// Everything /metrics shows, as the poll loop publishes it each interval.
struct AgentMetrics {
  NodeSample node;
  GpuSnapshot gpus;
  std::vector<StepMetrics> steps;
  AgentCounters counters;
};

// The exposition text of `metrics`: families in a fixed order, each with
// its HELP and TYPE lines, every line ending in "\n". Pure.
std::string RenderPrometheusText(const AgentMetrics& metrics);

// A label value escaped for the text format (\\, \", \n), invalid UTF-8
// replaced by U+FFFD. Pure.
std::string EscapeLabelValue(std::string_view value);

// A sample value as the text format writes it: the shortest decimal that
// reads back as `v`, "NaN", "+Inf", "-Inf". Pure.
std::string FormatSampleValue(double v);

}  // namespace ix
