#include "core/matrix/matrix_json.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

std::string Str(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

TEST(MatrixJson, EscapesLikePythonEnsureAscii) {
  EXPECT_EQ(Str("plain-ascii:1.0 /x"), "\"plain-ascii:1.0 /x\"");
  EXPECT_EQ(Str("q\"b\\"), "\"q\\\"b\\\\\"");
  EXPECT_EQ(Str("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Str(std::string_view("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(Str("caf\xc3\xa9"), "\"caf\\u00e9\"");                   // é
  EXPECT_EQ(Str("\xe2\x89\x88"), "\"\\u2248\"");                     // ≈
  EXPECT_EQ(Str("\xf0\x9f\x9a\x80"), "\"\\ud83d\\ude80\"");          // U+1F680, a surrogate pair
  EXPECT_EQ(Str("/"), "\"/\"");                                      // not escaped by Python
}

TEST(MatrixJson, Ints) {
  std::string out;
  AppendJsonInt(out, -9223372036854775807LL - 1);
  EXPECT_EQ(out, "-9223372036854775808");
}

TEST(MatrixJson, EntryKeyOrderOfTheReference) {
  MasterConfig c;
  ASSERT_TRUE(AppendMasterConfigString(R"(k:
  image: "img:\u00e9"
  model: m
  model-prefix: p
  runner: gb300
  precision: fp4
  framework: f
  multinode: true
  disagg: true
  kv-p2p-transfer: nixl
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - conc-list: [4, 32]
        router: {name: r, version: "1"}
        prefill: {tp: 4, num-worker: 1, dcp-size: 2, ep: 1, dp-attn: false}
        decode: {num-worker: 1, tp: 4, ep: 4, dp-attn: true, additional-settings: [A=1]}
)",
                                       "m.yaml", c)
                  .ok());
  Result<RunnerConfig> r = LoadRunnerConfigString("labels: {gb300: [n]}\n", "r.yaml");
  ASSERT_TRUE(r.ok());
  Result<std::vector<MatrixEntry>> m = GenerateMatrix(c, r.value(), {});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(MatrixToJson(m.value()),
            "[{\"image\": \"img:\\u00e9\", \"model\": \"m\", \"model-prefix\": \"p\", \"precision\": \"fp4\", "
            "\"framework\": \"f\", \"runner\": \"gb300\", \"isl\": 8192, \"osl\": 1024, \"spec-decoding\": \"none\", "
            "\"prefill\": {\"tp\": 4, \"num-worker\": 1, \"dcp-size\": 2, \"ep\": 1, \"dp-attn\": false, \"pp\": 1, "
            "\"pcp-size\": 1}, \"decode\": {\"num-worker\": 1, \"tp\": 4, \"ep\": 4, \"dp-attn\": true, "
            "\"additional-settings\": [\"A=1\"], \"pp\": 1, \"dcp-size\": 1, \"pcp-size\": 1}, \"conc\": [4, 32], "
            "\"max-model-len\": 9472, \"exp-name\": \"p_8k1k\", \"disagg\": true, \"run-eval\": true, \"router\": "
            "{\"name\": \"r\", \"version\": \"1\"}, \"kv-p2p-transfer\": \"nixl\", \"eval-conc\": 32}]");
}

}  // namespace
}  // namespace ix
