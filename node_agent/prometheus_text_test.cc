#include "node_agent/prometheus_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "core/base/text.h"
#include "node_agent/gpu_sample_test_util.h"
#include "node_agent/promtool_check.h"

namespace ix {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Every part filled in, with label values that need escaping.
AgentMetrics RichMetrics() {
  AgentMetrics m;
  m.node.numa = {{0, 100u << 20, 40u << 20, 60u << 20}, {1, 200u << 20, 150u << 20, 170u << 20}};
  m.node.shm = ShmSpace{"/dev/shm", 1u << 30, 1u << 29, 1u << 29};
  m.gpus.state = "ok";
  m.gpus.gpus = {test::FullGpu(0), test::FullGpu(1)};
  m.gpus.gpus[1].name = "odd \"GPU\" \\ name\nwith a line";
  StepMetrics s;
  s.step = "1234.0";
  s.sweep = "sweep-1";
  s.entry = 7;
  s.processes = 12;
  s.rss_bytes = uint64_t{5} << 30;
  s.cpu_seconds_total = 1234.56;
  s.hung = true;
  s.stalled_seconds = 75.5;
  s.requests_running = 16;
  s.generation_tokens_total = 987654;
  StepMetrics batch;
  batch.step = "1234.batch";
  m.steps = {s, batch};
  m.counters = {100, 2, 95, 4, 3, 4096, true, 1700000000.5};
  return m;
}

std::set<std::string> FamilyNames(const std::string& text) {
  std::set<std::string> names;
  for (std::string_view line : Lines(text)) {
    if (line.substr(0, 7) == "# TYPE ") names.insert(std::string(Split(line, ' ')[2]));
  }
  return names;
}

TEST(PrometheusText, RichInputPassesPromtoolWithoutProblems) {
  const std::string text = RenderPrometheusText(RichMetrics());
  const test::PromtoolResult r = test::PromtoolCheckMetrics(text);
  ASSERT_TRUE(r.ran) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n--- the text:\n" << text;
  EXPECT_EQ(r.output, "") << text;
}

TEST(PrometheusText, EmptyInputPassesPromtoolWithoutProblems) {
  const std::string text = RenderPrometheusText(AgentMetrics{});
  const test::PromtoolResult r = test::PromtoolCheckMetrics(text);
  ASSERT_TRUE(r.ran) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n--- the text:\n" << text;
  EXPECT_EQ(r.output, "") << text;
}

TEST(PrometheusText, PromtoolCatchesABadText) {
  // The check can fail: a counter without _total and a gauge with it.
  const test::PromtoolResult r =
      test::PromtoolCheckMetrics("# HELP bad_count A.\n# TYPE bad_count counter\nbad_count 1\n");
  ASSERT_TRUE(r.ran) << r.output;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("_total"));
}

TEST(PrometheusText, RichInputHasTheFamiliesInBaseUnits) {
  const std::string text = RenderPrometheusText(RichMetrics());
  const std::string gpu0 = "{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\"}";
  const std::string step = "{step=\"1234.0\",sweep=\"sweep-1\",entry=\"7\"}";
  // One line of each family, its labels and its value in base units.
  const std::vector<std::string> expected = {
      "ix_node_numa_memory_total_bytes{numa_node=\"1\"} 209715200\n",
      "ix_node_numa_memory_available_bytes{numa_node=\"0\"} 62914560\n",
      "ix_node_shm_free_bytes{path=\"/dev/shm\"} 536870912\n",
      "ix_nvml_up 1\n",
      "ix_gpu_power_watts" + gpu0 + " 312.5\n",
      "# TYPE ix_gpu_energy_joules_total counter\n",
      "ix_gpu_energy_joules_total" + gpu0 + " 123456789.125\n",
      "ix_gpu_temperature_celsius" + gpu0 + " 41\n",
      "ix_gpu_sm_clock_hertz" + gpu0 + " 1980000000\n",
      "ix_gpu_memory_clock_hertz" + gpu0 + " 3201000000\n",
      "ix_gpu_utilization_ratio" + gpu0 + " 0.97\n",
      "ix_gpu_memory_utilization_ratio" + gpu0 + " 0.35\n",
      "ix_gpu_memory_used_bytes" + gpu0 + " 128849018880\n",
      "ix_gpu_xid_events_total" + gpu0 + " 1\n",
      "ix_gpu_ecc_errors_total{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\","
      "type=\"corrected\"} 3\n",
      "type=\"uncorrected\"} 0\n",
      "ix_step_processes" + step + " 12\n",
      "ix_step_resident_memory_bytes" + step + " 5368709120\n",
      "ix_step_cpu_seconds_total" + step + " 1234.56\n",
      "ix_step_hung" + step + " 1\n",
      "ix_step_stalled_seconds" + step + " 75.5\n",
      "ix_step_engine_requests_running" + step + " 16\n",
      "ix_step_engine_generation_tokens_total" + step + " 987654\n",
      "ix_step_hung{step=\"1234.batch\"} 0\n",
      "ix_agent_events_received_total 100\n",
      "ix_agent_events_dropped_total 2\n",
      "ix_agent_events_delivered_total 95\n",
      "ix_agent_delivery_retries_total 4\n",
      "ix_agent_spool_records 3\n",
      "ix_agent_spool_bytes 4096\n",
      "ix_agent_delivery_up 1\n",
      "ix_agent_last_delivery_timestamp_seconds 1700000000.5\n",
      "ix_agent_steps_watched 2\n",
  };
  for (const std::string& line : expected) EXPECT_THAT(text, HasSubstr(line));
}

TEST(PrometheusText, EveryFamilyHasHelpThenTypeThenItsSamplesTogether) {
  const std::string text = RenderPrometheusText(RichMetrics());
  const std::vector<std::string_view> lines = Lines(text);
  std::set<std::string> seen;
  std::string current;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.substr(0, 7) == "# HELP ") {
      current = std::string(Split(line, ' ')[2]);
      EXPECT_TRUE(seen.insert(current).second) << "family twice: " << current;
      ASSERT_LT(i + 1, lines.size());
      EXPECT_EQ(lines[i + 1].substr(0, 8 + current.size()), "# TYPE " + current + " ");
      ++i;
      continue;
    }
    ASSERT_FALSE(current.empty()) << line;
    // A sample of the current family: its name, then labels or a space.
    EXPECT_EQ(line.substr(0, current.size()), current) << line;
    EXPECT_TRUE(line[current.size()] == '{' || line[current.size()] == ' ') << line;
  }
  EXPECT_EQ(text.back(), '\n');
}

TEST(PrometheusText, CountersEndInTotalAndNothingElseDoes) {
  const std::string text = RenderPrometheusText(RichMetrics());
  for (std::string_view line : Lines(text)) {
    if (line.substr(0, 7) != "# TYPE ") continue;
    const std::vector<std::string_view> parts = Split(line, ' ');
    const bool total = parts[2].size() > 6 && parts[2].substr(parts[2].size() - 6) == "_total";
    EXPECT_EQ(total, parts[3] == "counter") << line;
  }
}

TEST(PrometheusText, UnsetReadingsHaveNoSampleAndEmptyFamiliesNoLines) {
  AgentMetrics m = RichMetrics();
  GpuSample& g = m.gpus.gpus[0];
  g.power_watts.reset();
  g.energy_joules.reset();
  g.ecc_corrected_errors.reset();
  for (GpuSample& gpu : m.gpus.gpus) gpu.temperature_celsius.reset();
  m.steps[0].requests_running.reset();
  m.counters.delivery_up.reset();
  m.counters.last_delivery_unix.reset();
  const std::string text = RenderPrometheusText(m);
  EXPECT_THAT(text, Not(HasSubstr("ix_gpu_power_watts{gpu=\"0\"")));
  EXPECT_THAT(text, HasSubstr("ix_gpu_power_watts{gpu=\"1\""));
  EXPECT_THAT(text, Not(HasSubstr("ix_gpu_energy_joules_total{gpu=\"0\"")));
  EXPECT_THAT(text, Not(HasSubstr("GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\",type=\"corrected\"")));
  EXPECT_THAT(text, HasSubstr("GPU-00000001-aaaa-bbbb-cccc-dddddddddddd\",type=\"corrected\"} 3"));
  EXPECT_THAT(text, HasSubstr("type=\"uncorrected\"} 0"));
  EXPECT_THAT(text, Not(HasSubstr("ix_gpu_temperature_celsius")));  // no GPU has one: no HELP either
  EXPECT_THAT(text, Not(HasSubstr("ix_step_engine_requests_running{step=\"1234.0\"")));
  EXPECT_THAT(text, Not(HasSubstr("ix_agent_delivery_up")));
  EXPECT_THAT(text, Not(HasSubstr("ix_agent_last_delivery_timestamp_seconds")));
  const test::PromtoolResult r = test::PromtoolCheckMetrics(text);
  ASSERT_TRUE(r.ran) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(PrometheusText, EmptyInputHasOnlyTheAlwaysKnownFamilies) {
  const std::string text = RenderPrometheusText(AgentMetrics{});
  EXPECT_EQ(FamilyNames(text),
            (std::set<std::string>{"ix_nvml_up", "ix_agent_events_received_total", "ix_agent_events_dropped_total",
                                   "ix_agent_events_delivered_total", "ix_agent_delivery_retries_total",
                                   "ix_agent_spool_records", "ix_agent_spool_bytes", "ix_agent_steps_watched"}));
  EXPECT_THAT(text, HasSubstr("ix_nvml_up 0\n"));
  EXPECT_THAT(text, HasSubstr("ix_agent_steps_watched 0\n"));
}

TEST(PrometheusText, NvmlFailedIsDownWithTheGpusItStillHas) {
  AgentMetrics m;
  m.gpus.state = "failed";
  m.gpus.detail = "nvmlDeviceGetPowerUsage: Unknown Error";
  const std::string text = RenderPrometheusText(m);
  EXPECT_THAT(text, HasSubstr("ix_nvml_up 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("ix_gpu_")));
}

TEST(PrometheusText, LabelValuesAreEscaped) {
  const std::string text = RenderPrometheusText(RichMetrics());
  EXPECT_THAT(text, HasSubstr("name=\"odd \\\"GPU\\\" \\\\ name\\nwith a line\"}"));
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("tab\there"), "tab\there");  // allowed as it is
  EXPECT_EQ(EscapeLabelValue(""), "");
}

TEST(PrometheusText, InvalidUtf8InLabelValuesBecomesReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(EscapeLabelValue("caf\xC3\xA9"), "caf\xC3\xA9");                    // valid 2 bytes
  EXPECT_EQ(EscapeLabelValue("\xE2\x82\xAC \xF0\x9F\x98\x80"), "\xE2\x82\xAC \xF0\x9F\x98\x80");  // 3 and 4
  EXPECT_EQ(EscapeLabelValue("a\xFF" "b"), "a" + fffd + "b");
  EXPECT_EQ(EscapeLabelValue("\xC0\xAF"), fffd + fffd);                 // overlong '/'
  EXPECT_EQ(EscapeLabelValue("\xED\xA0\x80"), fffd + fffd + fffd);      // a surrogate
  EXPECT_EQ(EscapeLabelValue("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
  EXPECT_EQ(EscapeLabelValue("\xE2\x82"), fffd + fffd);                 // cut short
  EXPECT_EQ(EscapeLabelValue(std::string("a\0b", 3)), std::string("a\0b", 3));

  AgentMetrics m;
  StepMetrics s;
  s.step = "12\xFF\xFE.0\"";
  m.steps = {s};
  const test::PromtoolResult r = test::PromtoolCheckMetrics(RenderPrometheusText(m));
  ASSERT_TRUE(r.ran) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(PrometheusText, SampleValues) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(1.5), "1.5");
  EXPECT_EQ(FormatSampleValue(-2), "-2");
  EXPECT_EQ(FormatSampleValue(0.1), "0.1");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()), "-Inf");
  for (double v : {1e300, 5e-324, 1234567.891, 1.0 / 3}) {
    EXPECT_EQ(std::strtod(FormatSampleValue(v).c_str(), nullptr), v) << FormatSampleValue(v);  // round trip
  }
}

}  // namespace
}  // namespace ix
