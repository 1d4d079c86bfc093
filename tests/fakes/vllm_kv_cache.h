// One data-parallel rank's KV cache as vLLM's prefix caching keeps it
// (tests/fakes/README.md, "KV cache"): the prompt split into blocks of
// block_size tokens, each block named by a hash chained on the previous
// one, so equal hashes mean equal prefixes; a fixed pool of GPU blocks whose
// unheld cached blocks are evicted least recently used first; and, with a
// --kv-transfer-config offload or Mooncake store connector, a CPU tier of
// blocks behind it that receives what the GPU evicts. Pure: no clock, no
// I/O, no lock (the caller serialises, vllm_api.h).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "vllm_kv_config.h"

namespace ixfake::vllm {

// The chained hashes of the whole blocks of a prompt given as one hash per
// token (vllm_generate.h, read_prompt): block i's hash covers its tokens and
// block i - 1's hash; a partial last block has none (vLLM hashes only full
// blocks).
std::vector<std::uint64_t> block_hashes(const std::vector<std::uint64_t>& token_hashes, int block_size);

// What the cache has counted since start (vLLM's counters, per rank).
// Invariants: hits <= queries, ext_hits <= ext_queries (tokens); bytes and
// seconds only grow; the ext_ and offload fields stay 0 without a tier.
struct KvCounters {
  unsigned long long queries = 0;      // vllm:prefix_cache_queries: prompt tokens looked up
  unsigned long long hits = 0;         // vllm:prefix_cache_hits: of them found on the GPU
  unsigned long long ext_queries = 0;  // vllm:external_prefix_cache_queries
  unsigned long long ext_hits = 0;     // vllm:external_prefix_cache_hits: found on the CPU tier
  unsigned long long bytes_gpu_to_cpu = 0;
  unsigned long long bytes_cpu_to_gpu = 0;
  double time_gpu_to_cpu_s = 0;
  double time_cpu_to_gpu_s = 0;
};

// What /metrics shows of one rank's cache at a moment.
struct KvSnapshot {
  KvCounters counters;
  double gpu_usage = 0;     // blocks held by running requests / GPU blocks
  bool has_tier = false;
  double cpu_usage = 0;     // blocks stored / CPU blocks
};

// The prompt's place in the cache at admission. Invariant: gpu_hit_tokens +
// cpu_hit_tokens + computed_tokens == the prompt's tokens, computed_tokens
// >= 1 for a non-empty prompt (vLLM always computes the last token), the
// hits are whole blocks.
struct KvAdmission {
  std::uint64_t id = 0;  // for release
  int gpu_hit_tokens = 0;
  int cpu_hit_tokens = 0;  // loaded from the CPU tier
  int computed_tokens = 0;
};

// One rank's cache. Invariants: every GPU block is free, cached (a hash,
// held by ref running requests or, at ref 0, in lru_ for eviction) or
// anonymous (held, no hash: a partial block or the answer's); cached +
// anonymous <= gpu_blocks; a held block is never evicted; the CPU tier holds
// at most cpu_blocks hashes, least recently used dropped first.
class KvCache {
 public:
  explicit KvCache(const KvCacheConfig& cfg) : cfg_(cfg) {}

  // A request with these block hashes (block_hashes), prompt_tokens tokens
  // and room for max_new_tokens more: counts the lookup, holds its hits
  // (the longest cached prefix on the GPU, then its continuation on the CPU
  // tier, loaded back), and allocates and hashes the rest, evicting unheld
  // blocks as needed. When the pool has no block left to evict the request
  // runs anyway with what it got (the fake never queues), and its uncached
  // blocks are not cached.
  KvAdmission admit(const std::vector<std::uint64_t>& hashes, int prompt_tokens, int max_new_tokens);

  // The request ends (finished or aborted): its blocks are no longer held;
  // cached ones become evictable tail first, as vLLM frees them in reverse so
  // a prefix's end goes before its start. Unknown ids are ignored.
  void release(std::uint64_t id);

  KvSnapshot snapshot() const;
  const KvCacheConfig& config() const { return cfg_; }
  long long held_blocks() const { return held_cached_ + anon_held_; }
  long long cached_blocks() const { return static_cast<long long>(gpu_.size()); }
  bool on_gpu(std::uint64_t hash) const { return gpu_.count(hash) != 0; }
  bool on_cpu(std::uint64_t hash) const { return cpu_.count(hash) != 0; }

 private:
  // A cached GPU block: ref running requests hold it; at 0 it sits in lru_.
  struct Block {
    int ref = 0;
    std::list<std::uint64_t>::iterator lru_pos;  // valid while ref == 0
  };
  // What one running request holds, to give back at release.
  struct Held {
    std::vector<std::uint64_t> cached;  // in prompt order
    long long anonymous = 0;
  };

  bool take_free_block();  // one block from the free pool or by eviction
  void hold(std::uint64_t hash, Held& held);
  void cpu_store(std::uint64_t hash);
  void cpu_touch(std::uint64_t hash);

  KvCacheConfig cfg_;
  std::unordered_map<std::uint64_t, Block> gpu_;
  std::list<std::uint64_t> lru_;  // cached, unheld; front: evicted first
  long long held_cached_ = 0;     // cached blocks with ref > 0
  long long anon_held_ = 0;
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> cpu_;
  std::list<std::uint64_t> cpu_lru_;  // front: dropped first
  std::unordered_map<std::uint64_t, Held> running_;
  std::uint64_t next_id_ = 1;
  KvCounters counters_;
};

}  // namespace ixfake::vllm
