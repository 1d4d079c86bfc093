#include "core/matrix/matrix_buckets.h"
#include "core/matrix/matrix_test_util.h"

#include <gtest/gtest.h>

#include <memory>

namespace ix {
namespace {

// An agentic config, a fixed-seq-len one with two sequence lengths and a
// multi-node one.
const std::string kConfig =
    test::MatrixConfigYaml("agentic", "cluster:x",
                           "    agentic-coding:\n"
                           "    - search-space:\n"
                           "      - { tp: 4, conc-list: [8, 2, 4] }\n"
                           "      - { tp: 8, conc-list: [1] }\n") +
    test::MatrixConfigYaml("fixed", "x",
                           "    fixed-seq-len:\n"
                           "    - isl: 8192\n      osl: 1024\n      search-space:\n"
                           "      - { tp: 4, conc-list: [4, 2, 2, 64] }\n"
                           "    - isl: 1000\n      osl: 100\n      search-space:\n"
                           "      - { tp: 4, conc-list: [16] }\n") +
    test::MatrixConfigYaml("multi", "x",
                           "    fixed-seq-len:\n"
                           "    - isl: 8192\n      osl: 1024\n      search-space:\n"
                           "      - conc-list: [32, 8, 16]\n"
                           "        prefill: {num-worker: 1, tp: 4, ep: 1, dp-attn: false}\n"
                           "        decode: {num-worker: 1, tp: 4, ep: 1, dp-attn: false}\n",
                           true);

struct Made {
  MasterConfig config;
  RunnerConfig runners;
  MatrixBuckets buckets;
};

std::unique_ptr<Made> Make(bool trim) {
  auto m = std::make_unique<Made>();
  EXPECT_TRUE(AppendMasterConfigString(kConfig, "m.yaml", m->config).ok());
  m->runners = LoadRunnerConfigString("labels: {x: [n]}\n", "r.yaml").value();
  SweepOptions b, e;
  b.evals = EvalMode::kNone;
  e.evals = EvalMode::kOnly;
  m->buckets = MakeBuckets(GenerateMatrix(m->config, m->runners, b).value(),
                           GenerateMatrix(m->config, m->runners, e).value(), trim);
  return m;
}

std::vector<std::string> Names(const std::vector<Bucket>& b) {
  std::vector<std::string> out;
  for (const Bucket& x : b) out.push_back(x.name);
  return out;
}

std::vector<int64_t> Concs(const std::vector<MatrixEntry>& m) {
  std::vector<int64_t> out;
  for (const MatrixEntry& e : m) out.push_back(e.multinode() ? e.concs[0] : e.conc);
  return out;
}

TEST(MatrixBuckets, GroupsInOrderOfFirstAppearance) {
  auto m = Make(false);
  EXPECT_EQ(Names(m->buckets.single_node), (std::vector<std::string>{"agentic", "8k1k", "1000_100"}));
  EXPECT_EQ(Names(m->buckets.multi_node), (std::vector<std::string>{"8k1k"}));
  EXPECT_EQ(Concs(m->buckets.single_node[0].entries), (std::vector<int64_t>{8, 2, 4, 1}));
  EXPECT_EQ(Concs(m->buckets.evals), (std::vector<int64_t>{64}));
  EXPECT_EQ(Concs(m->buckets.agentic_evals), (std::vector<int64_t>{8}));
  EXPECT_EQ(Concs(m->buckets.multinode_evals), (std::vector<int64_t>{32}));
}

TEST(MatrixBuckets, TrimKeepsTheLowestConcurrencyPerConfig) {
  auto m = Make(true);
  EXPECT_EQ(Concs(m->buckets.single_node[0].entries), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Concs(m->buckets.single_node[1].entries), (std::vector<int64_t>{2}));
  EXPECT_EQ(m->buckets.multi_node[0].entries[0].concs, (std::vector<int64_t>{8}));
  EXPECT_EQ(Concs(m->buckets.evals), (std::vector<int64_t>{64}));  // evals untouched
}

TEST(MatrixBuckets, CanaryIsTheLowest1k1kElse8k1kEntryFirstOnATie) {
  auto m = Make(false);
  CanaryChoice c = ChooseCanary(std::move(m->buckets));
  ASSERT_TRUE(c.canary.has_value());
  EXPECT_EQ(c.canary->conc, 2);
  EXPECT_EQ(Names(c.remaining.single_node), (std::vector<std::string>{"agentic", "8k1k", "1000_100", "1k1k"}));
  EXPECT_EQ(Concs(c.remaining.single_node[1].entries), (std::vector<int64_t>{4, 2, 64}));
  const std::string json = CanaryToJson(c);
  EXPECT_EQ(json.rfind("{\"canary\": [{\"image\": \"img\"", 0), 0u) << json;
  EXPECT_NE(json.find("\"1k1k\": []"), std::string::npos);
}

TEST(MatrixBuckets, NoCandidateNoCanary) {
  MatrixBuckets empty;
  CanaryChoice c = ChooseCanary(std::move(empty));
  EXPECT_FALSE(c.canary.has_value());
  EXPECT_EQ(CanaryToJson(c),
            "{\"canary\": [], \"remaining\": {\"single_node\": {\"1k1k\": [], \"8k1k\": []}, \"multi_node\": {}, "
            "\"evals\": [], \"agentic_evals\": [], \"multinode_evals\": [], \"multinode_agentic_evals\": []}}");
}

}  // namespace
}  // namespace ix
