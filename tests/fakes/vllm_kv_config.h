// The size and shape of the fake engine's KV cache (tests/fakes/README.md,
// "KV cache"): the block size, the GPU blocks per data-parallel rank and the
// optional CPU offload tier that `--kv-transfer-config` asks for, read from
// the command line and the FAKE_VLLM_* switches. The cache itself is
// vllm_kv_cache.h.
#pragma once

#include <optional>
#include <string>

namespace ixfake::vllm {

// vLLM's default --block-size for CUDA.
inline constexpr int kDefaultBlockSize = 16;
// GPU blocks per rank without --num-gpu-blocks-override or
// FAKE_VLLM_NUM_GPU_BLOCKS: 20480 x 16 = 327,680 tokens, so a few dozen
// multi-thousand-token sessions fit and a few hundred do not.
inline constexpr long long kDefaultGpuBlocks = 20480;
// The fake model's KV bytes per token (all layers, K and V): 64 KiB, between
// an MLA model (~70 KB) and a GQA 70B (~320 KB), so the tier sizes given in
// bytes by real recipes become plausible block counts.
inline constexpr long long kKvBytesPerToken = 65536;
// The Mooncake store's capacity per rank until its config is read (vllm_mooncake.h)
// (the real store is sized outside vLLM, in its master's configuration).
inline constexpr long long kDefaultMooncakeBytes = 64LL << 30;
// The GPU<->CPU copy bandwidth behind vllm:kv_offload_time_* (PCIe 5 x16,
// effective), so bytes / time gives a plausible figure.
inline constexpr double kOffloadBytesPerS = 25e9;

// What kind of tier a --kv-transfer-config gives.
enum class TierKind { kNone, kCpuOffload, kMooncakeStore };

// The cache's shape for one rank. Invariants: block_size >= 1, gpu_blocks >=
// 1; cpu_blocks >= 1 exactly when tier != kNone; bytes_per_block =
// kKvBytesPerToken x block_size.
struct KvCacheConfig {
  int block_size = kDefaultBlockSize;
  long long gpu_blocks = kDefaultGpuBlocks;
  TierKind tier = TierKind::kNone;
  std::string connector;  // the kv_connector named (the tier's, under a MultiConnector)
  long long cpu_blocks = 0;
  long long bytes_per_block = kKvBytesPerToken * kDefaultBlockSize;
  bool prefix_caching = true;           // --no-enable-prefix-caching turns hits off
  bool prompt_tokens_details = false;   // --enable-prompt-tokens-details: usage.prompt_tokens_details

  long long gpu_tokens() const { return gpu_blocks * block_size; }
};

// The inputs of make_kv_config, already split out of the command line and
// the environment (vllm_args.cc, vllm_switches.cc).
struct KvFlags {
  std::optional<int> block_size;            // --block-size
  std::optional<long long> gpu_blocks;      // --num-gpu-blocks-override
  std::optional<std::string> kv_transfer;   // --kv-transfer-config (JSON)
  bool no_prefix_caching = false;           // --no-enable-prefix-caching
  bool prompt_tokens_details = false;       // --enable-prompt-tokens-details
  std::optional<long long> env_gpu_blocks;  // FAKE_VLLM_NUM_GPU_BLOCKS
  std::optional<long long> env_mooncake_bytes;  // FAKE_VLLM_MOONCAKE_BYTES
};

// The configuration, or the error vLLM would stop with (the message, empty
// on success): an unknown kv_connector or KVTransferConfig field, a missing
// or unknown kv_role, an offload connector without cpu_bytes_to_use, a tier
// smaller than one block.
std::string make_kv_config(const KvFlags& flags, KvCacheConfig& out);

// 1234560 -> "1,234,560", as vLLM prints token counts.
std::string with_thousands(long long n);

}  // namespace ixfake::vllm
