#include "core/matrix/matrix.h"
#include "core/matrix/matrix_test_util.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/matrix/matrix_json.h"

namespace ix {
namespace {

const char kRunners[] = R"(labels:
  b300: [b300-nv_01, b300-nv_02, b300-x_03]
  cluster:b300-nv: [b300-nv_01, b300-nv_02]
  gb300: [gb300-nv_0]
hardware:
  cluster:b300-nv:
    available-cpu-dram-mib: 2_964_436
    gpus-per-node: 8
)";

struct Fixture {
  MasterConfig config;
  RunnerConfig runners;
};

Fixture Load(const std::string& yaml) {
  Fixture f;
  Status s = AppendMasterConfigString(yaml, "m.yaml", f.config);
  EXPECT_TRUE(s.ok()) << s.error().message;
  Result<RunnerConfig> r = LoadRunnerConfigString(kRunners, "runners.yaml");
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (r.ok()) f.runners = std::move(r).value();
  return f;
}

std::string SingleNode(const std::string& key, const std::string& runner, const std::string& scenario,
                       const std::string& rows) {
  return test::MatrixConfigYaml(key, runner, "    " + scenario + ":\n" + rows);
}

// Two single-node 8k1k configs: `a` at conc 1, `b` at conc 2.
Fixture TwoConfigs(const std::string& a, const std::string& b) {
  auto config = [](const std::string& key, int conc) {
    return SingleNode(key, "b300", "fixed-seq-len",
                      "    - isl: 8192\n      osl: 1024\n      search-space:\n      - { tp: 4, conc-list: [" +
                          std::to_string(conc) + "] }\n");
  };
  return Load(config(a, 1) + config(b, 2));
}

std::vector<int64_t> Concs(const std::vector<MatrixEntry>& m) {
  std::vector<int64_t> out;
  for (const MatrixEntry& e : m) out.push_back(e.conc);
  return out;
}

std::vector<MatrixEntry> Gen(const Fixture& f, const SweepOptions& o = {}) {
  Result<std::vector<MatrixEntry>> m = GenerateMatrix(f.config, f.runners, o);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(m).value() : std::vector<MatrixEntry>{};
}

TEST(Matrix, GeometricRangesIncludeBothEnds) {
  Fixture f = Load(SingleNode("k", "b300", "fixed-seq-len",
                              "    - isl: 8192\n      osl: 1024\n      search-space:\n"
                              "      - { tp: 4, conc-start: 1, conc-end: 32 }\n"
                              "      - { tp: 8, conc-start: 4, conc-end: 48 }\n"));
  EXPECT_EQ(Concs(Gen(f)), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 4, 8, 16, 32, 48}));
  SweepOptions o;
  o.step_size = 4;
  EXPECT_EQ(Concs(Gen(f, o)), (std::vector<int64_t>{1, 4, 16, 32, 4, 16, 48}));
}

TEST(Matrix, ConcListKeepsOrderAndDuplicates) {
  Fixture f = Load(SingleNode("k", "cluster:b300-nv", "agentic-coding",
                              "    - search-space:\n      - { tp: 4, kv-offloading: none, conc-list: [8, 2, 8] }\n"));
  EXPECT_EQ(Concs(Gen(f)), (std::vector<int64_t>{8, 2, 8}));
}

TEST(Matrix, MinAndMaxConcAsTheReference) {
  SearchSpaceEntry range;
  range.conc_start = 32, range.conc_end = 512;
  EXPECT_EQ(ExpandConcurrency(range, true, 4, 4, 64), (std::vector<int64_t>{32, 64}));
  range.conc_start = 512;
  EXPECT_EQ(ExpandConcurrency(range, true, 4, 4, 64), (std::vector<int64_t>{64}));  // clamped into range
  range.conc_start = 1, range.conc_end = 1;
  EXPECT_TRUE(ExpandConcurrency(range, true, 4, 4, 64).empty());  // below --min-conc: dropped
  SearchSpaceEntry list;
  list.has_conc_list = true;
  list.conc_list = {10, 15, 25, 50, 100};
  EXPECT_EQ(ExpandConcurrency(list, true, 2, 4, 64), (std::vector<int64_t>{10, 15, 25, 50}));
  list.conc_list = {1096, 1691};
  EXPECT_EQ(ExpandConcurrency(list, true, 2, 4, 64), (std::vector<int64_t>{64}));  // fixed: runs at --max-conc
  EXPECT_TRUE(ExpandConcurrency(list, false, 2, 4, 64).empty());                   // agentic: dropped
}

TEST(Matrix, MaxModelLenAndExpName) {
  Fixture f = Load(SingleNode("k", "b300", "fixed-seq-len",
                              "    - isl: 1000\n      osl: 24\n      search-space:\n      - { tp: 4, conc-list: [1] }\n"));
  const std::string json = MatrixToJson(Gen(f));
  EXPECT_NE(json.find("\"max-model-len\": 1280"), std::string::npos) << json;
  EXPECT_NE(json.find("\"exp-name\": \"m_1000_24\""), std::string::npos) << json;
}

TEST(Matrix, TotalCpuDramGbAsTheReference) {
  Fixture f = Load(SingleNode("k", "cluster:b300-nv", "agentic-coding",
                              "    - dram-utilization: 0.95\n      search-space:\n"
                              "      - { tp: 4, kv-offloading: dram, conc-list: [1] }\n"
                              "      - { tp: 8, kv-offloading: dram, conc-list: [1] }\n"
                              "      - { tp: 8, kv-offloading: none, conc-list: [1] }\n"));
  const std::vector<MatrixEntry> m = Gen(f);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].total_cpu_dram_gb, 1424);
  EXPECT_EQ(m[1].total_cpu_dram_gb, 2849);
  EXPECT_EQ(m[2].total_cpu_dram_gb, 0);
  EXPECT_EQ(ExpName(m[0]), "m_tp4_conc1_kvdram");
}

TEST(Matrix, DramRunnerWithoutHardwareIsAnError) {
  Fixture f = Load(SingleNode("k", "cluster:elsewhere", "agentic-coding",
                              "    - dram-utilization: 0.5\n      search-space:\n"
                              "      - { tp: 4, kv-offloading: dram, conc-list: [1] }\n"));
  Result<std::vector<MatrixEntry>> m = GenerateMatrix(f.config, f.runners, {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("m.yaml:5:11: k: field 'runner': runner 'cluster:elsewhere' has no entry under "
                                   "'hardware' in runners.yaml"),
            std::string::npos)
      << m.error().message;
}

TEST(Matrix, SingleNodeEvalMarking) {
  // 8k1k only; conc < 16 ignored; max and upper median marked.
  Fixture f = Load(SingleNode("k", "b300", "fixed-seq-len",
                              "    - isl: 8192\n      osl: 1024\n      search-space:\n"
                              "      - { tp: 4, conc-list: [4, 16, 32, 64, 128] }\n"
                              "    - isl: 1024\n      osl: 1024\n      search-space:\n"
                              "      - { tp: 4, conc-list: [128] }\n"));
  std::vector<MatrixEntry> m = Gen(f);
  std::vector<int64_t> marked;
  for (const MatrixEntry& e : m) {
    if (e.run_eval == RunEval::kTrue) marked.push_back(e.conc);
  }
  EXPECT_EQ(marked, (std::vector<int64_t>{64, 128}));
}

TEST(Matrix, AgenticEvalsOnePerModelOrPerTopology) {
  Fixture f = Load(SingleNode("k", "cluster:b300-nv", "agentic-coding",
                              "    - search-space:\n"
                              "      - { tp: 4, conc-list: [1, 8] }\n"
                              "      - { tp: 4, ep: 4, dp-attn: true, conc-list: [32, 64] }\n"
                              "      - { tp: 4, ep: 4, conc-list: [16] }\n"));
  // Agentic entries are marked only when evals are asked for.
  for (const MatrixEntry& e : Gen(f)) EXPECT_EQ(e.run_eval, RunEval::kFalse);
  for (const MatrixEntry& e : Gen(f, [] { SweepOptions o; o.evals = EvalMode::kNone; return o; }())) {
    EXPECT_EQ(e.run_eval, RunEval::kAbsent);
  }
  SweepOptions o;
  o.evals = EvalMode::kOnly;
  EXPECT_EQ(Concs(Gen(f, o)), (std::vector<int64_t>{64}));
  o.eval_per_topology = true;  // TP4, DEP4 and TEP4 each get an accuracy check
  EXPECT_EQ(Concs(Gen(f, o)), (std::vector<int64_t>{8, 64, 16}));
}

TEST(Matrix, ModelPrefixFiltersOnTheKey) {
  Fixture f = TwoConfigs("dsv4-a", "other");
  SweepOptions o;
  o.model_prefixes = {"dsv4"};  // the model-prefix field is "m" in both
  EXPECT_EQ(Concs(Gen(f, o)), (std::vector<int64_t>{1}));
  o.model_prefixes = {"m"};
  EXPECT_TRUE(Gen(f, o).empty());
}

TEST(Matrix, TestConfigGlobsAndConcOverride) {
  Fixture f = TwoConfigs("dsv4-a", "dsv4-b");
  SweepOptions o;
  o.command = SweepOptions::Command::kTestConfig;
  o.config_keys = {"dsv4-b", "dsv4-?"};  // given order, then pattern matches not yet taken
  EXPECT_EQ(Concs(Gen(f, o)), (std::vector<int64_t>{2, 1}));
  o.config_keys = {"dsv4-[a]"};
  o.conc = {7, 9};
  EXPECT_EQ(Concs(Gen(f, o)), (std::vector<int64_t>{7, 9}));
  o.config_keys = {"nope*"};
  Result<std::vector<MatrixEntry>> m = GenerateMatrix(f.config, f.runners, o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "no config key matches the pattern 'nope*'");
  o.config_keys = {"nope"};
  EXPECT_EQ(GenerateMatrix(f.config, f.runners, o).error().message, "config key 'nope' not found in the config files");
}

TEST(Matrix, RunnerTypeMustBeALabel) {
  Fixture f = Load(SingleNode("k", "b300", "fixed-seq-len",
                              "    - isl: 8192\n      osl: 1024\n      search-space:\n      - { tp: 4, conc-list: [1] }\n"));
  SweepOptions o;
  o.runner_types = {"b300", "b301"};
  Result<std::vector<MatrixEntry>> m = GenerateMatrix(f.config, f.runners, o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message,
            "Invalid runner type(s): 'b301'. Valid runner types are: b300, cluster:b300-nv, gb300");
}

TEST(Matrix, RunnerNodeFilterExpandsToNodes) {
  Fixture f = Load(SingleNode("k", "b300", "fixed-seq-len",
                              "    - isl: 8192\n      osl: 1024\n      search-space:\n      - { tp: 4, conc-list: [1] }\n"));
  SweepOptions o;
  o.runner_node_filter = "nv_";
  const std::vector<MatrixEntry> m = Gen(f, o);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(*m[0].runner, "b300-nv_01");
  EXPECT_EQ(*m[1].runner, "b300-nv_02");
  o.runner_node_filter = "zzz";
  EXPECT_FALSE(GenerateMatrix(f.config, f.runners, o).ok());
}

TEST(Matrix, GlobMatch) {
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("dsv4-*-vllm", "dsv4-fp4-b300-vllm"));
  EXPECT_FALSE(GlobMatch("dsv4-*-vllm", "dsv4-fp4-b300-vllm-mtp"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_TRUE(GlobMatch("[!x]b", "ab"));
  EXPECT_FALSE(GlobMatch("[!a]b", "ab"));
  EXPECT_TRUE(GlobMatch("[a-c]z", "bz"));
  EXPECT_TRUE(GlobMatch("a[", "a["));
}

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(IX_INFERENCEX_FIXTURES "/") + name);
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();  // the reference prints one line
  return s;
}

// Multinode search spaces that repeat a topology with different
// conc-lists (fixtures not in nvidia-master.yaml; their expected outputs
// were derived from the reference's mark_eval_entries and
// mark_all_eval_entries, see the comments in the YAML): one eval per
// topology, the first holder of its highest concurrency >= 16, kept where
// it stands; --all-evals merges each topology at its first entry with the
// sorted distinct concurrencies.
TEST(Matrix, MultinodeEvalsOncePerTopology) {
  Result<RunnerConfig> r = LoadRunnerConfigFile(IX_INFERENCEX_FIXTURES "/runners.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const std::string name : {"multinode-same-topology", "multinode-agentic-same-topology"}) {
    MasterConfig c;
    Status s = AppendMasterConfigFile(IX_INFERENCEX_FIXTURES "/" + name + ".yaml", c);
    ASSERT_TRUE(s.ok()) << s.error().message;
    for (const auto& [mode, suffix] : {std::pair{EvalMode::kDefault, ""}, std::pair{EvalMode::kOnly, "-evals-only"},
                                       std::pair{EvalMode::kAll, "-all-evals"}}) {
      SweepOptions o;
      o.evals = mode;
      Result<std::vector<MatrixEntry>> m = GenerateMatrix(c, r.value(), o);
      ASSERT_TRUE(m.ok()) << m.error().message;
      EXPECT_EQ(MatrixToJson(m.value()), ReadFixture(name + suffix + ".json")) << name << suffix;
    }
  }
}

TEST(Matrix, TheFixtureSweepHasTheReferenceSize) {
  MasterConfig c;
  ASSERT_TRUE(AppendMasterConfigFile(IX_INFERENCEX_FIXTURES "/nvidia-master.yaml", c).ok())
      << "the InferenceX fixtures must be in tests/fixtures/inferencex";
  Result<RunnerConfig> r = LoadRunnerConfigFile(IX_INFERENCEX_FIXTURES "/runners.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  Result<std::vector<MatrixEntry>> m = GenerateMatrix(c, r.value(), {});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value().size(), 1355u);
  SweepOptions o;
  o.evals = EvalMode::kOnly;
  EXPECT_EQ(GenerateMatrix(c, r.value(), o).value().size(), 524u);
  o.evals = EvalMode::kAll;
  EXPECT_EQ(GenerateMatrix(c, r.value(), o).value().size(), 1216u);
}

}  // namespace
}  // namespace ix
