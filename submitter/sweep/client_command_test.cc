#include "submitter/sweep/client_command.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "core/base/file_text.h"
#include "core/process/process.h"
#include "tests/support/test.h"

namespace ix {
namespace {

// InferenceX's dsv4 agentic TP8 c1 entry (spec: benchmark_command.txt of its
// workflow) with the recipe's client variables in the step.
ClientEnvironment AgenticEnv() {
  ClientEnvironment env;
  env.known = {{"SCENARIO_TYPE", "agentic-coding"}, {"MODEL", "deepseek-ai/DeepSeek-V4-Pro"},
               {"MODEL_PREFIX", "dsv4"},           {"CONC", "1"},
               {"DURATION", "3600"},               {"AIPERF_LIVE_FAILED_REQUEST_THRESHOLD", "0.10"},
               {"AIPERF_TRACE_IDLE_GAP_CAP_SECONDS", "300"}, {"FRAMEWORK", "vllm"}};
  env.step = {{"AIPERF_SERVER_URL", "http://localhost:20000"},
              {"AIPERF_SERVER_METRICS_URLS", "http://localhost:20001/metrics"}};
  return env;
}

TEST(AgenticReplayWords, AreBuildReplayCmdsWordForWord) {
  Result<ClientWords> w = AgenticReplayWords(AgenticEnv(), "/workspace/results");
  ASSERT_TRUE(w) << w.error().message;
  // What InferenceX's run wrote to benchmark_command.txt, with the step's
  // URL and metrics URLs as references and the image's aiperf.
  EXPECT_EQ(DescribeClientWords(w.value()),
            "aiperf profile --scenario inferencex-agentx-mvp --url $AIPERF_SERVER_URL --endpoint /v1/chat/completions "
            "--endpoint-type chat --streaming --model deepseek-ai/DeepSeek-V4-Pro --tokenizer "
            "deepseek-ai/DeepSeek-V4-Pro --concurrency 1 --benchmark-duration 3600 --stats-interval 30 --random-seed "
            "42 --failed-request-threshold 0.10 --trajectory-start-min-ratio 0.25 --trajectory-start-max-ratio 0.75 "
            "--warmup-requests-per-lane 10 --trace-idle-gap-cap-seconds 300 --warmup-grace-period 1800 "
            "--use-server-token-count --no-gpu-telemetry --tokenizer-trust-remote-code --num-dataset-entries 393 "
            "--slice-duration 1.0 --server-metrics ${AIPERF_SERVER_METRICS_URLS//,/ } --output-artifact-dir "
            "/workspace/results/aiperf_artifacts --public-dataset semianalysis_cc_traces_weka_062126");
}

TEST(AgenticReplayWords, FollowTheEnvironmentAsBuildReplayCmdDoes) {
  ClientEnvironment env = AgenticEnv();
  env.step.clear();
  env.known.insert(env.known.begin(), {{"DURATION", "20"},
                                       {"AIPERF_CLI", "/opt/venv/bin/aiperf"},
                                       {"MODEL_PREFIX", "qwen3.5"},
                                       {"AIPERF_EXTRA_INPUTS", "a:1  b:2"},
                                       {"AIPERF_SERVER_METRICS_URLS", "http://h:1/metrics,http://h:2/metrics"},
                                       {"FRAMEWORK", "dynamo-vllm"}});
  Result<ClientWords> w = AgenticReplayWords(env, "/r");
  ASSERT_TRUE(w) << w.error().message;
  const std::string d = DescribeClientWords(w.value());
  EXPECT_EQ(d.rfind("/opt/venv/bin/aiperf profile --scenario inferencex-agentx-mvp --url http://localhost:$PORT ", 0),
            0u)
      << d;
  EXPECT_NE(d.find(" --benchmark-duration 20 "), std::string::npos) << d;
  EXPECT_NE(d.find(" --extra-inputs a:1 b:2 "), std::string::npos) << d;
  EXPECT_NE(d.find(" --use-dynamo-conv-aware-routing --dynamo-session-timeout-seconds 3600 "), std::string::npos);
  EXPECT_NE(d.find(" --server-metrics http://h:1/metrics http://h:2/metrics "), std::string::npos) << d;
  EXPECT_NE(d.find(" --unsafe-override --public-dataset semianalysis_cc_traces_weka_062126_256k"), std::string::npos)
      << "under 900 s; a short-context family's corpus: " << d;
  env.known.insert(env.known.begin(), {"AIPERF_EXPERIMENTAL_FAST", "1"});
  const std::string fast = DescribeClientWords(AgenticReplayWords(env, "/r").value());
  EXPECT_NE(fast.find(" --benchmark-duration 1200 "), std::string::npos) << fast;
  EXPECT_NE(fast.find(" --warmup-requests-per-lane 1 "), std::string::npos) << fast;
  env.known.insert(env.known.begin(), {"WEKA_LOADER_OVERRIDE", "my_traces"});
  Result<ClientWords> bad = AgenticReplayWords(env, "/r");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("WEKA_LOADER_OVERRIDE='my_traces': unknown trace loader; allowed: "
                                      "semianalysis_cc_traces_weka_with_subagents, ",
                                      0),
            0u)
      << bad.error().message;
}

TEST(BenchServingWords, AreRunBenchmarkServingsWithTheLaunchScriptsArguments) {
  ClientEnvironment env;
  env.known = {{"MODEL", "deepseek-ai/DeepSeek-V4.1-Flash"}, {"ISL", "1024"}, {"OSL", "1024"},
               {"RANDOM_RANGE_RATIO", "0.8"}, {"CONC", "64"}, {"RESULT_FILENAME", "x_conc64_n1"}};
  EXPECT_EQ(DescribeClientWords(BenchServingWords(env, "/r/3", ClientDefaults{})),
            "python3 /workspace/utils/bench_serving/benchmark_serving.py --model deepseek-ai/DeepSeek-V4.1-Flash "
            "--backend vllm --base-url http://0.0.0.0:$PORT --dataset-name random --random-input-len 1024 "
            "--random-output-len 1024 --random-range-ratio 0.8 --num-prompts 640 --max-concurrency 64 --request-rate "
            "inf --ignore-eos --save-result --num-warmups 128 --percentile-metrics ttft,tpot,itl,e2el --result-dir /r/3 "
            "--result-filename x_conc64_n1.json --trust-remote-code");
}

// Runs the launcher's argv with `env` and returns what the command it ran
// saw as its arguments (one per line), or its exit status as "exit N".
std::string RunLauncher(const ClientWords& words, const std::string& record, const EnvList& env) {
  test::TempDir dir("ix-launcher");
  ClientWords w = {ClientWord{ClientWord::kLiteral, "/bin/sh", ""},
                   ClientWord{ClientWord::kLiteral, "-c", ""},
                   ClientWord{ClientWord::kLiteral, "printf '%s\\n' \"$@\" >" + dir.path() + "/args", ""},
                   ClientWord{ClientWord::kLiteral, "client", ""}};
  w.insert(w.end(), words.begin(), words.end());
  SpawnSpec spec;
  spec.name = "launcher";
  spec.argv = LauncherArgv(w, record);
  spec.env = BuildEnvironment({"PATH=/usr/bin:/bin"}, env);
  spec.log_path = dir.path() + "/log";
  Result<SpawnedProcess> p = Spawn(spec);
  if (!p) return p.error().message;
  int st = 0;
  ::waitpid(p.value().id.pid, &st, 0);
  int err = 0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    return "exit " + std::to_string(WEXITSTATUS(st)) + ": " + ReadFileText(dir.path() + "/log", &err);
  }
  return ReadFileText(dir.path() + "/args", &err);
}

TEST(LauncherArgv, ResolvesReferencesFromTheStepAndNothingElse) {
  const ClientWords words = {ClientWord{ClientWord::kValue, "http://localhost:", "PORT"},
                             ClientWord{ClientWord::kValue, "", "AIPERF_SERVER_URL"},
                             ClientWord{ClientWord::kCommaList, "", "URLS"},
                             ClientWord{ClientWord::kLiteral, "$HOME `id` $(id) *", ""}};
  EXPECT_EQ(RunLauncher(words, "",
                        {{"IX_PORT", "21000"}, {"PORT", "1"}, {"AIPERF_SERVER_URL", "http://a b"},
                         {"URLS", "http://x/m,http://y/*"}}),
            "http://localhost:21000\nhttp://a b\nhttp://x/m\nhttp://y/*\n$HOME `id` $(id) *\n")
      << "the step's IX_PORT is PORT; values and words are never shell text";
  EXPECT_EQ(RunLauncher({ClientWord{ClientWord::kCommaList, "", "URLS"}}, "", {{"URLS", "http://x/m,,http://y"}})
                .rfind("exit 1: ERROR: URLS must be a comma-separated list of non-empty URLs", 0),
            0u);
  EXPECT_EQ(RunLauncher({ClientWord{ClientWord::kValue, "", "A;id"}}, "", {}).rfind("exit 2: ix-client: bad variable "
                                                                                   "name 'A;id'",
                                                                                   0),
            0u);
}

TEST(LauncherArgv, RecordsTheCommandAndTheAiperfVariables) {
  test::TempDir dir("ix-launcher-record");
  const std::string record = dir.path() + "/benchmark_command.txt";
  ASSERT_EQ(RunLauncher({ClientWord{ClientWord::kValue, "--url=", "AIPERF_SERVER_URL"}}, record,
                        {{"AIPERF_SERVER_URL", "http://h:1"}, {"AIPERF_X", "it's"}, {"OTHER", "no"}}),
            "--url=http://h:1\n");
  int err = 0;
  const std::string cmd = ReadFileText(record, &err);
  EXPECT_NE(cmd.find(" client --url=http://h:1\n"), std::string::npos) << cmd;
  EXPECT_EQ(ReadFileText(dir.path() + "/benchmark.env", &err),
            "AIPERF_SERVER_URL='http://h:1'\nAIPERF_X='it'\\''s'\n");
}

}  // namespace
}  // namespace ix
