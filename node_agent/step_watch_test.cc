#include "node_agent/step_watch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "core/base/file_text.h"
#include "node_agent/gpu_metrics_csv.h"
#include "tests/support/test.h"

namespace ix {
namespace {

ProcessInfo Proc(pid_t pid, pid_t ppid, uint64_t rss_pages, uint64_t ticks, char state = 'S') {
  return ProcessInfo{.pid = pid, .ppid = ppid, .state = state, .start_time = 1, .utime_ticks = ticks,
                     .stime_ticks = ticks, .rss_pages = rss_pages};
}

GpuSnapshot Gpus(double time, std::initializer_list<unsigned> indices) {
  GpuSnapshot s{.state = "ok"};
  for (unsigned i : indices) s.gpus.push_back(GpuSample{.index = i, .unix_time = time, .power_watts = 100.0 + i});
  return s;
}

size_t Lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

TEST(ParseTelemetryEvent, ReadsTheRequestAndNamesABadField) {
  Result<TelemetryRequest> r = ParseTelemetryEvent(
      R"({"id":"5.0:3","event":"telemetry","step":"5.0","time":1,"sweep":"sw","entry":2,"gpus":[4,5],)"
      R"("metrics_urls":["http://localhost:20001/metrics"]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().step, "5.0");
  EXPECT_EQ(r.value().sweep, "sw");
  EXPECT_EQ(r.value().entry, 2);
  EXPECT_EQ(r.value().gpus, (std::vector<unsigned>{4, 5}));
  ASSERT_EQ(r.value().metrics_urls.size(), 1u);
  Result<TelemetryRequest> bad = ParseTelemetryEvent(R"({"step":"5.0","gpus":[-1]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'gpus'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(ParseTelemetryEvent("[]").ok());
}

TEST(MeasureTree, SumsTheLiveTreeUnderTheRoot) {
  const std::vector<ProcessInfo> all = {Proc(1, 0, 1000, 1000), Proc(10, 1, 5, 100), Proc(11, 10, 7, 50),
                                        Proc(12, 10, 9, 50, 'Z'), Proc(13, 11, 1, 0), Proc(20, 1, 100, 100)};
  const TreeUsage u = MeasureTree(all, 10, 4096, 100);
  EXPECT_EQ(u.processes, 3u);  // 10, 11, 13; the zombie and its would-be children not
  EXPECT_EQ(u.rss_bytes, (5 + 7 + 1) * 4096u);
  EXPECT_DOUBLE_EQ(u.cpu_seconds, (200 + 100 + 0) / 100.0);
  EXPECT_EQ(MeasureTree(all, 99, 4096, 100).processes, 0u);
}

struct Fixture {
  test::TempDir dir{"ix-step-watch"};
  std::string csv = dir.path() + "/gpu_metrics.csv";
  UniqueFd Open() { return UniqueFd(::open(csv.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)); }
  std::string Text() {
    int err = 0;
    return ReadFileText(csv, &err);
  }
};

TEST(StepWatch, WritesTheHeaderOnceAndOnlyTheStepsGpus) {
  Fixture f;
  StepWatch w(60);
  TelemetryRequest r;
  r.step = "9.0";
  r.gpus = {1, 3};
  ASSERT_TRUE(w.Add(r, ProcessId{::getpid(), LiveStartTime(::getpid())}, f.Open()).ok());
  w.WriteNow("9.0", Gpus(999.5, {0, 1, 2, 3}));
  w.Sample(Gpus(1000.0, {0, 1, 2, 3}), {}, 4096, 100);
  w.Sample(Gpus(1001.0, {0, 1, 2, 3}), {}, 4096, 100);
  EXPECT_TRUE(w.Finish("9.0", Gpus(1001.5, {0, 1, 2, 3})));
  EXPECT_FALSE(w.Watching("9.0"));
  const std::string text = f.Text();
  EXPECT_EQ(text.rfind(GpuMetricsCsvHeader(), 0), 0u) << text;
  EXPECT_EQ(text.find(GpuMetricsCsvHeader(), 1), std::string::npos) << text;
  EXPECT_EQ(Lines(text), 1u + 4 * 2);  // the header, four samples of two GPUs
  EXPECT_FALSE(w.Finish("9.0", Gpus(1002, {1})));  // no longer watched
}

// A FIFO would block the agent on a job user's whim: refused.
TEST(StepWatch, RefusesADescriptorThatIsNotARegularFile) {
  Fixture f;
  const std::string fifo = f.dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  UniqueFd fd(::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  StepWatch w(60);
  TelemetryRequest r;
  r.step = "9.1";
  Status s = w.Add(r, ProcessId{::getpid(), 1}, std::move(fd));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not a regular file"), std::string::npos);
  EXPECT_FALSE(w.Watching("9.1"));
}

TEST(StepWatch, AStepWhoseSenderIsGoneIsAnOrphan) {
  Fixture f;
  StepWatch w(60);
  TelemetryRequest r;
  r.step = "9.2";
  ASSERT_TRUE(w.Add(r, ProcessId{::getpid(), LiveStartTime(::getpid())}, f.Open()).ok());
  EXPECT_TRUE(w.Orphans().empty());
  r.step = "9.3";
  ASSERT_TRUE(w.Add(r, ProcessId{::getpid(), LiveStartTime(::getpid()) + 1}, f.Open()).ok());  // pid reused
  EXPECT_EQ(w.Orphans(), (std::vector<std::string>{"9.3"}));
}

TEST(StepWatch, AHangIsReportedOnceAndShown) {
  Fixture f;
  StepWatch w(10);
  TelemetryRequest r;
  r.step = "9.4";
  r.sweep = "sw";
  ASSERT_TRUE(w.Add(r, ProcessId{::getpid(), LiveStartTime(::getpid())}, f.Open()).ok());
  EXPECT_FALSE(w.ObserveEngines("9.4", 100, 2, 500));
  EXPECT_FALSE(w.ObserveEngines("9.4", 105, 2, 500));
  EXPECT_TRUE(w.ObserveEngines("9.4", 111, 2, 500));
  EXPECT_FALSE(w.ObserveEngines("9.4", 112, 2, 500));
  const std::vector<WatchedStepView> v = w.View(112);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0].hung);
  EXPECT_EQ(v[0].sweep, "sw");
  EXPECT_EQ(v[0].requests_running, 2);
  EXPECT_FALSE(w.ObserveEngines("other", 200, 2, 1));
}

}  // namespace
}  // namespace ix
