#include "vllm_mooncake.h"

#include <gtest/gtest.h>

namespace ixfake::vllm {
namespace {

TEST(VllmMooncake, SegmentSizesAsVllmParsesThem) {
  EXPECT_EQ(parse_segment_size("356GB"), 356LL << 30);
  EXPECT_EQ(parse_segment_size(" 4 gb"), 4LL << 30);
  EXPECT_EQ(parse_segment_size("512MB"), 512LL << 20);
  EXPECT_EQ(parse_segment_size("3KB"), 3072);
  EXPECT_EQ(parse_segment_size("100b"), 100);
  EXPECT_EQ(parse_segment_size("1048576"), 1048576);
  EXPECT_EQ(parse_segment_size("GB"), std::nullopt);
  EXPECT_EQ(parse_segment_size("-1GB"), std::nullopt);
  EXPECT_EQ(parse_segment_size("1.5GB"), std::nullopt);
  EXPECT_EQ(parse_segment_size("4TB"), std::nullopt);
}

TEST(VllmMooncake, TheConfigInferenceXWritesAndWhatIsWrongInOne) {
  MooncakeStoreConfig c;
  ASSERT_EQ(parse_mooncake_config(R"({"mode":"embedded","metadata_server":"P2PHANDSHAKE",
      "master_server_address":"127.0.0.1:20001","global_segment_size":"356GB","local_buffer_size":"4GB",
      "protocol":"rdma","device_name":"","enable_offload":false})", c), "");
  EXPECT_EQ(c.segment_bytes, 356LL << 30);
  EXPECT_EQ(c.master_host, "127.0.0.1");
  EXPECT_EQ(c.master_port, 20001);
  ASSERT_EQ(parse_mooncake_config(R"({"master_server_address":"h:1","global_segment_size":4096})", c), "");
  EXPECT_EQ(c.segment_bytes, 4096);
  EXPECT_NE(parse_mooncake_config("[1]", c).find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_mooncake_config(R"({"global_segment_size":"1GB"})", c).find("master_server_address"),
            std::string::npos);
  EXPECT_NE(parse_mooncake_config(R"({"master_server_address":"127.0.0.1"})", c).find("not HOST:PORT"),
            std::string::npos);
  EXPECT_NE(parse_mooncake_config(R"({"master_server_address":"h:1","global_segment_size":"lots"})", c)
                .find("global_segment_size"),
            std::string::npos);
}

}  // namespace
}  // namespace ixfake::vllm
