#include "core/process/engine_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "vllm_metrics.h"  // tests/fakes: the fake engine's /metrics text

namespace ix {
namespace {

// A vLLM v1 /metrics body (abridged), two engine cores of a data-parallel
// server.
constexpr char kVllmText[] = R"(# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 13211.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="deepseek-ai/DeepSeek-R1"} 7.0
vllm:num_requests_running{engine="1",model_name="deepseek-ai/DeepSeek-R1"} 5.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="deepseek-ai/DeepSeek-R1"} 2.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="deepseek-ai/DeepSeek-R1"} 123456.0
vllm:generation_tokens_total{engine="1",model_name="deepseek-ai/DeepSeek-R1"} 1.5e+05
# HELP vllm:generation_tokens_created Number of generation tokens processed.
# TYPE vllm:generation_tokens_created gauge
vllm:generation_tokens_created{engine="0",model_name="deepseek-ai/DeepSeek-R1"} 1.7e+09
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="deepseek-ai/DeepSeek-R1"} 42.0
)";

TEST(EngineMetrics, SumsOverLabelSets) {
  const EngineReading r = ParseEngineMetrics(kVllmText);
  ASSERT_TRUE(r.requests_running.has_value());
  EXPECT_DOUBLE_EQ(*r.requests_running, 12);
  ASSERT_TRUE(r.generation_tokens.has_value());
  EXPECT_DOUBLE_EQ(*r.generation_tokens, 273456);
  EXPECT_EQ(r.error, "");
}

TEST(EngineMetrics, MissingFamiliesAreUnsetNotZero) {
  EXPECT_FALSE(ParseEngineMetrics("").requests_running.has_value());
  EXPECT_FALSE(ParseEngineMetrics("").generation_tokens.has_value());
  const EngineReading only_running = ParseEngineMetrics("vllm:num_requests_running 0\n");
  ASSERT_TRUE(only_running.requests_running.has_value());
  EXPECT_EQ(*only_running.requests_running, 0);
  EXPECT_FALSE(only_running.generation_tokens.has_value());
  // HELP and TYPE alone are no sample.
  EXPECT_FALSE(ParseEngineMetrics("# HELP vllm:generation_tokens_total x\n"
                                  "# TYPE vllm:generation_tokens_total counter\n")
                   .generation_tokens.has_value());
}

TEST(EngineMetrics, OnlyTheExactNameCounts) {
  const std::string text =
      "vllm:num_requests_running_x 5\nvllm:num_requests_runnin 5\nxvllm:num_requests_running 5\n"
      "vllm:num_requests_waiting 9\nvllm:num_requests_running 1\n";
  EXPECT_EQ(SumPrometheusSamples(text, kVllmRequestsRunning), 1);
}

TEST(EngineMetrics, LabelsWithEscapedQuotesAndOddSpacing) {
  const std::string text =
      "vllm:num_requests_running{model_name=\"a \\\"quoted\\\" } name\",engine=\"0\"} 3\n"
      "vllm:num_requests_running{model_name=\"back\\\\slash\\\\\"} 4\n"
      "vllm:num_requests_running{model_name=\"line\\nbreak\",} 5\n"       // a trailing comma
      "vllm:num_requests_running { engine = \"1\" , x=\"}\" }\t6\n"        // blanks around the parts
      "  vllm:num_requests_running{} 7 1700000000000\r\n"                // indented, a timestamp, CR LF
      "vllm:num_requests_running{engine=\"#\"} 8\n";
  EXPECT_EQ(SumPrometheusSamples(text, kVllmRequestsRunning), 3 + 4 + 5 + 6 + 7 + 8);
}

TEST(EngineMetrics, NanAndInfinitiesAreNoEvidence) {
  EXPECT_EQ(SumPrometheusSamples("m NaN\nm +Inf\nm -Inf\nm 2\nm nan\nm inf\n", "m"), 2);
  EXPECT_FALSE(SumPrometheusSamples("m NaN\n", "m").has_value());
  EXPECT_FALSE(SumPrometheusSamples("m +Inf\nm -Inf\n", "m").has_value());
}

// Finite samples whose sum overflows: infinity equals itself, so a counter
// read as +Inf twice would look stalled (found by engine_metrics_fuzz).
TEST(EngineMetrics, ASumThatOverflowsIsNoEvidence) {
  const std::string big = "vllm:generation_tokens_total{e=\"a\"} 1.7976931348623157e+308\n"
                          "vllm:generation_tokens_total{e=\"b\"} 1.7976931348623157e+308\n";
  EXPECT_FALSE(ParseEngineMetrics(big).generation_tokens.has_value());
  EXPECT_FALSE(SumPrometheusSamples(big, kVllmGenerationTokens).has_value());
  EngineReading one;
  one.generation_tokens = 1.7976931348623157e+308;
  one.requests_running = 1;
  const EngineReading both = CombineReadings({one, one});
  EXPECT_FALSE(both.generation_tokens.has_value());
  EXPECT_EQ(both.requests_running, 2);
}

TEST(EngineMetrics, ValueSpellings) {
  EXPECT_EQ(SumPrometheusSamples("m +3\n", "m"), 3);
  EXPECT_EQ(SumPrometheusSamples("m -2.5\n", "m"), -2.5);
  EXPECT_EQ(SumPrometheusSamples("m 1e3\n", "m"), 1000);
  EXPECT_EQ(SumPrometheusSamples("m 1.5E+2\n", "m"), 150);
  EXPECT_EQ(SumPrometheusSamples("m .5\n", "m"), 0.5);
  EXPECT_EQ(SumPrometheusSamples("m 7", "m"), 7);  // no final line end
}

TEST(EngineMetrics, MalformedLinesAreSkippedNotFatal) {
  const std::string text =
      "m{a=\"unclosed} 100\n"          // the quote never closes
      "m{a=\"x\" 100\n"                // no closing brace
      "m{=\"x\"} 100\n"                // no label name
      "m{a\"x\"} 100\n"                // no '='
      "m{a=x} 100\n"                   // unquoted value
      "m 12abc\n"                      // not a number
      "m ++1\n"
      "m\n"                            // no value
      "m 1 2 3\n"                      // more than a timestamp
      "{a=\"b\"} 100\n"                // no name
      "9m 100\n"                       // a name cannot start with a digit
      "m{a=\"\\\"} 100\n"              // the escape eats the closing quote
      "m 5\n";
  EXPECT_EQ(SumPrometheusSamples(text, "m"), 5);
}

TEST(EngineMetrics, TheFakeEnginesTextIsRead) {
  std::map<int, ixfake::vllm::RankStats> stats;
  stats[0].running = 3;
  stats[0].generation_tokens = 1000;
  stats[1].running = 4;
  stats[1].generation_tokens = 2500;
  stats[0].e2e.observe(0.2);
  const std::string text = ixfake::vllm::render_metrics(stats, "org/model \"v2\"\\x", 0, 4096);
  const EngineReading r = ParseEngineMetrics(text);
  EXPECT_EQ(r.requests_running, 7);
  EXPECT_EQ(r.generation_tokens, 3500);
}

TEST(EngineMetrics, CombineSumsWhenEveryEngineIsKnown) {
  EngineReading a, b;
  a.requests_running = 2;
  a.generation_tokens = 10;
  b.requests_running = 3;
  b.generation_tokens = 20;
  const EngineReading sum = CombineReadings({a, b});
  EXPECT_EQ(sum.requests_running, 5);
  EXPECT_EQ(sum.generation_tokens, 30);
  EXPECT_EQ(sum.error, "");
}

TEST(EngineMetrics, CombineIsUnsetWhenAnyEngineIsNot) {
  EngineReading a, b, down;
  a.requests_running = 2;
  a.generation_tokens = 10;
  b.requests_running = 3;  // its counter family is missing
  down.error = "http://127.0.0.1:8001/metrics: cannot connect: Connection refused";
  const EngineReading partial = CombineReadings({a, b});
  EXPECT_EQ(partial.requests_running, 5);
  EXPECT_FALSE(partial.generation_tokens.has_value());
  const EngineReading with_down = CombineReadings({a, down});
  EXPECT_FALSE(with_down.requests_running.has_value());
  EXPECT_FALSE(with_down.generation_tokens.has_value());
  EXPECT_EQ(with_down.error, down.error);
  const EngineReading none = CombineReadings({});
  EXPECT_FALSE(none.requests_running.has_value());
  EXPECT_FALSE(none.generation_tokens.has_value());
}

TEST(EngineMetrics, SumsPerLabelValue) {
  const std::map<std::string, double> running =
      SumPrometheusSamplesBy(kVllmText, kVllmRequestsRunning, kVllmEngineLabel);
  EXPECT_EQ(running, (std::map<std::string, double>{{"0", 7}, {"1", 5}}));
  const std::map<std::string, double> tokens =
      SumPrometheusSamplesBy(kVllmText, kVllmGenerationTokens, kVllmEngineLabel);
  EXPECT_EQ(tokens, (std::map<std::string, double>{{"0", 123456}, {"1", 150000}}));
  // Another label: one value for both ranks, summed.
  EXPECT_EQ(SumPrometheusSamplesBy(kVllmText, kVllmRequestsRunning, "model_name"),
            (std::map<std::string, double>{{"deepseek-ai/DeepSeek-R1", 12}}));
  // No sample of the family: an empty map, never a 0.
  EXPECT_TRUE(SumPrometheusSamplesBy(kVllmText, kVllmPromptTokens, kVllmEngineLabel).empty());
  EXPECT_TRUE(SumPrometheusSamplesBy("", "m", "engine").empty());
}

TEST(EngineMetrics, PerLabelSamplesWithoutTheLabelGoUnderEmpty) {
  const std::string text =
      "m 1\n"                                 // no labels
      "m{other=\"x\"} 2\n"                    // other labels only
      "m{engine=\"\"} 4\n"                    // an empty value
      "m{engine=\"3\",other=\"y\"} 8\n"
      "m{other=\"z\", engine=\"3\"} 16\n"     // the label anywhere in the set
      "mm{engine=\"3\"} 32\n";                // another family
  EXPECT_EQ(SumPrometheusSamplesBy(text, "m", "engine"), (std::map<std::string, double>{{"", 7}, {"3", 24}}));
}

TEST(EngineMetrics, PerLabelValuesAreUnescaped) {
  const std::string text =
      "m{engine=\"a \\\"q\\\" b\"} 1\n"       // a "q" b
      "m{engine=\"back\\\\slash\"} 2\n"       // back\slash
      "m{engine=\"line\\nbreak\"} 3\n"        // a line break
      "m{engine=\"0\",engine=\"9\"} 4\n";     // twice: the first counts
  EXPECT_EQ(SumPrometheusSamplesBy(text, "m", "engine"),
            (std::map<std::string, double>{{"a \"q\" b", 1}, {"back\\slash", 2}, {"line\nbreak", 3}, {"0", 4}}));
}

TEST(EngineMetrics, PerLabelNonFiniteSamplesAndOverflowsAreNoEvidence) {
  const std::string text =
      "m{engine=\"0\"} NaN\n"
      "m{engine=\"0\"} 2\n"
      "m{engine=\"1\"} +Inf\n"                        // only a non-finite sample: no value
      "m{engine=\"2\"} 1.7976931348623157e+308\n"
      "m{engine=\"2\"} 1.7976931348623157e+308\n"     // overflows: no value
      "m{engine=\"3\" 5\n";                           // malformed: skipped
  EXPECT_EQ(SumPrometheusSamplesBy(text, "m", "engine"), (std::map<std::string, double>{{"0", 2}}));
}

TEST(EngineMetrics, TheFakeEnginesTextIsReadPerRank) {
  std::map<int, ixfake::vllm::RankStats> stats;  // rank 0 busy, rank 1 idle
  for (int rank : {0, 1}) {
    stats[rank].running = rank == 0 ? 3 : 0;
    stats[rank].generation_tokens = 1000 + 1500 * rank;
  }
  const std::string text = ixfake::vllm::render_metrics(stats, "org/model", 0, 4096);
  const std::map<std::string, double> per_rank = SumPrometheusSamplesBy(text, kVllmGenerationTokens, kVllmEngineLabel);
  EXPECT_EQ(per_rank, (std::map<std::string, double>{{"0", 1000}, {"1", 2500}}));
  EXPECT_EQ(ParseEngineMetrics(text).generation_tokens, per_rank.at("0") + per_rank.at("1"));
  EXPECT_EQ(SumPrometheusSamplesBy(text, kVllmRequestsRunning, kVllmEngineLabel),
            (std::map<std::string, double>{{"0", 3}, {"1", 0}}));
}

// Any bytes: random texts, and the real text cut and mutated everywhere,
// must parse without a crash (the sanitizer build runs this too) and sum to
// something finite or unset.
TEST(EngineMetrics, AnyBytesAreSafe) {
  std::mt19937 rng(12345);
  static const char kAlphabet[] = "vllm:num_requests_running{}=\",\\ \t\r\n#0123456789.eE+-NaInf\x00\xff";
  const std::string alphabet(kAlphabet, sizeof kAlphabet - 1);  // with the NUL
  const auto check = [](const std::string& text) {
    const EngineReading r = ParseEngineMetrics(text);
    EXPECT_TRUE(std::isfinite(r.requests_running.value_or(0))) << text;
    EXPECT_TRUE(std::isfinite(r.generation_tokens.value_or(0))) << text;
    for (const auto& [label, sum] : SumPrometheusSamplesBy(text, kVllmRequestsRunning, kVllmEngineLabel)) {
      EXPECT_TRUE(std::isfinite(sum)) << text;
    }
  };
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 200, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    check(text);
  }
  const std::string base = kVllmText;
  for (size_t cut = 0; cut <= base.size(); ++cut) check(base.substr(0, cut));
  for (int i = 0; i < 2000; ++i) {
    std::string text = base;
    for (int k = 0; k < 4; ++k) text[rng() % text.size()] = static_cast<char>(rng() % 256);
    check(text);
  }
}

}  // namespace
}  // namespace ix
