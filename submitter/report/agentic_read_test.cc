#include "submitter/report/agentic_read.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/test.h"

namespace ix {
namespace {

// The builders below make the files an agentic entry leaves, as small as
// the readers allow, so each test says only what it changes.

// One profile_export.jsonl record.
std::string Record(int64_t turn, double ttft_ms, const std::string& phase = "\"profiling\"",
                   const std::string& error = "null") {
  return "{\"metadata\":{\"turn_index\":" + std::to_string(turn) + ",\"benchmark_phase\":" + phase +
         "},\"metrics\":{\"time_to_first_token\":{\"value\":" + std::to_string(ttft_ms) +
         ",\"unit\":\"ms\"}},\"error\":" + error + "}\n";
}

// A gauge series of server_metrics_export.json: a slice per value, 1 s
// each from t = 0 (ns), with `avg` the value.
std::string Series(const std::vector<double>& avgs) {
  std::string slices;
  for (size_t i = 0; i < avgs.size(); ++i) {
    const std::string start = std::to_string(i * 1000000000ull), end = std::to_string((i + 1) * 1000000000ull);
    slices += std::string(i ? "," : "") + "{\"start_ns\":" + start + ",\"end_ns\":" + end +
              ",\"avg\":" + std::to_string(avgs[i]) + "}";
  }
  return "{\"labels\":{\"engine\":\"0\"},\"timeslices\":[" + slices + "]}";
}

std::string ServerMetrics(const std::vector<std::string>& series,
                          const std::string& name = "vllm:kv_cache_usage_perc") {
  std::string joined;
  for (const std::string& s : series) joined += (joined.empty() ? "" : ",") + s;
  return "{\"metrics\":{\"" + name + "\":{\"type\":\"gauge\",\"series\":[" + joined + "]}}}";
}

// InferenceX's agentic aggregate with the fields the report reads;
// `extra` is added at the top level (the ix key, power).
std::string Aggregate(const std::string& extra = "") {
  return R"({"conc": 32, "scenario_type": "agentic-coding", "tp": 4, "ep": 4, "dp_attention": "true",
    "kv_offloading": "cpu", "kv_offload_backend": {"name": "native", "version": "1"},
    "num_requests_total": 130, "num_requests_successful": 128,
    "request_metrics": {"latency": {"ttft": {"mean": 0.5, "p50": 0.4, "p95": 1.5},
        "tpot": {"p50": 0.02}, "e2el": {"p50": 3.5}, "intvty": {"mean": 49, "p50": 50}},
      "throughput": {"per_gpu": {"total_tput_tps": 1200.5, "output_tput_tps": 80.25}}},
    "server_metrics": {"cache": {"gpu_cache_hit_rate": 0.8, "cpu_cache_hit_rate": 0.1,
        "overall_cache_hit_rate": 0.9}, "kv_cache": {"gpu_usage_pct": 0.75}})" +
         extra + "}";
}

constexpr const char* kRanks =
    R"(, "ix": {"arm": "dep4", "dp_ranks": [{"rank": 1, "requests": 30, "prefix_cache_hit_rate": 0.7, "sessions": null},
      {"rank": 0, "requests": 31, "prefix_cache_hit_rate": 0.8, "sessions": 5}, {"rank": "x"}, {"rank": 99999}]})";

// An entry's numbers that an agentic aggregate fills, as one line of
// "name=value" words, each value in its shortest round-trip form ("-" for
// none, "nan" for NaN), so that a test compares them all at once, exactly.
std::string Numbers(const ReportEntry& e) {
  const AgenticResult& a = e.agentic;
  const std::pair<const char*, std::optional<double>> numbers[] = {
      {"tput_per_gpu", e.tput_per_gpu}, {"output_tput_per_gpu", e.output_tput_per_gpu},
      {"median_intvty", e.median_intvty}, {"mean_ttft_s", e.mean_ttft_s}, {"p99_ttft_s", e.p99_ttft_s},
      {"median_tpot_s", e.median_tpot_s}, {"joules_per_output_token", e.joules_per_output_token},
      {"avg_power_w", e.avg_power_w}, {"p50_ttft_s", a.p50_ttft_s}, {"gpu_cache_hit_rate", a.gpu_cache_hit_rate},
      {"cpu_cache_hit_rate", a.cpu_cache_hit_rate}, {"overall_cache_hit_rate", a.overall_cache_hit_rate},
      {"gpu_kv_usage_peak", a.gpu_kv_usage_peak},
      {"requests_successful", static_cast<double>(a.requests_successful)}};
  std::string out;
  for (const auto& [name, value] : numbers) {
    std::string text = "-";
    if (value) {
      char buf[32];
      text.assign(buf, std::to_chars(buf, buf + sizeof buf, *value).ptr);
    }
    out += (out.empty() ? "" : " ") + std::string(name) + "=" + text;
  }
  return out;
}

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

TEST(EnvFileValue, ReadsShellQuotedValues) {
  const std::string env = "A='x'\nRESULT_FILENAME='dsv4_tp4'\nQ='it'\\''s'\nBARE=plain\nRESULT_FILENAME_X='no'\n";
  EXPECT_EQ(EnvFileValue(env, "RESULT_FILENAME"), "dsv4_tp4");
  EXPECT_EQ(EnvFileValue(env, "Q"), "it's");
  EXPECT_EQ(EnvFileValue(env, "BARE"), "plain");
  EXPECT_EQ(EnvFileValue(env, "MISSING"), "");
  EXPECT_EQ(EnvFileValue("A='1'\nA='2'", "A"), "2");  // the last wins, as in the shell
  EXPECT_EQ(EnvFileValue("A='unterminated", "A"), "unterminated");
}

TEST(AgenticAggregate, FillsTheEntrysNumbers) {
  ReportEntry e;
  ASSERT_TRUE(ReadAgenticAggregate(Aggregate(R"(, "power_valid": 1, "joules_per_output_token": 2.5,
    "avg_power_w": 700.0)" + std::string(kRanks)), e));
  EXPECT_TRUE(IsAgentic(e));
  EXPECT_TRUE(e.has_result);
  EXPECT_EQ(Numbers(e),
            "tput_per_gpu=1200.5 output_tput_per_gpu=80.25 median_intvty=50 mean_ttft_s=0.5 p99_ttft_s=nan "
            "median_tpot_s=0.02 joules_per_output_token=2.5 avg_power_w=700 p50_ttft_s=0.4 gpu_cache_hit_rate=0.8 "
            "cpu_cache_hit_rate=0.1 overall_cache_hit_rate=0.9 gpu_kv_usage_peak=0.75 requests_successful=128");
  const AgenticResult& a = e.agentic;
  EXPECT_EQ(a.kv_offloading, "cpu");
  EXPECT_EQ(a.kv_offload_backend, "native");
  ASSERT_EQ(a.dp_ranks.size(), 2u);  // "x" and 99999 are not ranks
  EXPECT_EQ(a.dp_ranks[0].rank, 0);
  EXPECT_EQ(a.dp_ranks[0].sessions, 5);
  EXPECT_FALSE(a.dp_ranks[1].sessions.has_value());
  EXPECT_EQ(a.dp_ranks[1].prefix_cache_hit_rate, 0.7);
}

TEST(AgenticAggregate, PartialOrNonFiniteFieldsReadAsAbsent) {
  ReportEntry e;
  ASSERT_TRUE(ReadAgenticAggregate(R"({"request_metrics": {"throughput": {}, "latency": {"intvty": {"p50": NaN}}},
    "server_metrics": {"cache": {"gpu_cache_hit_rate": null}}, "power_valid": 0, "joules_per_output_token": 3})",
                                   e));
  EXPECT_TRUE(IsAgentic(e));
  EXPECT_FALSE(e.has_result);
  EXPECT_FALSE(e.agentic.gpu_cache_hit_rate.has_value());
  EXPECT_FALSE(e.joules_per_output_token.has_value());
  EXPECT_TRUE(e.agentic.dp_ranks.empty());
  ReportEntry untouched;
  EXPECT_FALSE(ReadAgenticAggregate("[1, 2]", untouched));
  EXPECT_FALSE(ReadAgenticAggregate("{\"truncated\": ", untouched));
  EXPECT_FALSE(IsAgentic(untouched));
}

TEST(TtftByTurn, KeepsSuccessfulProfilingRecordsPerTurn) {
  std::istringstream in(Record(0, 100) + Record(0, 300) + Record(0, 200) + Record(1, 500) +
                        Record(0, 9000, "\"warmup\"") + Record(0, 9000, "null") +
                        Record(1, 9000, "\"profiling\"", R"({"type": "HTTPStatusError"})") +
                        Record(1, 700, "\"profiling\"", "\"\"") + Record(2, 0) + Record(kMaxTurnIndex, 10) +
                        "not json\n\n" R"({"metadata": {"turn_index": 2}, "metrics": {"time_to_first_token": 40}})" "\n");
  bool truncated = true;
  const std::vector<TurnTtft> t = ReadTtftByTurn(in, 100, &truncated);
  EXPECT_FALSE(truncated);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].turn, 0);
  EXPECT_EQ(t[0].requests, 4);  // 100, 300, 200 and the one without a phase
  EXPECT_DOUBLE_EQ(t[0].p50_s, 0.25);
  EXPECT_DOUBLE_EQ(t[0].mean_s, 2.4);
  EXPECT_EQ(t[1].requests, 2);  // the errored one is out, an empty error string is no error
  EXPECT_DOUBLE_EQ(t[1].p50_s, 0.6);
  EXPECT_EQ(t[2].requests, 1);  // a raw metric value; TTFT 0 is not kept
  EXPECT_DOUBLE_EQ(t[2].mean_s, 0.04);
}

TEST(TtftByTurn, StopsAtMaxLinesAndSkipsOverlongLines) {
  const std::string pad = "{\"pad\": \"" + std::string(kMaxProfileLineBytes, 'x') + "\"}\n";
  const std::string text = Record(0, 100) + pad + Record(1, 100);
  std::istringstream in(text + Record(2, 100) + Record(3, 100));
  bool truncated = false;
  const std::vector<TurnTtft> t = ReadTtftByTurn(in, 3, &truncated);
  EXPECT_TRUE(truncated);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].turn, 1);
  std::istringstream exact(Record(0, 1) + Record(1, 1));
  ReadTtftByTurn(exact, 2, &truncated);
  EXPECT_FALSE(truncated);  // no line left unread
}

TEST(KvUsage, TakesTheBusiestEngineOfEachSlice) {
  int64_t engines = 0;
  const auto p = ReadKvUsage(ServerMetrics({Series({0.1, 0.5, 0.2}), Series({0.3, 0.4, 60})}), 10, &engines);
  EXPECT_EQ(engines, 2);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0].pct, 30);
  EXPECT_DOUBLE_EQ(p[1].pct, 50);
  EXPECT_DOUBLE_EQ(p[2].pct, 60);  // a percentage as such (InferenceX's normalize_fraction)
  EXPECT_DOUBLE_EQ(p[2].t_s, 2);
  EXPECT_DOUBLE_EQ(p[2].end_s, 3);
}

TEST(KvUsage, MergesLongRunsKeepingPeaks) {
  std::vector<double> avgs(100, 0.2);
  avgs[57] = 0.9;
  int64_t engines = 0;
  const auto p = ReadKvUsage(ServerMetrics({Series(avgs)}, "vllm:gpu_cache_usage_perc"), 10, &engines);
  ASSERT_EQ(p.size(), 10u);
  EXPECT_DOUBLE_EQ(p[5].pct, 90);
  EXPECT_DOUBLE_EQ(p[5].t_s, 50);
  EXPECT_DOUBLE_EQ(p[5].end_s, 60);
  EXPECT_DOUBLE_EQ(p[4].pct, 20);
}

TEST(KvUsage, NothingFromMissingOrMalformedMetrics) {
  int64_t engines = 7;
  EXPECT_TRUE(ReadKvUsage("", 10, &engines).empty());
  EXPECT_EQ(engines, 0);
  EXPECT_TRUE(ReadKvUsage("{\"metrics\": {}}", 10, &engines).empty());
  const std::string bad_start = R"({"timeslices": [{"start_ns": "x", "avg": 1}]})";
  EXPECT_TRUE(ReadKvUsage(ServerMetrics({bad_start}), 10, &engines).empty());
  EXPECT_TRUE(ReadKvUsage(ServerMetrics({Series({0.5})}).substr(0, 40), 10, &engines).empty());
}

// A result directory as an agentic entry leaves it.
class AgenticEntryDir : public ::testing::Test {
 protected:
  test::TempDir dir{"ix-agentic-read"};
  std::string Path(const std::string& name) const { return dir.path() + "/" + name; }
  void WriteAll(const std::string& artifacts = "aiperf_artifacts") {
    Write(Path("benchmark.env"), "SCENARIO_TYPE='agentic-coding'\nRESULT_FILENAME='dsv4_conc32'\n");
    Write(Path("dsv4_conc32.json"), Aggregate(kRanks));
    Write(Path(artifacts + "/profile_export.jsonl"), Record(0, 100) + Record(1, 200));
    Write(Path(artifacts + "/server_metrics_export.json"), ServerMetrics({Series({0.1, 0.2})}));
  }
};

TEST_F(AgenticEntryDir, ReadsEveryFile) {
  WriteAll();
  ReportEntry e;
  ReadAgenticEntry(dir.path(), e);
  EXPECT_TRUE(IsAgentic(e));
  EXPECT_TRUE(e.has_result);
  EXPECT_EQ(e.agentic.ttft_by_turn.size(), 2u);
  EXPECT_EQ(e.agentic.kv_usage.size(), 2u);
  EXPECT_EQ(e.agentic.kv_engines, 1);
  EXPECT_EQ(e.agentic.dp_ranks.size(), 2u);
  EXPECT_EQ(AgenticAggregateName(dir.path()), "dsv4_conc32.json");
}

// InferenceX's own output for a DEP entry with CPU offload
// (tests/data/agentic/vllm_dep: the aggregate and AIPerf's artifacts).
TEST_F(AgenticEntryDir, ReadsInferenceXsOutput) {
  const std::string data = std::string(IX_SOURCE_DIR) + "/tests/data/agentic/vllm_dep";
  if (!std::filesystem::exists(data + "/expected/agentic_result.json")) GTEST_SKIP() << data << " is not there";
  Write(Path("benchmark.env"), "SCENARIO_TYPE='agentic-coding'\nRESULT_FILENAME='agentic_result'\n");
  std::filesystem::copy(data + "/expected/agentic_result.json", Path("agentic_result.json"));
  std::filesystem::copy(data + "/aiperf_artifacts", Path("aiperf_artifacts"));
  ReportEntry e;
  ReadAgenticEntry(dir.path(), e);
  EXPECT_TRUE(e.has_result);
  EXPECT_GT(e.tput_per_gpu, 0);
  EXPECT_GT(e.median_intvty, 0);
  EXPECT_EQ(e.agentic.kv_offloading, "cpu");
  EXPECT_TRUE(e.agentic.gpu_cache_hit_rate.has_value());
  EXPECT_TRUE(e.agentic.cpu_cache_hit_rate.has_value());
  ASSERT_EQ(e.agentic.ttft_by_turn.size(), 4u);  // turns 0-3, warmup and errors left out
  for (const TurnTtft& t : e.agentic.ttft_by_turn) EXPECT_EQ(t.requests, 6) << t.turn;
}

TEST_F(AgenticEntryDir, FindsArtifactsOneFolderDown) {
  WriteAll("aiperf_artifacts/run-1");
  ReportEntry e;
  ReadAgenticEntry(dir.path(), e);
  EXPECT_EQ(e.agentic.ttft_by_turn.size(), 2u);
  EXPECT_EQ(e.agentic.kv_usage.size(), 2u);
}

TEST_F(AgenticEntryDir, AFailedEntrysPartialFilesGiveWhatTheyHave) {
  Write(Path("benchmark.env"), "SCENARIO_TYPE='agentic-coding'\nRESULT_FILENAME='dsv4_conc32'\n");
  ReportEntry e;
  ReadAgenticEntry(dir.path(), e);  // no aggregate
  EXPECT_TRUE(IsAgentic(e));
  EXPECT_FALSE(e.has_result);
  Write(Path("dsv4_conc32.json"), Aggregate());
  Write(Path("aiperf_artifacts/profile_export.jsonl"), Record(0, 100) + "{\"metadata\": {\"tur");
  ReportEntry partial;
  ReadAgenticEntry(dir.path(), partial);  // a cut-off jsonl, no server metrics
  EXPECT_TRUE(partial.has_result);
  EXPECT_EQ(partial.agentic.ttft_by_turn.size(), 1u);
  EXPECT_TRUE(partial.agentic.kv_usage.empty());
}

TEST_F(AgenticEntryDir, LeavesFixedSeqLenAndUnsafeNamesAlone) {
  Write(Path("benchmark.env"), "SCENARIO_TYPE='fixed-seq-len'\nRESULT_FILENAME='x'\n");
  Write(Path("x.json"), Aggregate());
  ReportEntry fixed;
  ReadAgenticEntry(dir.path(), fixed);
  EXPECT_FALSE(IsAgentic(fixed));
  EXPECT_FALSE(fixed.has_result);
  Write(Path("benchmark.env"), "SCENARIO_TYPE='agentic-coding'\nRESULT_FILENAME='../x'\n");
  ReportEntry unsafe;
  ReadAgenticEntry(dir.path(), unsafe);
  EXPECT_TRUE(IsAgentic(unsafe));
  EXPECT_FALSE(unsafe.has_result);
  EXPECT_EQ(AgenticAggregateName(dir.path()), "");
  ReportEntry never_started;
  never_started.scenario = kScenarioAgentic;
  ReadAgenticEntry("", never_started);
  EXPECT_FALSE(never_started.has_result);
}

}  // namespace
}  // namespace ix
