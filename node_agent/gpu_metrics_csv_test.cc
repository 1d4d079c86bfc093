#include "node_agent/gpu_metrics_csv.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include <optional>
#include <string>
#include <vector>

#include "core/base/file_text.h"
#include "tests/support/test.h"

extern char** environ;

namespace ix {
namespace {

// TZ set for the scope (a POSIX TZ string needs no tzdata), then put back.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    ::setenv("TZ", tz, 1);
    ::tzset();
  }
  ~ScopedTimeZone() {
    if (old_) {
      ::setenv("TZ", old_->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }
  ScopedTimeZone(const ScopedTimeZone&) = delete;
  ScopedTimeZone& operator=(const ScopedTimeZone&) = delete;

 private:
  std::optional<std::string> old_;
};

// 2026-12-05 07:26:22 UTC plus `fraction`.
double December5th(double fraction) {
  struct tm t = {.tm_sec = 22, .tm_min = 26, .tm_hour = 7, .tm_mday = 5, .tm_mon = 11, .tm_year = 2026 - 1900};
  return static_cast<double>(timegm(&t)) + fraction;
}

GpuSample Busy(unsigned index, double unix_time) {
  return GpuSample{.index = index, .unix_time = unix_time, .power_watts = 80.123, .temperature_celsius = 34,
                   .sm_clock_mhz = 1980, .memory_clock_mhz = 2619,
                   .gpu_utilization_percent = 0, .memory_utilization_percent = 0};
}

TEST(GpuMetricsCsv, TheHeaderIsNvidiaSmis) {
  EXPECT_EQ(GpuMetricsCsvHeader(),
            "timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz], "
            "utilization.gpu [%], utilization.memory [%]\n");
}

TEST(GpuMetricsCsv, ARowAsNvidiaSmiPrintsIt) {
  const ScopedTimeZone utc("UTC0");
  EXPECT_EQ(GpuMetricsCsvRows({Busy(0, December5th(0.1234))}, {}),
            "2026/12/05 07:26:22.123, 0, 80.12 W, 34, 1980 MHz, 2619 MHz, 0 %, 0 %\n");
  GpuSample full = Busy(7, December5th(0.5));
  full.power_watts = 699.996;  // rounds as printf does
  full.gpu_utilization_percent = 100;
  full.memory_utilization_percent = 63;
  EXPECT_EQ(GpuMetricsCsvRows({full}, {}), "2026/12/05 07:26:22.500, 7, 700.00 W, 34, 1980 MHz, 2619 MHz, 100 %, 63 %\n");
}

TEST(GpuMetricsCsv, TheTimestampIsLocalTimeTruncatedToTheMillisecond) {
  const ScopedTimeZone india("IST-5:30");  // UTC+5:30
  EXPECT_EQ(GpuMetricsCsvTimestamp(December5th(0.9996)), "2026/12/05 12:56:22.999");
  EXPECT_EQ(GpuMetricsCsvTimestamp(December5th(0)), "2026/12/05 12:56:22.000");
  EXPECT_EQ(GpuMetricsCsvTimestamp(-1), "[N/A]");
}

TEST(GpuMetricsCsv, AnUnsetReadingIsNotAvailable) {
  const ScopedTimeZone utc("UTC0");
  GpuSample g;
  g.index = 3;
  g.unix_time = December5th(0);
  EXPECT_EQ(GpuMetricsCsvRows({g}, {}), "2026/12/05 07:26:22.000, 3, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]\n");
}

TEST(GpuMetricsCsv, OnlyTheSelectedGpusInIndexOrderWithOneTimestamp) {
  const ScopedTimeZone utc("UTC0");
  const std::vector<GpuSample> all = {Busy(0, December5th(0.1)), Busy(1, December5th(0.2)),
                                      Busy(2, December5th(0.3)), Busy(3, December5th(0.4))};
  EXPECT_EQ(GpuMetricsCsvRows(all, {3, 1, 9}),
            "2026/12/05 07:26:22.200, 1, 80.12 W, 34, 1980 MHz, 2619 MHz, 0 %, 0 %\n"
            "2026/12/05 07:26:22.200, 3, 80.12 W, 34, 1980 MHz, 2619 MHz, 0 %, 0 %\n");
  EXPECT_EQ(GpuMetricsCsvRows(all, {}).size(), 4 * GpuMetricsCsvRows({all[0]}, {}).size());
  EXPECT_EQ(GpuMetricsCsvRows(all, {9}), "");
  EXPECT_EQ(GpuMetricsCsvRows({}, {}), "");
}

// How InferenceX's utils/aggregate_power.py reads nvidia-smi's file:
// csv.DictReader with skipinitialspace, the timestamp by strptime, the
// power as the first number of its cell, the GPU by `index`. Prints
// "index power epoch" per row.
constexpr char kReader[] = R"PY(
import csv, re, sys, datetime
with open(sys.argv[1]) as f:
    for row in csv.DictReader(f, skipinitialspace=True):
        t = datetime.datetime.strptime(row["timestamp"], "%Y/%m/%d %H:%M:%S.%f")
        m = re.search(r"[-+]?\d*\.?\d+", row["power.draw [W]"])
        power = float(m.group()) if m else None
        print(int(row["index"]), power, t.replace(tzinfo=datetime.timezone.utc).timestamp())
)PY";

// Runs python3 on kReader with `csv` in a file; its stdout, or nullopt.
std::optional<std::string> ReadAsInferenceX(const std::string& csv) {
  test::TempDir dir("ix-gpu-csv");
  const std::string in = dir.path() + "/gpu_metrics.csv", out = dir.path() + "/out";
  if (!WriteFileAtomic(in, csv).ok()) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = {"python3", "-c", kReader, in};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "python3", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return std::nullopt;
  }
  int err = 0;
  std::string text = ReadFileText(out, &err);
  return err ? std::nullopt : std::optional<std::string>(text);
}

TEST(GpuMetricsCsv, InferenceXsReaderGetsTheIndexPowerAndTime) {
  const ScopedTimeZone utc("UTC0");
  GpuSample unset;
  unset.index = 5;
  unset.unix_time = December5th(0.25);
  const std::string csv =
      GpuMetricsCsvHeader() + GpuMetricsCsvRows({Busy(4, December5th(0.25)), unset}, {});
  const std::optional<std::string> read = ReadAsInferenceX(csv);
  ASSERT_TRUE(read.has_value()) << "python3 failed on:\n" << csv;
  const std::string epoch = std::to_string(static_cast<long long>(December5th(0))) + ".25";
  EXPECT_EQ(*read, "4 80.12 " + epoch + "\n5 None " + epoch + "\n");
}

}  // namespace
}  // namespace ix
