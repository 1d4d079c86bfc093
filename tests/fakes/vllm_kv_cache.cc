#include "vllm_kv_cache.h"

#include <algorithm>

namespace ixfake::vllm {
namespace {

// splitmix64's finalizer of a ^ (b + golden ratio): order-dependent, so a
// block's hash changes with any token before it.
std::uint64_t combine(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The parent of block 0 (vLLM's NONE_HASH, a fixed seed here).
constexpr std::uint64_t kRootHash = 0x6b76636163686521ULL;

}  // namespace

std::vector<std::uint64_t> block_hashes(const std::vector<std::uint64_t>& token_hashes, int block_size) {
  std::vector<std::uint64_t> out;
  if (block_size < 1) return out;
  const std::size_t bs = static_cast<std::size_t>(block_size);
  out.reserve(token_hashes.size() / bs);
  std::uint64_t parent = kRootHash;
  for (std::size_t start = 0; start + bs <= token_hashes.size(); start += bs) {
    std::uint64_t h = parent;
    for (std::size_t i = start; i < start + bs; ++i) h = combine(h, token_hashes[i]);
    out.push_back(h);
    parent = h;
  }
  return out;
}

bool KvCache::take_free_block() {
  if (static_cast<long long>(gpu_.size()) + anon_held_ < cfg_.gpu_blocks) return true;
  if (lru_.empty()) return false;
  const std::uint64_t victim = lru_.front();
  lru_.pop_front();
  gpu_.erase(victim);
  if (cfg_.tier != TierKind::kNone) {
    // The tier keeps what the GPU drops (a copy over PCIe).
    cpu_store(victim);
    counters_.bytes_gpu_to_cpu += static_cast<unsigned long long>(cfg_.bytes_per_block);
    counters_.time_gpu_to_cpu_s += static_cast<double>(cfg_.bytes_per_block) / kOffloadBytesPerS;
  }
  return true;
}

void KvCache::hold(std::uint64_t hash, Held& held) {
  Block& b = gpu_.at(hash);
  if (b.ref == 0) {
    lru_.erase(b.lru_pos);
    ++held_cached_;
  }
  ++b.ref;
  held.cached.push_back(hash);
}

void KvCache::cpu_store(std::uint64_t hash) {
  if (cpu_.count(hash) != 0) {
    cpu_touch(hash);
    return;
  }
  if (static_cast<long long>(cpu_.size()) >= cfg_.cpu_blocks) {
    cpu_.erase(cpu_lru_.front());
    cpu_lru_.pop_front();
  }
  cpu_[hash] = cpu_lru_.insert(cpu_lru_.end(), hash);
}

void KvCache::cpu_touch(std::uint64_t hash) {
  auto it = cpu_.find(hash);
  if (it == cpu_.end()) return;
  cpu_lru_.splice(cpu_lru_.end(), cpu_lru_, it->second);
}

KvAdmission KvCache::admit(const std::vector<std::uint64_t>& hashes, int prompt_tokens, int max_new_tokens) {
  KvAdmission a;
  a.id = next_id_++;
  Held& held = running_[a.id];
  const long long bs = cfg_.block_size;
  const long long whole = static_cast<long long>(hashes.size());
  const bool tier = cfg_.tier != TierKind::kNone;
  long long gpu_hit = 0;
  long long cpu_hit = 0;
  if (cfg_.prefix_caching) {
    // At least the prompt's last token is computed, so a hit stops a block
    // short of a prompt that is whole blocks.
    const long long max_hit = prompt_tokens > 0 ? std::min(whole, (prompt_tokens - 1) / bs) : 0;
    while (gpu_hit < max_hit && on_gpu(hashes[static_cast<std::size_t>(gpu_hit)])) ++gpu_hit;
    if (tier) {
      while (gpu_hit + cpu_hit < max_hit && on_cpu(hashes[static_cast<std::size_t>(gpu_hit + cpu_hit)])) ++cpu_hit;
      // Loaded blocks need GPU blocks: as many as are free or evictable.
      const long long room = cfg_.gpu_blocks - static_cast<long long>(gpu_.size()) - anon_held_ +
                             static_cast<long long>(lru_.size());
      cpu_hit = std::min(cpu_hit, std::max(0LL, room));
    }
    counters_.queries += static_cast<unsigned long long>(prompt_tokens);
    counters_.hits += static_cast<unsigned long long>(gpu_hit * bs);
    if (tier) {
      counters_.ext_queries += static_cast<unsigned long long>(prompt_tokens);
      counters_.ext_hits += static_cast<unsigned long long>(cpu_hit * bs);
    }
  }
  a.gpu_hit_tokens = static_cast<int>(gpu_hit * bs);
  a.cpu_hit_tokens = static_cast<int>(cpu_hit * bs);
  a.computed_tokens = prompt_tokens - a.gpu_hit_tokens - a.cpu_hit_tokens;

  for (long long i = 0; i < gpu_hit; ++i) hold(hashes[static_cast<std::size_t>(i)], held);
  // Most recent on the CPU, so the evictions below do not push them out.
  for (long long i = gpu_hit; i < gpu_hit + cpu_hit; ++i) cpu_touch(hashes[static_cast<std::size_t>(i)]);
  long long i = gpu_hit;
  if (cfg_.prefix_caching) {
    for (; i < whole; ++i) {
      const std::uint64_t h = hashes[static_cast<std::size_t>(i)];
      if (on_gpu(h)) {  // cached past a missing block: shared, not recomputed in vLLM either
        hold(h, held);
        continue;
      }
      if (!take_free_block()) break;
      Block& b = gpu_[h];
      b.ref = 1;
      ++held_cached_;
      held.cached.push_back(h);
      if (i < gpu_hit + cpu_hit) {
        counters_.bytes_cpu_to_gpu += static_cast<unsigned long long>(cfg_.bytes_per_block);
        counters_.time_cpu_to_gpu_s += static_cast<double>(cfg_.bytes_per_block) / kOffloadBytesPerS;
      }
    }
    if (i < whole) return a;  // the pool is full of held blocks
  }
  // The rest (all of it without prefix caching): the partial last prompt
  // block and the answer's blocks, held without a hash.
  const long long total = (static_cast<long long>(prompt_tokens) + std::max(max_new_tokens, 0) + bs - 1) / bs;
  for (long long n = static_cast<long long>(held.cached.size()); n < total; ++n) {
    if (!take_free_block()) break;
    ++held.anonymous;
    ++anon_held_;
  }
  return a;
}

void KvCache::release(std::uint64_t id) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  Held& held = it->second;
  for (auto h = held.cached.rbegin(); h != held.cached.rend(); ++h) {
    auto g = gpu_.find(*h);
    if (g == gpu_.end()) continue;
    if (--g->second.ref == 0) {
      g->second.lru_pos = lru_.insert(lru_.end(), *h);
      --held_cached_;
    }
  }
  anon_held_ -= held.anonymous;
  running_.erase(it);
}

KvSnapshot KvCache::snapshot() const {
  KvSnapshot s;
  s.counters = counters_;
  s.gpu_usage = std::min(1.0, static_cast<double>(held_blocks()) / static_cast<double>(cfg_.gpu_blocks));
  s.has_tier = cfg_.tier != TierKind::kNone;
  if (s.has_tier && cfg_.cpu_blocks > 0) {
    s.cpu_usage = static_cast<double>(cpu_.size()) / static_cast<double>(cfg_.cpu_blocks);
  }
  return s;
}

}  // namespace ixfake::vllm
