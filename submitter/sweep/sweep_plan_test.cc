#include "submitter/sweep/sweep_plan.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/base/file_text.h"
#include "core/matrix/matrix_config.h"
#include "core/matrix/matrix_runners.h"
#include "submitter/sweep/sweep_mode.h"
#include "submitter/matrix_options.h"
#include "submitter/sweep/sweep_files.h"
#include "tests/support/test.h"

namespace ix {
namespace {

const std::string kRecipes = IX_SOURCE_DIR "/recipes";
const std::string kExample = IX_SOURCE_DIR "/recipes/examples/dsv41flash-b300-1k1k.yaml";
const std::string kRunners = IX_SOURCE_DIR "/recipes/examples/runners.yaml";
const std::string kKey = "dsv41flash-fp4-b300-vllm";

// The example row at `concs`, bucketed as `mode` wants, planned.
Result<SweepPlan> Plan(SweepMode mode, std::vector<int64_t> concs, const std::string& recipes = kRecipes,
                       const std::string& config = kExample, const std::string& key = kKey,
                       const std::string& runners = kRunners) {
  Result<MasterConfig> c = LoadMasterConfigFiles({config});
  if (!c) return c.error();
  Result<RunnerConfig> r = LoadRunnerConfigFile(runners);
  if (!r) return r.error();
  SweepOptions o;
  o.command = SweepOptions::Command::kTestConfig;
  o.config_keys = {key};
  o.conc = std::move(concs);
  Result<MatrixBuckets> b = GenerateBuckets(c.value(), r.value(), o, TraitsOf(mode).trim_conc);
  if (!b) return b.error();
  return PlanSweep(mode, b.value(), recipes);
}

TEST(SweepPlan, ArmsFollowTheParallelismFields) {
  SearchSpaceEntry ss;
  ss.tp = 4;
  EXPECT_EQ(ArmFor(ss), "tp4");
  ss.ep = 4;
  EXPECT_EQ(ArmFor(ss), "tep4");
  ss.dp_attn = true;
  EXPECT_EQ(ArmFor(ss), "dep4");
  ss.tp = 8;
  EXPECT_EQ(ArmFor(ss), "dep8");
}

TEST(SweepPlan, TheCanaryComesFirstAndTheBucketDependsOnIt) {
  Result<SweepPlan> p = Plan(SweepMode::kFullSweepFailFast, {2, 8});
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p.value().jobs.size(), 2u);
  const PlannedJob& canary = p.value().jobs[0];
  const PlannedJob& bucket = p.value().jobs[1];
  EXPECT_TRUE(canary.canary);
  EXPECT_EQ(canary.entries, std::vector<int64_t>{0});
  EXPECT_EQ(bucket.key, "bucket:1k1k");
  EXPECT_EQ(bucket.depends_on, "canary");
  EXPECT_EQ(bucket.entries.size(), 5u);
  EXPECT_EQ(bucket.gpus, 4);
  // The canary is the lowest-concurrency entry; indices run in submission order.
  const PlannedEntry& c = p.value().entries[0];
  EXPECT_EQ(c.arm, "tp4");
  EXPECT_EQ(c.conc, 2);
  EXPECT_EQ(c.recipe, "dsv41flash-fp4-b300-vllm");
  for (size_t i = 0; i < p.value().entries.size(); ++i) EXPECT_EQ(p.value().entries[i].index, static_cast<int64_t>(i));
  for (size_t i = 0; i < bucket.entries.size(); ++i) {
    EXPECT_EQ(p.value().entries[bucket.entries[i]].array_index, static_cast<int64_t>(i));
  }
  std::set<std::string> arms;
  for (const auto& e : p.value().entries) arms.insert(e.arm);
  EXPECT_EQ(arms, (std::set<std::string>{"tp4", "tep4", "dep4"}));
}

TEST(SweepPlan, ModesDecideTrimmingAndTheCanary) {
  Result<SweepPlan> trimmed = Plan(SweepMode::kSweepEnabled, {2, 8});
  ASSERT_TRUE(trimmed.ok()) << trimmed.error().message;
  EXPECT_EQ(trimmed.value().jobs.size(), 1u);  // no canary
  EXPECT_EQ(trimmed.value().entries.size(), 3u);  // the lowest conc of tp4, tep4, dep4
  for (const auto& e : trimmed.value().entries) EXPECT_EQ(e.conc, 2);
  Result<SweepPlan> no_canary = Plan(SweepMode::kFullSweepFailFastNoCanary, {2, 8});
  ASSERT_TRUE(no_canary.ok());
  ASSERT_EQ(no_canary.value().jobs.size(), 1u);
  EXPECT_EQ(no_canary.value().jobs[0].depends_on, "");
  EXPECT_EQ(no_canary.value().entries.size(), 6u);
}

TEST(SweepPlan, BadInputIsRefusedWithTheReason) {
  // A concurrency the recipe refuses (dep4: 2 x CONC must divide by 4).
  Result<SweepPlan> odd = Plan(SweepMode::kFullSweepEnabled, {3});
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("not whole for CONC=3"), std::string::npos) << odd.error().message;
  // No recipe serves the key.
  const test::TempDir no_recipes("ix-no-recipes");
  const std::string& empty = no_recipes.path();
  Result<SweepPlan> none = Plan(SweepMode::kFullSweepEnabled, {2}, empty);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no recipe in " + empty + " serves config key '" + kKey + "'"),
            std::string::npos)
      << none.error().message;
  // A row whose arm the recipe lacks (tp8).
  const std::string cfg = empty + "/tp8.yaml";
  std::string text;
  {
    std::ifstream in(kExample);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text.replace(text.find("{ tp: 4, conc-start"), 9, "{ tp: 8, ");
  std::ofstream(cfg) << text;
  Result<SweepPlan> tp8 = Plan(SweepMode::kFullSweepEnabled, {2}, kRecipes, cfg);
  ASSERT_FALSE(tp8.ok());
  EXPECT_NE(tp8.error().message.find("needs arm tp8, which recipe dsv41flash-fp4-b300-vllm does not have"),
            std::string::npos)
      << tp8.error().message;
}

// The seed's agentic rows: every entry planned, the DEP rows' DRAM tier
// one the recipe serves; a tier it does not serve is refused where the row is.
TEST(SweepPlan, AgenticRowsNeedAnOffloadTierTheRecipeServes) {
  const std::string agentic = IX_SOURCE_DIR "/recipes/examples/dsv41flash-b300.yaml";
  const std::string key = "dsv41flash-fp4-b300-vllm-agentic-dspark";
  Result<SweepPlan> p = Plan(SweepMode::kFullSweepFailFastNoCanary, {}, kRecipes, agentic, key);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p.value().entries.size(), 15u) << "14 rows' entries and InferenceX's one agentic eval";
  EXPECT_EQ(p.value().entries[13].arm, "dep4");
  EXPECT_EQ(p.value().entries[13].bucket, "agentic");
  EXPECT_TRUE(p.value().entries[14].eval_only);
  const test::TempDir dir("ix-plan-kv");
  const std::string cfg = dir.path() + "/lmcache.yaml";
  int err = 0;
  std::ofstream(cfg) << test::ReplaceOnce(ReadFileText(agentic, &err), "{ name: vllm-simple }", "{ name: lmcache }");
  Result<SweepPlan> bad = Plan(SweepMode::kFullSweepFailFastNoCanary, {}, kRecipes, cfg, key);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "config '" + key + "' (" + cfg + ":26:9, scenarios.agentic-coding[0].search-space[2]) field "
            "'kv-offload-backend': 'lmcache' is not a KV offload tier recipe dsv41flash-fp4-b300-vllm serves; "
            "allowed: vllm-simple, mooncake");
}

// The DRAM a row's tier gets (dram-utilization of the runner's DRAM) plus
// what the engine pins besides (the Engram tables per DP rank) must fit the
// runner's nodes: on a 1 TB node the DEP4 row's 498 GB tier (4 x 124.5 GB) beside 4 x 189
// GiB of tables does not, and the sweep says so before submitting anything.
TEST(SweepPlan, AStepsHostMemoryMustFitTheRunnersDram) {
  const std::string agentic = IX_SOURCE_DIR "/recipes/examples/dsv41flash-b300.yaml";
  const std::string key = "dsv41flash-fp4-b300-vllm-agentic-dspark";
  const test::TempDir dir("ix-plan-dram");
  const std::string runners = dir.path() + "/runners.yaml";
  int err = 0;
  std::ofstream(runners) << test::ReplaceOnce(ReadFileText(kRunners, &err), "  cluster:b300:\n    available-cpu-dram-mib: 4_000_000",
                                              "  cluster:b300:\n    available-cpu-dram-mib: 1_000_000");
  Result<SweepPlan> small = Plan(SweepMode::kFullSweepFailFastNoCanary, {}, kRecipes, agentic, key, runners);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().message,
            "config '" + key + "' (" + agentic + ":26:9, scenarios.agentic-coding[0].search-space[2]): the step's host "
            "memory engram_tables 4 x 189 GiB (per dp_rank) + kv_offload_cpu 4 x 115.94 GiB (per gpu) = 1219.79 GiB "
            "per node does not fit runner 'cluster:b300' (hardware available-cpu-dram-mib 1000000 = 976.56 GiB); the "
            "tier gets 498 GB (TOTAL_CPU_DRAM_GB) from the row's dram-utilization: lower it, or use an arm with "
            "fewer ranks per node");
  // The rows without a tier need no DRAM check, and at 4 TB the tier fits.
  EXPECT_TRUE(Plan(SweepMode::kFullSweepFailFastNoCanary, {}, kRecipes, agentic, key).ok());
}

TEST(SweepFiles, ManifestRoundTripsAndScriptsQuoteTheirArguments) {
  Result<SweepPlan> p = Plan(SweepMode::kFullSweepFailFast, {2, 8});
  ASSERT_TRUE(p.ok());
  SweepManifest m;
  m.sweep_id = "sw-test";
  const test::TempDir dir("ix-sweep it's-");  // a quote in the path
  m.sweep_dir = dir.path();
  m.ixsubmit = "/usr/bin/ixsubmit";
  m.recipe_dir = kRecipes;
  m.fail_fast = true;
  m.client = {"ix-fake-client", "--sessions", "2"};
  m.settings.partition = "gpu";
  m.settings.time_limit = "02:00:00";
  m.settings.throttle = 7;
  m.settings.exclusive = true;
  m.container.enabled = true;
  m.container.squash_dir = "/site/squash";
  m.container.model_dir = "/site/models";
  m.hang_after = "600";
  m.plan = p.value();
  ASSERT_TRUE(WriteSweepFiles(m).ok());
  Result<SweepManifest> back = ReadSweepManifest(m.sweep_dir);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back.value().client, m.client);
  EXPECT_TRUE(back.value().fail_fast);
  EXPECT_EQ(back.value().hang_after, "600");
  // A resumed submitter submits with the settings the sweep was started with.
  EXPECT_EQ(back.value().settings.partition, "gpu");
  EXPECT_EQ(back.value().settings.time_limit, "02:00:00");
  EXPECT_EQ(back.value().settings.throttle, 7);
  EXPECT_TRUE(back.value().settings.exclusive);
  // ... and its tasks run in the same containers.
  EXPECT_TRUE(back.value().container.enabled);
  EXPECT_EQ(back.value().container.squash_dir, "/site/squash");
  EXPECT_EQ(back.value().container.model_dir, "/site/models");
  ASSERT_EQ(back.value().plan.entries.size(), m.plan.entries.size());
  for (size_t i = 0; i < m.plan.entries.size(); ++i) {
    EXPECT_EQ(back.value().plan.entries[i].arm, m.plan.entries[i].arm);
    EXPECT_EQ(back.value().plan.entries[i].conc, m.plan.entries[i].conc);
    EXPECT_EQ(back.value().plan.entries[i].job_key, m.plan.entries[i].job_key);
    EXPECT_EQ(back.value().plan.entries[i].image, "vllm/vllm-openai:nightly");
    EXPECT_EQ(back.value().plan.entries[i].model_path, "/models/deepseek-ai/DeepSeek-V4.1-Flash");
  }
  // A sweep.json from before containers: its steps ran, and run, on the host.
  {
    int err = 0;
    std::string text = ReadFileText(m.sweep_dir + "/sweep.json", &err);
    const size_t at = text.find("\"container\"");
    ASSERT_NE(at, std::string::npos);
    text.erase(at, text.find('}', at) + 2 - at);  // the object and its comma
    ASSERT_TRUE(WriteFileAtomic(m.sweep_dir + "/sweep.json", text).ok());
    Result<SweepManifest> old = ReadSweepManifest(m.sweep_dir);
    ASSERT_TRUE(old.ok()) << old.error().message << text;
    EXPECT_FALSE(old.value().container.enabled);
    EXPECT_EQ(old.value().settings.partition, "gpu");
  }
  std::ifstream script(ScriptPath(m, m.plan.jobs[1]));
  std::string text((std::istreambuf_iterator<char>(script)), {});
  EXPECT_NE(text.find("--sweep-dir '" + m.sweep_dir.substr(0, m.sweep_dir.find('\'')) + "'\\''s-"), std::string::npos)
      << text;
  EXPECT_NE(text.find("--job 'bucket:1k1k'"), std::string::npos) << text;

  SubmitSettings s;
  s.partition = "gpu";
  s.throttle = 3;
  s.exclusive = true;
  const std::vector<std::string> a = SbatchArgs(m, m.plan.jobs[1], s, 42);
  auto has = [&](const std::string& x) { return std::find(a.begin(), a.end(), x) != a.end(); };
  EXPECT_TRUE(has("--array=0-4%3"));
  EXPECT_TRUE(has("--dependency=afterok:42"));
  EXPECT_TRUE(has("--gres=gpu:4"));
  EXPECT_TRUE(has("--partition=gpu"));
  EXPECT_TRUE(has("--exclusive"));
  EXPECT_TRUE(has("--output=" + m.sweep_dir + "/logs/%x_%A_%a.out"));
  EXPECT_TRUE(has("--job-name=ix-sw-test-1k1k-" + kKey));
  const std::vector<std::string> c = SbatchArgs(m, m.plan.jobs[0], s, 0);
  EXPECT_EQ(std::count_if(c.begin(), c.end(), [](const std::string& x) { return x.rfind("--array", 0) == 0; }), 0);
  EXPECT_EQ(std::count_if(c.begin(), c.end(), [](const std::string& x) { return x.rfind("--dependency", 0) == 0; }), 0);
}

}  // namespace
}  // namespace ix

namespace ix {
namespace {

// A bucket larger than Slurm's MaxArraySize becomes several arrays, each
// under the limit, all of the same bucket.
TEST(SweepPlan, BucketsLargerThanMaxArraySizeAreSplit) {
  Result<MasterConfig> c = LoadMasterConfigFiles({kExample});
  Result<RunnerConfig> r = LoadRunnerConfigFile(kRunners);
  ASSERT_TRUE(c.ok() && r.ok());
  SweepOptions o;
  o.command = SweepOptions::Command::kTestConfig;
  o.config_keys = {kKey};
  o.conc = {2, 4, 8, 16};  // 12 entries: a canary and 11 in 1k1k
  Result<MatrixBuckets> b = GenerateBuckets(c.value(), r.value(), o, false);
  ASSERT_TRUE(b.ok());
  Result<SweepPlan> p = PlanSweep(SweepMode::kFullSweepFailFast, b.value(), kRecipes, 5);
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::vector<std::string> keys;
  std::vector<size_t> sizes;
  for (const PlannedJob& j : p.value().jobs) {
    keys.push_back(j.key);
    sizes.push_back(j.entries.size());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"canary", "bucket:1k1k", "bucket:1k1k#2", "bucket:1k1k#3"}));
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 5, 5, 1}));
  EXPECT_EQ(BucketOfJobKey("bucket:1k1k#2"), "1k1k");
  EXPECT_EQ(BucketOfJobKey("bucket:1k1k"), "1k1k");
  EXPECT_EQ(BucketOfJobKey("canary"), "canary");
  for (const PlannedJob& j : p.value().jobs) {
    for (size_t i = 0; i < j.entries.size(); ++i) {
      EXPECT_EQ(p.value().entries[j.entries[i]].array_index, static_cast<int64_t>(i)) << j.key;
      EXPECT_EQ(p.value().entries[j.entries[i]].job_key, j.key);
    }
  }
  // Distinct scripts and job names per array.
  SweepManifest m;
  m.sweep_id = "sw-x";
  m.sweep_dir = "/s";
  m.plan = p.value();
  EXPECT_NE(ScriptPath(m, m.plan.jobs[1]), ScriptPath(m, m.plan.jobs[2]));
  EXPECT_NE(JobName(m, m.plan.jobs[1]), JobName(m, m.plan.jobs[2]));
  EXPECT_EQ(ScriptPath(m, m.plan.jobs[2]), "/s/bucket-1k1k-2.sbatch");
}

}  // namespace
}  // namespace ix
