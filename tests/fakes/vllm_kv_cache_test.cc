#include "vllm_kv_cache.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "vllm_generate.h"
#include "vllm_kv_config.h"
#include "vllm_latency.h"
#include "vllm_metrics.h"

namespace ixfake::vllm {
namespace {

// Tokens 0..n-1 offset by `base`: prompts with the same base share a prefix.
std::vector<std::uint64_t> tokens(int n, std::uint64_t base = 0) {
  std::vector<std::uint64_t> t;
  for (int i = 0; i < n; ++i) t.push_back(base + static_cast<std::uint64_t>(i));
  return t;
}

KvCacheConfig small(long long gpu_blocks, long long cpu_blocks = 0) {
  KvCacheConfig c;
  c.gpu_blocks = gpu_blocks;
  if (cpu_blocks > 0) {
    c.tier = TierKind::kCpuOffload;
    c.cpu_blocks = cpu_blocks;
  }
  return c;
}

// Admits a prompt of n tokens (block size 16) and returns its admission.
KvAdmission run(KvCache& cache, int n, std::uint64_t base = 0, int answer = 0) {
  return cache.admit(block_hashes(tokens(n, base), 16), n, answer);
}

TEST(VllmKvCache, BlockHashesAreChainedOverWholeBlocks) {
  const auto a = block_hashes(tokens(40), 16);
  ASSERT_EQ(a.size(), 2u);  // the partial third block has no hash
  EXPECT_NE(a[0], a[1]);
  auto other = tokens(40);
  other[0] = 999;  // the first token differs: every later block differs too
  const auto b = block_hashes(other, 16);
  EXPECT_NE(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
  auto tail = tokens(40);
  tail[20] = 999;  // only the second block differs
  const auto c = block_hashes(tail, 16);
  EXPECT_EQ(a[0], c[0]);
  EXPECT_NE(a[1], c[1]);
  EXPECT_EQ(block_hashes(tokens(15), 16).size(), 0u);
  EXPECT_EQ(block_hashes(tokens(64), 16), block_hashes(tokens(64), 16));
}

TEST(VllmKvCache, ASecondRequestHitsTheLongestCachedPrefixButComputesTheLastToken) {
  KvCache cache(small(100));
  KvAdmission first = run(cache, 64);
  EXPECT_EQ(first.gpu_hit_tokens, 0);
  EXPECT_EQ(first.computed_tokens, 64);
  cache.release(first.id);
  // 64 tokens are 4 whole blocks, but the last token is always computed.
  KvAdmission again = run(cache, 64);
  EXPECT_EQ(again.gpu_hit_tokens, 48);
  EXPECT_EQ(again.computed_tokens, 16);
  cache.release(again.id);
  KvAdmission longer = run(cache, 100);  // the same 64, then more
  EXPECT_EQ(longer.gpu_hit_tokens, 64);
  EXPECT_EQ(longer.computed_tokens, 36);
  cache.release(longer.id);
  KvAdmission other = run(cache, 100, 1000);
  EXPECT_EQ(other.gpu_hit_tokens, 0);
  const KvCounters& k = cache.snapshot().counters;
  EXPECT_EQ(k.queries, 64u + 64 + 100 + 100);
  EXPECT_EQ(k.hits, 48u + 64);
  EXPECT_EQ(k.ext_queries, 0u);  // no tier
}

TEST(VllmKvCache, UsageCountsOnlyBlocksHeldByRunningRequests) {
  KvCache cache(small(10));
  KvAdmission a = run(cache, 40, 0, 8);  // 48 tokens: 3 blocks (2 hashed, 1 anonymous)
  EXPECT_EQ(cache.held_blocks(), 3);
  EXPECT_DOUBLE_EQ(cache.snapshot().gpu_usage, 0.3);
  KvAdmission b = run(cache, 40, 0, 8);  // shares the 2 hashed blocks, holds 1 more
  EXPECT_EQ(b.gpu_hit_tokens, 32);
  EXPECT_EQ(cache.held_blocks(), 4);
  cache.release(a.id);
  EXPECT_EQ(cache.held_blocks(), 3);  // the shared blocks are still held by b
  cache.release(b.id);
  EXPECT_EQ(cache.held_blocks(), 0);
  EXPECT_DOUBLE_EQ(cache.snapshot().gpu_usage, 0);
  EXPECT_EQ(cache.cached_blocks(), 2);  // still cached for the next one
  cache.release(b.id);                  // twice: ignored
  EXPECT_EQ(cache.held_blocks(), 0);
}

TEST(VllmKvCache, EvictsTheLeastRecentlyReleasedTailFirst) {
  KvCache cache(small(4));
  const auto a = block_hashes(tokens(33, 0), 16);     // 2 whole blocks + 1 partial
  const auto b = block_hashes(tokens(33, 500), 16);
  cache.release(cache.admit(a, 33, 0).id);
  cache.release(cache.admit(b, 33, 0).id);
  // 4 blocks, all cached and free; a 3-block prompt needs 3: a's two (released
  // first) and then b's tail go.
  const auto c = block_hashes(tokens(33, 900), 16);
  KvAdmission ca = cache.admit(c, 33, 0);
  EXPECT_FALSE(cache.on_gpu(a[0]));
  EXPECT_FALSE(cache.on_gpu(a[1]));
  EXPECT_TRUE(cache.on_gpu(b[0]));  // the head of b's prefix outlives its tail
  EXPECT_FALSE(cache.on_gpu(b[1]));
  cache.release(ca.id);
  KvAdmission bb = cache.admit(b, 33, 0);
  EXPECT_EQ(bb.gpu_hit_tokens, 16);
}

TEST(VllmKvCache, HeldBlocksAreNeverEvictedAndAFullPoolStillRuns) {
  KvCache cache(small(3));
  KvAdmission a = run(cache, 48);  // 3 blocks, all held
  EXPECT_EQ(cache.held_blocks(), 3);
  KvAdmission b = run(cache, 48, 700);  // nothing free, nothing evictable
  EXPECT_EQ(b.computed_tokens, 48);
  EXPECT_EQ(cache.held_blocks(), 3);
  EXPECT_DOUBLE_EQ(cache.snapshot().gpu_usage, 1.0);
  cache.release(b.id);
  cache.release(a.id);
  EXPECT_EQ(run(cache, 48).gpu_hit_tokens, 32);  // a's blocks survived
}

TEST(VllmKvCache, WithoutPrefixCachingNothingHits) {
  KvCacheConfig cfg = small(100);
  cfg.prefix_caching = false;
  KvCache cache(cfg);
  cache.release(run(cache, 64).id);
  KvAdmission again = run(cache, 64, 0, 16);
  EXPECT_EQ(again.gpu_hit_tokens, 0);
  EXPECT_EQ(cache.held_blocks(), 5);
  EXPECT_EQ(cache.snapshot().counters.queries, 0u);
}

TEST(VllmKvCache, TheCpuTierKeepsWhatTheGpuEvictsAndLoadsItBack) {
  KvCache cache(small(4, 8));
  const auto a = block_hashes(tokens(64), 16);
  cache.release(cache.admit(a, 64, 0).id);  // 4 blocks cached
  cache.release(run(cache, 64, 5000).id);   // evicts all of a's to the CPU
  EXPECT_FALSE(cache.on_gpu(a[0]));
  EXPECT_TRUE(cache.on_cpu(a[0]));
  KvCounters k = cache.snapshot().counters;
  EXPECT_EQ(k.bytes_gpu_to_cpu, 4u * 16 * kKvBytesPerToken);
  EXPECT_DOUBLE_EQ(k.time_gpu_to_cpu_s, 4.0 * 16 * kKvBytesPerToken / kOffloadBytesPerS);
  EXPECT_DOUBLE_EQ(cache.snapshot().cpu_usage, 0.5);

  KvAdmission back = cache.admit(a, 64, 0);
  EXPECT_EQ(back.gpu_hit_tokens, 0);
  EXPECT_EQ(back.cpu_hit_tokens, 48);  // the last token is still computed
  EXPECT_EQ(back.computed_tokens, 16);
  k = cache.snapshot().counters;
  EXPECT_EQ(k.ext_queries, 3u * 64);
  EXPECT_EQ(k.ext_hits, 48u);
  EXPECT_EQ(k.hits, 0u);
  EXPECT_EQ(k.bytes_cpu_to_gpu, 3u * 16 * kKvBytesPerToken);
  EXPECT_GT(k.time_cpu_to_gpu_s, 0);
  cache.release(back.id);
  // Now on the GPU again: a local hit.
  EXPECT_EQ(cache.admit(a, 64, 0).gpu_hit_tokens, 48);
}

TEST(VllmKvCache, TheCpuTierDropsItsLeastRecentlyUsedBlocks) {
  KvCache cache(small(2, 2));
  cache.release(run(cache, 32, 0).id);
  cache.release(run(cache, 32, 100).id);  // the first 2 go to the CPU
  cache.release(run(cache, 32, 200).id);  // the next 2 push them out
  EXPECT_EQ(run(cache, 33, 0).cpu_hit_tokens, 0);
  EXPECT_DOUBLE_EQ(cache.snapshot().cpu_usage, 1.0);
}

TEST(VllmKvConfig, DefaultsFlagsAndSwitches) {
  KvCacheConfig c;
  ASSERT_EQ(make_kv_config(KvFlags{}, c), "");
  EXPECT_EQ(c.block_size, 16);
  EXPECT_EQ(c.gpu_blocks, kDefaultGpuBlocks);
  EXPECT_EQ(c.tier, TierKind::kNone);
  EXPECT_TRUE(c.prefix_caching);
  KvFlags f;
  f.block_size = 64;
  f.env_gpu_blocks = 50;
  ASSERT_EQ(make_kv_config(f, c), "");
  EXPECT_EQ(c.gpu_blocks, 50);
  EXPECT_EQ(c.gpu_tokens(), 3200);
  EXPECT_EQ(c.bytes_per_block, 64 * kKvBytesPerToken);
  f.gpu_blocks = 7;  // --num-gpu-blocks-override wins over the switch
  ASSERT_EQ(make_kv_config(f, c), "");
  EXPECT_EQ(c.gpu_blocks, 7);
}

TEST(VllmKvConfig, OffloadConnectorsGiveATier) {
  KvCacheConfig c;
  KvFlags f;
  f.kv_transfer = R"({"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both",
                      "kv_connector_extra_config":{"cpu_bytes_to_use":10737418240}})";
  ASSERT_EQ(make_kv_config(f, c), "");
  EXPECT_EQ(c.tier, TierKind::kCpuOffload);
  EXPECT_EQ(c.cpu_blocks, 10737418240LL / (16 * kKvBytesPerToken));
  f.kv_transfer = R"({"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both","kv_connector_extra_config":
                      {"cpu_bytes_to_use":549755813888,"cpu_bytes_to_use_per_rank":1048576,"lazy_offload":false}})";
  ASSERT_EQ(make_kv_config(f, c), "");
  EXPECT_EQ(c.cpu_blocks, 1);
  f.kv_transfer = R"({"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"})";
  ASSERT_EQ(make_kv_config(f, c), "");
  EXPECT_EQ(c.tier, TierKind::kMooncakeStore);
  EXPECT_EQ(c.cpu_blocks, kDefaultMooncakeBytes / (16 * kKvBytesPerToken));
  f.env_mooncake_bytes = 4 * 16 * kKvBytesPerToken;
  f.kv_transfer = R"({"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[
      {"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"fail"},
      {"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both",
       "kv_connector_extra_config":{"load_async":true}}]}})";
  ASSERT_EQ(make_kv_config(f, c), "");
  EXPECT_EQ(c.tier, TierKind::kMooncakeStore);
  EXPECT_EQ(c.connector, "MooncakeStoreConnector");
  EXPECT_EQ(c.cpu_blocks, 4);
  f.kv_transfer = R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})";
  ASSERT_EQ(make_kv_config(f, c), "");
  EXPECT_EQ(c.tier, TierKind::kNone);
}

TEST(VllmKvConfig, WhatVllmRefusesIsAnError) {
  KvCacheConfig c;
  KvFlags f;
  auto error = [&](const char* json) {
    f.kv_transfer = json;
    return make_kv_config(f, c);
  };
  EXPECT_EQ(error(R"({"kv_connector":"FooConnector","kv_role":"kv_both"})"),
            "Unsupported connector type: FooConnector");
  EXPECT_EQ(error(R"({"kv_connector":"FooConnector","kv_role":"kv_both","kv_connector_module_path":"x.y"})"), "");
  EXPECT_NE(error(R"({"kv_connector":"NixlConnector"})").find("Please specify kv_role"), std::string::npos);
  EXPECT_NE(error(R"({"kv_connector":"NixlConnector","kv_role":"both"})").find("Unsupported kv_role: both"),
            std::string::npos);
  EXPECT_NE(error(R"({"kv_connector":"NixlConnector","kv_role":"kv_both","cpu_bytes":1})").find("cpu_bytes"),
            std::string::npos);
  EXPECT_NE(error(R"({"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both"})").find("cpu_bytes_to_use"),
            std::string::npos);
  EXPECT_NE(error(R"({"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both",
                      "kv_connector_extra_config":{"cpu_bytes_to_use":100}})")
                .find("less than one KV block"),
            std::string::npos);
  EXPECT_NE(error(R"({"kv_connector":"MultiConnector","kv_role":"kv_both"})").find("connectors"), std::string::npos);
  EXPECT_NE(error("[1]").find("JSON object"), std::string::npos);
  EXPECT_NE(error("{nope").find("invalid loads value"), std::string::npos);
}

TEST(VllmKvConfig, TokenCountsWithThousandsSeparators) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1000), "1,000");
  EXPECT_EQ(with_thousands(1234560), "1,234,560");
}

TEST(VllmKvCache, AChatPromptHashesOneTokenPerCountedTokenAndTurnsShareTheirPrefix) {
  auto hashes_of = [](const char* json, int& n) {
    rapidjson::Document d;
    d.Parse(json);
    std::string text;
    std::vector<std::uint64_t> h;
    EXPECT_EQ(read_prompt(d, true, text, n, &h), "");
    return h;
  };
  int n1 = 0;
  int n2 = 0;
  const auto t1 = hashes_of(R"({"messages":[{"role":"user","content":"a b c d e f g h i j k l m n o p q r"}]})", n1);
  const auto t2 = hashes_of(R"({"messages":[{"role":"user","content":"a b c d e f g h i j k l m n o p q r"},
                                {"role":"assistant","content":"fine"},{"role":"user","content":"more"}]})",
                            n2);
  EXPECT_EQ(static_cast<int>(t1.size()), n1);
  EXPECT_EQ(static_cast<int>(t2.size()), n2);
  ASSERT_GE(t2.size(), t1.size());
  EXPECT_TRUE(std::equal(t1.begin(), t1.end(), t2.begin()));
  rapidjson::Document d;
  d.Parse(R"({"prompt":["x y", 7]})");
  std::string text;
  int n = 0;
  std::vector<std::uint64_t> h;
  ASSERT_EQ(read_prompt(d, false, text, n, &h), "");
  EXPECT_EQ(h.size(), 3u);
  EXPECT_EQ(n, 3);
}

TEST(VllmKvCache, PrefillChargesComputedTokensAndLoadsAtTheirOwnRate) {
  const LatencyModel m{0.001, 0, 0.02, 0.002};
  EXPECT_DOUBLE_EQ(m.prefill_s(1000, 1), 0.02);
  EXPECT_NEAR(m.prefill_s(250, 1, 750), 0.02 * 0.25 + 0.002 * 0.75, 1e-12);
  EXPECT_FALSE((LatencyModel{0, 0, 0, 0.001}).zero());
  TokenPacer hit(m, 10.0, 100, 0);
  TokenPacer cold(m, 10.0, 1000, 0);
  EXPECT_LT(hit.next_due(1), cold.next_due(1));
}

TEST(VllmKvCache, MetricsShowTheCacheAndTheTierOnlyWhenConfigured) {
  std::map<int, RankStats> stats;
  stats[0].prompt_tokens = 100;
  stats[0].prompt_local_hit = 64;
  stats[0].prompt_local_compute = 36;
  stats[0].kv.counters.queries = 100;
  stats[0].kv.counters.hits = 64;
  stats[0].kv.gpu_usage = 0.25;
  const std::string plain = render_metrics(stats, "m", 0, 4096);
  EXPECT_NE(plain.find("# TYPE vllm:prefix_cache_queries_total counter\n"), std::string::npos);
  EXPECT_NE(plain.find("vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 100.0\n"), std::string::npos);
  EXPECT_NE(plain.find("vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 64.0\n"), std::string::npos);
  const std::string by_source = "vllm:prompt_tokens_by_source_total{engine=\"0\",model_name=\"m\",source=";
  EXPECT_NE(plain.find(by_source + "\"local_cache_hit\"} 64.0\n"), std::string::npos);
  EXPECT_NE(plain.find(by_source + "\"local_compute\"} 36.0\n"), std::string::npos);
  EXPECT_NE(plain.find(by_source + "\"external_kv_transfer\"} 0.0\n"), std::string::npos);
  EXPECT_NE(plain.find("vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.250000\n"), std::string::npos);
  EXPECT_EQ(plain.find("external_prefix_cache"), std::string::npos);
  EXPECT_EQ(plain.find("kv_offload"), std::string::npos);
  EXPECT_EQ(plain.find("cpu_kv_cache_usage_perc"), std::string::npos);

  KvCacheConfig tier = small(10, 20);
  stats[0].kv.has_tier = true;
  stats[0].kv.cpu_usage = 0.5;
  stats[0].kv.counters.bytes_gpu_to_cpu = 2048;
  stats[0].kv.counters.time_cpu_to_gpu_s = 0.125;
  const std::string with = render_metrics(stats, "m", 0, 4096, tier);
  for (const char* line :
       {"vllm:external_prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:external_prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:cpu_kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.500000\n",
        "vllm:kv_offload_bytes_gpu_to_cpu_total{engine=\"0\",model_name=\"m\"} 2048.0\n",
        "vllm:kv_offload_bytes_cpu_to_gpu_total{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:kv_offload_time_gpu_to_cpu_total{engine=\"0\",model_name=\"m\"} 0.000000\n",
        "vllm:kv_offload_time_cpu_to_gpu_total{engine=\"0\",model_name=\"m\"} 0.125000\n",
        "num_cpu_blocks=\"20\""}) {
    EXPECT_NE(with.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace ixfake::vllm
