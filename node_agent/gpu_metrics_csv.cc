#include "node_agent/gpu_metrics_csv.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace ix {
namespace {

constexpr char kNotAvailable[] = "[N/A]";

// `value` as nvidia-smi prints it with `unit` (" W", " MHz", " %", ""), or
// [N/A]. power.draw has two decimals; the others are whole numbers.
std::string Cell(const std::optional<unsigned>& value, const char* unit) {
  return value ? std::to_string(*value) + unit : kNotAvailable;
}

std::string Watts(const std::optional<double>& watts) {
  if (!watts || !std::isfinite(*watts)) return kNotAvailable;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f W", *watts);
  return buf;
}

}  // namespace

std::string GpuMetricsCsvHeader() {
  return "timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz], "
         "utilization.gpu [%], utilization.memory [%]\n";
}

std::string GpuMetricsCsvTimestamp(double unix_time) {
  // Milliseconds truncated, as a clock's reading is: 07:26:22.9996 is
  // still second 22.
  if (!std::isfinite(unix_time) || unix_time < 0 || unix_time > 1e15) return kNotAvailable;
  const double whole = std::floor(unix_time);
  const time_t seconds = static_cast<time_t>(whole);
  const int millis = std::min(999, static_cast<int>((unix_time - whole) * 1000));
  struct tm local;
  if (!localtime_r(&seconds, &local)) return kNotAvailable;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d/%02d/%02d %02d:%02d:%02d.%03d", local.tm_year + 1900, local.tm_mon + 1,
                local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec, millis);
  return buf;
}

std::string GpuMetricsCsvRows(const std::vector<GpuSample>& samples, const std::vector<unsigned>& only_indices) {
  auto selected = [&](const GpuSample& g) {
    return only_indices.empty() || std::find(only_indices.begin(), only_indices.end(), g.index) != only_indices.end();
  };
  std::string out;
  std::string timestamp;
  for (const GpuSample& g : samples) {
    if (!selected(g)) continue;
    if (timestamp.empty()) timestamp = GpuMetricsCsvTimestamp(g.unix_time);
    out += timestamp + ", " + std::to_string(g.index) + ", " + Watts(g.power_watts) + ", " +
           Cell(g.temperature_celsius, "") + ", " + Cell(g.sm_clock_mhz, " MHz") + ", " +
           Cell(g.memory_clock_mhz, " MHz") + ", " + Cell(g.gpu_utilization_percent, " %") + ", " +
           Cell(g.memory_utilization_percent, " %") + "\n";
  }
  return out;
}

}  // namespace ix
