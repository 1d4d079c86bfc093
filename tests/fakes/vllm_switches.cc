#include "vllm_switches.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "fake_common.h"
#include "vllm_engine_cores.h"

namespace ixfake::vllm {
namespace {

[[noreturn]] void env_error(const char* name, const std::string& value, const char* expected) {
  usage_exit("vllm (fake): %s='%s': expected %s\n", name, value.c_str(), expected);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::optional<double> env_seconds(const char* name) {
  auto v = env(name);
  if (!v) return std::nullopt;
  auto s = parse_seconds(*v);
  if (!s) env_error(name, *v, "seconds (a number >= 0)");
  return s;
}

// A latency knob in milliseconds, as seconds (0 when unset). At most an
// hour, so no sleep's length overflows the clock's.
double env_ms(const char* name) {
  auto v = env(name);
  if (!v) return 0;
  auto ms = parse_seconds(*v);
  if (!ms || *ms > 3600000) env_error(name, *v, "milliseconds, a number from 0 to 3600000 (e.g. 0.25)");
  return *ms / 1000.0;
}

// Some argv element contains `only`, or `only` is "--flag=value" and the
// argv has "--flag" followed by "value".
bool argv_matches(const std::vector<std::string>& argv, const std::string& only) {
  bool match = std::any_of(argv.begin(), argv.end(),
                           [&](const std::string& a) { return a.find(only) != std::string::npos; });
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] + "=" + argv[i + 1] == only) match = true;
  }
  return match;
}

// A data-parallel rank switch: a global rank below dp_size, so one
// environment serves every node and rank process; nullopt when unset.
std::optional<int> env_rank(const char* name, int dp_size) {
  auto v = env(name);
  if (!v) return std::nullopt;
  auto r = parse_int(*v, 0, 1023);
  if (!r || *r >= dp_size) env_error(name, *v, "a data-parallel rank below --data-parallel-size");
  return static_cast<int>(*r);
}

// FAKE_VLLM_CRASH_ENGINE_RANK as a local rank: -1 when this node does not
// run it; the last local rank when unset.
int crash_rank_switch(const std::vector<int>& local_ranks, int dp_size) {
  auto r = env_rank("FAKE_VLLM_CRASH_ENGINE_RANK", dp_size);
  if (!r) return local_ranks.empty() ? -1 : local_ranks.back();
  bool here = std::find(local_ranks.begin(), local_ranks.end(), *r) != local_ranks.end();
  return here ? *r : -1;
}

// A count such as a number of blocks or bytes, from 1 to `max`; nullopt
// when unset.
std::optional<long long> env_count(const char* name, long long max, const char* expected) {
  auto v = env(name);
  if (!v) return std::nullopt;
  auto n = parse_int(*v, 1, max);
  if (!n) env_error(name, *v, expected);
  return n;
}

bool env_flag(const char* name) {
  auto v = env(name);
  if (!v || v->empty()) return false;
  if (*v != "0" && *v != "1") env_error(name, *v, "0 or 1");
  return *v == "1";
}

// The fault switches, in the order a malformed one is reported.
Faults parse_faults(const std::vector<int>& local_ranks, int dp_size) {
  const Faults f{.start_delay_s = env_seconds("FAKE_VLLM_START_DELAY_S").value_or(Faults{}.start_delay_s),
                 .never_ready = env_flag("FAKE_VLLM_NEVER_READY"),
                 .never_join = env_flag("FAKE_VLLM_NEVER_JOIN"),
                 .crash_engine_after_s = env_seconds("FAKE_VLLM_CRASH_ENGINE_AFTER_S"),
                 .exit0_after_s = env_seconds("FAKE_VLLM_EXIT0_AFTER_S"),
                 .hang_after_s = env_seconds("FAKE_VLLM_HANG_AFTER_S"),
                 .crash_rank = crash_rank_switch(local_ranks, dp_size),
                 .stall_after_s = env_seconds("FAKE_VLLM_STALL_AFTER_S"),
                 .stall_rank = env_rank("FAKE_VLLM_STALL_RANK", dp_size),
                 .stall_metrics = env_flag("FAKE_VLLM_STALL_METRICS")};
  // Alone they would stall nothing: a test that sets one expects a stall.
  if (f.stall_rank && !f.stall_after_s) {
    env_error("FAKE_VLLM_STALL_RANK", *env("FAKE_VLLM_STALL_RANK"), "FAKE_VLLM_STALL_AFTER_S to be set too");
  }
  if (f.stall_metrics && !f.stall_after_s) {
    env_error("FAKE_VLLM_STALL_METRICS", "1", "FAKE_VLLM_STALL_AFTER_S to be set too");
  }
  return f;
}

}  // namespace

Switches parse_switches(const std::vector<std::string>& argv, const std::vector<int>& local_ranks, int dp_size) {
  Switches sw;
  if (auto d = env("FAKE_VLLM_RECORD_DIR")) sw.record_dir = *d;
  if (auto only = env("FAKE_VLLM_FAULT_ONLY_IF_ARG"); only && !only->empty()) {
    sw.fault_only_if_arg = *only;
    sw.faults_active = argv_matches(argv, *only);
  }
  // Parse every switch even when inactive, so a typo is an error either way.
  const Faults faults = parse_faults(local_ranks, dp_size);
  if (sw.faults_active) sw.faults = faults;
  sw.token_delay_s = env_ms("FAKE_VLLM_TOKEN_DELAY_MS");
  sw.token_delay_per_seq_s = env_ms("FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS");
  sw.prefill_s_per_1k = env_ms("FAKE_VLLM_PREFILL_MS_PER_1K");
  if (auto s = env_seconds("FAKE_VLLM_STOP_DELAY_S")) sw.stop_delay_s = *s;
  if (auto s = env_seconds("FAKE_VLLM_JOIN_TIMEOUT_S")) sw.join_timeout_s = *s;
  if (env("FAKE_VLLM_KV_LOAD_MS_PER_1K")) sw.kv_load_s_per_1k = env_ms("FAKE_VLLM_KV_LOAD_MS_PER_1K");
  sw.num_gpu_blocks = env_count("FAKE_VLLM_NUM_GPU_BLOCKS", 1LL << 32, "a number of KV blocks from 1 to 2^32");
  sw.mooncake_bytes = env_count("FAKE_VLLM_MOONCAKE_BYTES", 1LL << 50, "a number of bytes from 1 to 2^50");
  return sw;
}

void load_model(const Faults& faults) {
  if (faults.never_ready) {
    logf("fault FAKE_VLLM_NEVER_READY: the engines never finish loading");
    hold_forever();
  }
  logf("waiting for engine cores to load the model (%.3f s)", faults.start_delay_s);
  sleep_s(faults.start_delay_s);
}

std::vector<int> stalled_ranks(const std::optional<int>& stall_rank, const std::vector<int>& served) {
  if (!stall_rank) return served;
  if (std::find(served.begin(), served.end(), *stall_rank) == served.end()) return {};
  return {*stall_rank};
}

void fault_loop(const Faults& faults, const ApiFaults& api, double ready_at) {
  enum class Kind { kCrash, kExit0, kHang, kStall };
  struct Event {
    double at;
    Kind kind;
  };
  std::vector<Event> events;
  if (faults.crash_engine_after_s) events.push_back({ready_at + *faults.crash_engine_after_s, Kind::kCrash});
  if (faults.exit0_after_s) events.push_back({ready_at + *faults.exit0_after_s, Kind::kExit0});
  if (faults.hang_after_s) events.push_back({ready_at + *faults.hang_after_s, Kind::kHang});
  if (faults.stall_after_s) events.push_back({ready_at + *faults.stall_after_s, Kind::kStall});
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
  for (const auto& e : events) {
    sleep_s(e.at - now_s());
    switch (e.kind) {
      case Kind::kCrash:
        if (faults.crash_rank < 0) {
          logf("fault FAKE_VLLM_CRASH_ENGINE_AFTER_S: the rank to crash is not on this node; nothing crashes here");
        } else {
          crash_engine_core(faults.crash_rank);
        }
        break;
      case Kind::kExit0: shutdown_and_exit(0, "fault FAKE_VLLM_EXIT0_AFTER_S: API server exits with status 0");
      case Kind::kHang:
        if (!api.hang) {
          logf("fault FAKE_VLLM_HANG_AFTER_S: no API server on this node; nothing hangs here");
          break;
        }
        logf("fault FAKE_VLLM_HANG_AFTER_S: the API server stops answering (the process stays alive)");
        api.hang();
        break;
      case Kind::kStall:
        if (!api.stall) {
          // The head's API server generates every rank's tokens (the fake
          // executes nothing remotely), so the head applies the stall.
          logf("fault FAKE_VLLM_STALL_AFTER_S: no API server on this node; the head's API server applies it");
          break;
        }
        api.stall();
        break;
    }
  }
}

void hold_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace ixfake::vllm
