#include "client_result.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <ctime>
#include <type_traits>

#include "serving_metrics.h"

namespace ixfake::client {
namespace {

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

// One "key": value member, as its exact type's JSON (no conversions: an
// int64_t stays Int64, a const char* is refused, not a bool); an empty
// optional is null.
template <class T>
void put(JsonWriter& w, const char* key, const T& v) {
  w.Key(key);
  if constexpr (std::is_same_v<T, bool>) {
    w.Bool(v);
  } else if constexpr (std::is_same_v<T, int>) {
    w.Int(v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    w.Int64(v);
  } else if constexpr (std::is_same_v<T, double>) {
    w.Double(v);
  } else {
    static_assert(std::is_same_v<T, std::string>, "put: a bool, int, int64_t, double or std::string");
    w.String(v.c_str());
  }
}
template <class T>
void put(JsonWriter& w, const char* key, const std::optional<T>& v) {
  if (v) {
    put(w, key, *v);
  } else {
    w.Key(key);
    w.Null();
  }
}

// mean_NAME_ms, median_NAME_ms, std_NAME_ms and pP_NAME_ms for P in 90, 99,
// 99.9, in the order the real client adds them.
void write_stats(JsonWriter& w, const std::string& name, const MetricStats& s) {
  put(w, ("mean_" + name + "_ms").c_str(), s.mean);
  put(w, ("median_" + name + "_ms").c_str(), s.median);
  put(w, ("std_" + name + "_ms").c_str(), s.std);
  put(w, ("p90_" + name + "_ms").c_str(), s.p90);
  put(w, ("p99_" + name + "_ms").c_str(), s.p99);
  put(w, ("p99.9_" + name + "_ms").c_str(), s.p99_9);
}

void write_ints(JsonWriter& w, const char* key, const std::vector<int>& values) {
  w.Key(key);
  w.StartArray();
  for (int v : values) w.Int(v);
  w.EndArray();
}

// benchmark_serving.py's keys, in its order: save_result's settings, then
// benchmark()'s result less ttfts, itls, generated_texts and errors.
void write_serving_result(JsonWriter& w, const Config& cfg, const std::vector<Record>& records, double start_unix,
                          double end_unix) {
  const double duration = end_unix - start_unix;
  std::vector<ServedRequest> served;
  std::vector<int> input_lens, output_lens;
  for (const Record& r : records) {
    const bool ok = r.error.empty();
    if (ok) served.push_back({r.latency_ms, r.ttft_ms.value_or(0), r.input_len, r.completion_tokens});
    input_lens.push_back(r.input_len);
    output_lens.push_back(ok ? r.completion_tokens : 0);
  }
  const ServingMetrics m = ComputeServingMetrics(served, duration);
  const ServingOptions* serving = cfg.serving ? &*cfg.serving : nullptr;
  put(w, "date", result_date(end_unix));
  // Sessions mode: its /v1/chat/completions client, and the model served.
  put(w, "backend", serving ? serving->backend : std::string("openai-chat"));
  put(w, "model_id", cfg.model);
  put(w, "tokenizer_id", serving ? serving->tokenizer_id : cfg.model);
  put(w, "best_of", 1);
  put(w, "num_prompts", cfg.requests());
  put(w, "request_rate", std::string("inf"));
  put(w, "burstiness", 1.0);
  put(w, "max_concurrency", serving ? serving->max_concurrency : std::optional<int>(cfg.concurrency));
  put(w, "duration", duration);
  put(w, "benchmark_start_time_unix", start_unix);
  put(w, "benchmark_end_time_unix", end_unix);
  put(w, "completed", m.completed);
  put(w, "total_input_tokens", static_cast<int64_t>(m.total_input_tokens));
  put(w, "total_output_tokens", static_cast<int64_t>(m.total_output_tokens));
  put(w, "request_throughput", m.request_throughput);
  w.Key("request_goodput:");  // sic; null without --goodput
  w.Null();
  put(w, "output_throughput", m.output_throughput);
  put(w, "total_token_throughput", m.total_token_throughput);
  write_ints(w, "input_lens", input_lens);
  write_ints(w, "output_lens", output_lens);
  // --percentile-metrics (all four in the sessions mode), in this order.
  const auto selected = [&](const char* name) {
    return !serving || std::find(serving->percentile_metrics.begin(), serving->percentile_metrics.end(), name) !=
                           serving->percentile_metrics.end();
  };
  if (selected("ttft")) write_stats(w, "ttft", m.ttft);
  if (selected("tpot")) write_stats(w, "tpot", m.tpot);
  if (selected("itl")) write_stats(w, "itl", m.itl);
  if (selected("e2el")) write_stats(w, "e2el", m.e2el);
}

// The drawn lengths' settings, or null when the lengths were not drawn.
void write_lengths(JsonWriter& w, const Config& cfg) {
  w.Key("lengths");
  if (!cfg.lengths) {
    w.Null();
    return;
  }
  w.StartObject();
  put(w, "isl", cfg.lengths->isl);
  put(w, "osl", cfg.lengths->osl);
  put(w, "range_ratio", cfg.lengths->range_ratio);
  put(w, "seed", static_cast<int64_t>(cfg.lengths->seed));
  w.EndObject();
}

void write_record(JsonWriter& w, const Record& r) {
  w.StartObject();
  put(w, "session", r.session);
  put(w, "turn", r.turn);
  put(w, "latency_ms", r.latency_ms);
  put(w, "ttft_ms", r.ttft_ms);
  put(w, "rank", r.rank);
  put(w, "status", r.status);
  put(w, "completion_tokens", r.completion_tokens);
  put(w, "prompt_tokens", r.prompt_tokens);
  put(w, "input_len", r.input_len);
  put(w, "max_tokens", r.max_tokens);
  if (!r.error.empty()) put(w, "error", r.error);
  w.EndObject();
}

void write_summary(JsonWriter& w, const Summary& s, std::size_t requests, double wall_s) {
  w.Key("summary");
  w.StartObject();
  put(w, "requests", static_cast<int>(requests));
  put(w, "failed", s.failed);
  put(w, "p50_ms", percentile(s.latencies, 50));
  put(w, "p99_ms", percentile(s.latencies, 99));
  put(w, "ttft_p50_ms", percentile(s.ttfts, 50));
  put(w, "ttft_p99_ms", percentile(s.ttfts, 99));
  put(w, "wall_s", wall_s);
  w.Key("ranks_used");
  w.StartArray();
  for (int r : s.ranks) w.Int(r);
  w.EndArray();
  w.Key("session_ranks");
  w.StartObject();
  for (const auto& [session, rs] : s.session_ranks) {
    w.Key(session.c_str());
    w.StartArray();
    for (int r : rs) {
      if (r >= 0) {
        w.Int(r);
      } else {
        w.Null();
      }
    }
    w.EndArray();
  }
  w.EndObject();
  put(w, "sessions_on_one_rank", s.sessions_on_one_rank());
  w.EndObject();
}

}  // namespace

bool Summary::sessions_on_one_rank() const {
  return !session_ranks.empty() && std::all_of(session_ranks.begin(), session_ranks.end(), [](const auto& kv) {
    return kv.second.size() == 1 && *kv.second.begin() >= 0;
  });
}

Summary summarize(const std::vector<Record>& records) {
  Summary s;
  for (const auto& r : records) {
    if (!r.error.empty()) {
      ++s.failed;
      if (s.first_failure == nullptr) s.first_failure = &r;
      continue;
    }
    s.latencies.push_back(r.latency_ms);
    if (r.ttft_ms) s.ttfts.push_back(*r.ttft_ms);
    if (r.rank) {
      s.ranks.insert(*r.rank);
      s.session_ranks[r.session].insert(*r.rank);
    } else {
      s.session_ranks[r.session].insert(-1);
    }
  }
  return s;
}

std::string result_date(double unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string result_json(const Config& cfg, const std::vector<Record>& records, const Summary& summary,
                        double start_unix, double end_unix) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.SetIndent(' ', 2);
  w.SetFormatOptions(rapidjson::kFormatSingleLineArray);  // input_lens etc. one line each
  w.StartObject();
  write_serving_result(w, cfg, records, start_unix, end_unix);
  put(w, "endpoint", cfg.endpoint);
  put(w, "model", cfg.model);
  put(w, "sessions", cfg.sessions);
  put(w, "turns", cfg.turns);
  put(w, "concurrency", cfg.concurrency);
  put(w, "stream", cfg.stream);
  put(w, "x_session_id_header", !cfg.serving);  // benchmark_serving.py sends none
  write_lengths(w, cfg);
  w.Key("requests");
  w.StartArray();
  for (const auto& r : records) write_record(w, r);
  w.EndArray();
  write_summary(w, summary, records.size(), end_unix - start_unix);
  w.EndObject();
  return std::string(sb.GetString()) + "\n";
}
}  // namespace ixfake::client
