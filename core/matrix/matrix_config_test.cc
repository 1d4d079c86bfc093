#include "core/matrix/matrix_config.h"
#include "tests/support/test.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

// One config of each shape; tests break one rule at a time.
const char kConfig[] = R"(sn-fixed:
  image: img:1
  model: org/model
  model-prefix: m
  runner: b300
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 4, conc-start: 1, conc-end: 32 }
sn-agentic:
  image: img:1
  model: org/model
  model-prefix: m
  runner: cluster:b300-nv
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.95
      search-space:
      - { tp: 8, dcp-size: 4, kv-offloading: dram, kv-offload-backend: {name: simple}, conc-list: [4, 2, 4] }
mn-fixed:
  image: img:1
  model: org/model
  model-prefix: m
  runner: gb300
  precision: fp4
  framework: dynamo-vllm
  multinode: true
  disagg: true
  router: { version: "1.0", name: dynamo-router }
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - conc-list: [8, 16]
        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true, pp: 2, additional-settings: ["A=1"] }
        decode: { num-worker: 0, tp: 8, ep: 1, dp-attn: false }
mn-agentic:
  image: img:1
  model: org/model
  model-prefix: m
  runner: cluster:gb300-nv
  precision: fp4
  framework: dynamo-vllm
  multinode: true
  kv-p2p-transfer: nixl
  scenarios:
    agentic-coding:
    - search-space:
      - conc-list: [1]
        prefill: { num-worker: 1, tp: 4, ep: 1, dp-attn: false }
        decode: { num-worker: 1, tp: 4, ep: 1, dp-attn: false }
)";

std::string LoadError(const std::string& text) {
  MasterConfig c;
  Status s = AppendMasterConfigString(text, "m.yaml", c);
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.error().message;
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// Each change of kConfig, one at a time, is a load error holding its part.
void ExpectErrors(std::initializer_list<test::TextChange> changes) {
  test::ExpectChangeErrors(kConfig, changes, LoadError);
}

TEST(MatrixConfig, TheExampleLoadsWithDefaultsAndOrder) {
  MasterConfig c;
  Status s = AppendMasterConfigString(kConfig, "m.yaml", c);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(c.entries.size(), 4u);
  const ConfigEntry& sn = *c.Find("sn-fixed");
  const SearchSpaceEntry& e = sn.scenarios[0].rows[0].search_space[0];
  EXPECT_EQ(e.ep, 1);
  EXPECT_FALSE(e.dp_attn);
  EXPECT_EQ(e.spec_decoding, "none");
  EXPECT_EQ(e.path, "scenarios.fixed-seq-len[0].search-space[0]");
  const ConfigEntry& ag = *c.Find("sn-agentic");
  EXPECT_EQ(ag.scenarios[0].rows[0].search_space[0].conc_list, (std::vector<int64_t>{4, 2, 4}));
  EXPECT_EQ(ag.scenarios[0].rows[0].duration, 3600);
  const ConfigEntry& mn = *c.Find("mn-fixed");
  EXPECT_TRUE(mn.router->version_first);
  using F = WorkerSpec::Field;
  EXPECT_EQ(mn.scenarios[0].rows[0].search_space[0].prefill.order,
            (std::vector<F>{F::kNumWorker, F::kTp, F::kEp, F::kDpAttn, F::kPp, F::kAdditionalSettings}));
  EXPECT_EQ(c.Find("mn-agentic")->kv_p2p_transfer, "nixl");
}

TEST(MatrixConfig, UnknownKeysAreRejectedEverywhere) {
  ExpectErrors({
      {"  precision: fp4\n  framework: vllm\n  multinode: false\n  scenarios:\n    fixed",
       "  precision: fp4\n  framework: vllm\n  multinode: false\n  colour: red\n  scenarios:\n    fixed",
       "m.yaml:9:3: sn-fixed: field 'colour': Extra inputs are not permitted (unknown field; allowed: image,"},
      {"{ tp: 4, conc-start", "{ tp: 4, tpp: 2, conc-start",
       "sn-fixed: field 'scenarios.fixed-seq-len[0].search-space[0].tpp': Extra inputs are not permitted"},
      {"pp: 2,", "pp: 2, colour: 1,",
       "mn-fixed: field 'scenarios.fixed-seq-len[0].search-space[0].prefill.colour': Extra inputs"},
      {"{name: simple}", "{name: simple, size: 1}",
       "field 'scenarios.agentic-coding[0].search-space[0].kv-offload-backend.size': Extra inputs"},
      {"    - isl: 8192\n      osl: 1024\n", "    - isl: 8192\n      osl: 1024\n      duration: 5\n",
       "field 'scenarios.fixed-seq-len[0].duration': Extra inputs"},
      {"    fixed-seq-len:\n    - isl: 8192", "    fixed:\n    - isl: 8192",
       "field 'scenarios.fixed': Extra inputs are not permitted (unknown field; allowed: fixed-seq-len, agentic-coding)"},
  });
}

TEST(MatrixConfig, RangeAndListTogetherOrNeither) {
  ExpectErrors({
      {"conc-start: 1, conc-end: 32", "conc-start: 1, conc-end: 32, conc-list: [1]",
       "m.yaml:14:9: sn-fixed: field 'scenarios.fixed-seq-len[0].search-space[0]': Cannot specify both "
       "'conc-list' and 'conc-start'/'conc-end'"},
      {"conc-start: 1, conc-end: 32", "conc-start: 1",
       "Must specify either 'conc-list' or both 'conc-start' and 'conc-end'"},
      {"conc-list: [4, 2, 4]", "conc-list: []", "conc-list must not be empty"},
  });
}

TEST(MatrixConfig, StartAfterEnd) {
  ExpectErrors({
      {"conc-start: 1, conc-end: 32", "conc-start: 64, conc-end: 32",
       "field 'scenarios.fixed-seq-len[0].search-space[0].conc-start': conc-start (64) must be <= conc-end (32)"},
  });
}

TEST(MatrixConfig, NonPositiveValues) {
  ExpectErrors({
      {"{ tp: 4,", "{ tp: 0,",
       "field 'scenarios.fixed-seq-len[0].search-space[0].tp': Input should be greater than 0, got 0"},
      {"conc-list: [4, 2, 4]", "conc-list: [4, -2]",
       "field 'scenarios.agentic-coding[0].search-space[0].conc-list[1]': Input should be greater than 0, got -2"},
      {"    - isl: 8192", "    - isl: 0", "field 'scenarios.fixed-seq-len[0].isl'"},
      {"num-worker: 0", "num-worker: -1", "decode.num-worker': Input should be greater than or equal to 0, got -1"},
      {"dram-utilization: 0.95", "dram-utilization: 1.5",
       "dram-utilization is a fraction of host DRAM and must be in (0, 1], got 1.5"},
  });
}

TEST(MatrixConfig, WrongTypes) {
  ExpectErrors({
      {"{ tp: 4,", "{ tp: four,", "Input should be a valid integer, got a string 'four'"},
      {"  multinode: false\n  scenarios:\n    fixed", "  multinode: maybe\n  scenarios:\n    fixed",
       "field 'multinode': Input should be a valid boolean, got a string 'maybe'"},
      {"  precision: fp4\n  framework: vllm\n  multinode: false\n  scenarios:\n    fixed",
       "  precision: 8\n  framework: vllm\n  multinode: false\n  scenarios:\n    fixed",
       "field 'precision': Input should be a valid string, got an integer (8)"},
      {"version: \"1.0\"", "version: 1.0",
       "field 'router.version': Input should be a valid string, got a number (1.0)"},
      {"kv-offloading: dram", "kv-offloading: ssd", "Input should be 'none', 'dram', got 'ssd'"},
  });
}

TEST(MatrixConfig, AgenticRunnerMustBeACluster) {
  ExpectErrors({
      {"runner: cluster:b300-nv", "runner: b300",
       "m.yaml:19:11: sn-agentic: field 'runner': agentic-coding scenarios run only on cluster runners: runner "
       "'b300' must start with 'cluster:'"},
  });
}

TEST(MatrixConfig, DramOffloadNeedsDramUtilization) {
  ExpectErrors({
      {"    - dram-utilization: 0.95\n      search-space:", "    - search-space:",
       "field 'scenarios.agentic-coding[0].search-space[0].kv-offloading': kv-offloading: dram needs "
       "'dram-utilization'"},
  });
}

TEST(MatrixConfig, RouterScope) {
  ExpectErrors({
      {"      - conc-list: [8, 16]\n", "      - conc-list: [8, 16]\n        router: {name: r}\n",
       "router scope: a router is given both for the config (at m.yaml:37:11) and in this search-space entry"},
      {"  runner: b300\n", "  runner: b300\n  router: {name: r}\n",
       "sn-fixed: field 'router': router scope: a config-level router applies to multinode configs only"},
  });
}

TEST(MatrixConfig, KvP2pTransferOnlyForMultinode) {
  ExpectErrors({
      {"  runner: b300\n", "  runner: b300\n  kv-p2p-transfer: nixl\n",
       "sn-fixed: field 'kv-p2p-transfer': kv-p2p-transfer is only for multinode configs"},
      {"{ tp: 4, conc-start", "{ tp: 4, kv-p2p-transfer: nixl, conc-start",
       "field 'scenarios.fixed-seq-len[0].search-space[0].kv-p2p-transfer': kv-p2p-transfer is only for multinode"},
      {"      - conc-list: [1]\n", "      - conc-list: [1]\n        kv-p2p-transfer: ucx\n",
       "kv-p2p-transfer is given both for the config and in this search-space entry"},
  });
}

TEST(MatrixConfig, TpDivisibleByDcpSize) {
  ExpectErrors({
      {"tp: 8, dcp-size: 4", "tp: 8, dcp-size: 3",
       "field 'scenarios.agentic-coding[0].search-space[0]': tp (8) must be divisible by dcp-size (3)"},
      {"tp: 4, ep: 4, dp-attn: true, pp: 2", "tp: 4, ep: 4, dp-attn: true, pp: 2, dcp-size: 8",
       "field 'scenarios.fixed-seq-len[0].search-space[0].prefill': tp (4) must be divisible by dcp-size (8)"},
  });
}

TEST(MatrixConfig, ShapeMustMatchMultinode) {
  ExpectErrors({
      {"      - conc-list: [1]\n        prefill: { num-worker: 1, tp: 4, ep: 1, dp-attn: false }\n"
       "        decode: { num-worker: 1, tp: 4, ep: 1, dp-attn: false }\n",
       "      - { tp: 4, conc-list: [1] }\n",
       "mn-agentic: field 'scenarios.agentic-coding[0].search-space[0]': this search-space entry has the "
       "single-node shape ('tp') but the config says multinode: true"},
      {"{ tp: 4, conc-start: 1, conc-end: 32 }",
       "{ prefill: {num-worker: 1, tp: 1, ep: 1, dp-attn: false}, conc-list: [1] }",
       "has the multinode shape ('prefill'/'decode') but the config says multinode: false"},
  });
}

TEST(MatrixConfig, WildcardInAKey) {
  ExpectErrors({
      {"sn-fixed:", "sn-*:", "m.yaml:1:1: config key 'sn-*' contains the wildcard character '*'"},
      {"sn-fixed:", "sn-fixed?:", "wildcard character '?'"},
  });
}

TEST(MatrixConfig, DuplicateKeysAcrossFiles) {
  MasterConfig c;
  ASSERT_TRUE(AppendMasterConfigString(kConfig, "a.yaml", c).ok());
  Status s = AppendMasterConfigString("x: 1\nsn-agentic: {}\n", "b.yaml", c);
  ASSERT_FALSE(s.ok());
  // The first file's entries stay; the second adds nothing.
  EXPECT_EQ(c.entries.size(), 4u);
  EXPECT_NE(s.error().message.find("b.yaml:1:4: x:"), std::string::npos) << s.error().message;
  MasterConfig d;
  ASSERT_TRUE(AppendMasterConfigString(kConfig, "a.yaml", d).ok());
  Status t = AppendMasterConfigString(test::ReplaceOnce(kConfig, "mn-agentic:", "other:"), "b.yaml", d);
  ASSERT_FALSE(t.ok());
  EXPECT_HAS(t.error().message, "b.yaml:1:1: config key 'sn-fixed' is defined twice: first at a.yaml:1:1");
}

TEST(MatrixConfig, DuplicateKeyInOneFile) {
  EXPECT_HAS(LoadError(std::string(kConfig) + "sn-fixed: {}\n"), "mapping key 'sn-fixed' is given twice");
}

TEST(MatrixConfig, EmptyNonMappingCorruptedAndMissingFiles) {
  EXPECT_EQ(LoadError(""), "m.yaml: file is empty, expected a mapping of config keys");
  const std::pair<const char*, const char*> kBroken[] = {  // the YAML, and what its error says
      {"- a\n- b\n", "m.yaml:1:1: a master config must be a mapping of config keys to configs, got a list"},
      {"just some text\n", "got a string 'just some text'"},
      {"a: [1,\n  b: {\n", "m.yaml:"},
      {"a: [1,\n  b: {\n", "not valid YAML"},
      {"sn-fixed: 3\n", "sn-fixed: Input should be a valid dictionary (a mapping), got an integer (3)"},
  };
  for (const auto& [yaml, expected] : kBroken) EXPECT_HAS(LoadError(yaml), expected);
  MasterConfig c;
  Status s = AppendMasterConfigFile("/nonexistent/master.yaml", c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "/nonexistent/master.yaml: cannot open: No such file or directory");
}

TEST(MatrixConfig, MissingRequiredFields) {
  ExpectErrors({
      {"  image: img:1\n  model: org/model\n  model-prefix: m\n  runner: b300\n",
       "  model: org/model\n  model-prefix: m\n  runner: b300\n",
       "sn-fixed: field 'image': Field required"},
      {"decode: { num-worker: 0, tp: 8, ep: 1, dp-attn: false }", "decode: { num-worker: 0, tp: 8, ep: 1 }",
       "field 'scenarios.fixed-seq-len[0].search-space[0].decode.dp-attn': Field required"},
  });
}

TEST(MatrixConfig, TheFixtureLoads) {
  Result<MasterConfig> c = LoadMasterConfigFiles({IX_INFERENCEX_FIXTURES "/nvidia-master.yaml"});
  ASSERT_TRUE(c.ok()) << c.error().message << " (are the InferenceX fixtures in ../shared?)";
  EXPECT_EQ(c.value().entries.size(), 152u);
}

}  // namespace
}  // namespace ix
