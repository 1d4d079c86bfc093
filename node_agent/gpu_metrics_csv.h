// gpu_metrics.csv as `nvidia-smi --query-gpu=timestamp,index,power.draw,
// temperature.gpu,clocks.current.sm,clocks.current.memory,utilization.gpu,
// utilization.memory --format=csv -l 1` writes it, byte for byte, so
// InferenceX's utils/aggregate_power.py reads the agent's file as it reads
// nvidia-smi's (csv.DictReader with skipinitialspace: the timestamp by
// "%Y/%m/%d %H:%M:%S.%f", the power as the first number of its cell, the
// GPU by the `index` column).
#pragma once

#include <string>
#include <vector>

#include "node_agent/gpu_sample.h"

namespace ix {

// The header line, newline included:
// "timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz],
// clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%]\n".
std::string GpuMetricsCsvHeader();

// One line per GPU of `samples` whose index is in `only_indices` (all of
// them when it is empty), in the order of `samples`, e.g.
// "2026/12/05 07:26:22.123, 0, 80.12 W, 34, 1980 MHz, 2619 MHz, 0 %, 0 %\n".
// Every line carries the time of the first selected sample, in local time
// (nvidia-smi's), to the millisecond; an unset reading is "[N/A]".
std::string GpuMetricsCsvRows(const std::vector<GpuSample>& samples, const std::vector<unsigned>& only_indices);

// The timestamp cell for `unix_time`: local time, "%Y/%m/%d %H:%M:%S.mmm".
std::string GpuMetricsCsvTimestamp(double unix_time);

}  // namespace ix
