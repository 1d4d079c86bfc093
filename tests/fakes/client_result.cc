#include "client_result.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>

#include "serving_metrics.h"

namespace ixfake::client {
namespace {

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

// One "key": value member; an empty optional is null.
void put(JsonWriter& w, const char* key, int v) {
  w.Key(key);
  w.Int(v);
}
void put(JsonWriter& w, const char* key, int64_t v) {
  w.Key(key);
  w.Int64(v);
}
void put(JsonWriter& w, const char* key, double v) {
  w.Key(key);
  w.Double(v);
}
void put(JsonWriter& w, const char* key, bool v) {
  w.Key(key);
  w.Bool(v);
}
void put(JsonWriter& w, const char* key, const std::string& v) {
  w.Key(key);
  w.String(v.c_str());
}
void put(JsonWriter& w, const char* key, const char* v) = delete;  // would be a bool
template <class T>
void put(JsonWriter& w, const char* key, const std::optional<T>& v) {
  if (v) {
    put(w, key, *v);
  } else {
    w.Key(key);
    w.Null();
  }
}

// mean_NAME_ms, median_NAME_ms, std_NAME_ms, p99_NAME_ms, as the real
// client names them.
void write_stats(JsonWriter& w, const std::string& name, const MetricStats& s) {
  put(w, ("mean_" + name + "_ms").c_str(), s.mean);
  put(w, ("median_" + name + "_ms").c_str(), s.median);
  put(w, ("std_" + name + "_ms").c_str(), s.std);
  put(w, ("p99_" + name + "_ms").c_str(), s.p99);
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

std::string result_json(const Config& cfg, const std::vector<Record>& records, const Summary& summary,
                        double start_unix, double end_unix) {
  const double wall_s = end_unix - start_unix;
  std::vector<ServedRequest> served;
  for (const Record& r : records) {
    if (r.error.empty()) served.push_back({r.latency_ms, r.ttft_ms.value_or(0), r.prompt_tokens, r.completion_tokens});
  }
  const ServingMetrics m = ComputeServingMetrics(served, wall_s);
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.SetIndent(' ', 2);
  w.StartObject();
  put(w, "endpoint", cfg.endpoint);
  put(w, "model", cfg.model);
  put(w, "sessions", cfg.sessions);
  put(w, "turns", cfg.turns);
  put(w, "concurrency", cfg.concurrency);
  put(w, "stream", cfg.stream);
  put(w, "x_session_id_header", true);
  put(w, "model_id", cfg.model);
  put(w, "max_concurrency", cfg.concurrency);
  put(w, "benchmark_start_time_unix", start_unix);
  put(w, "benchmark_end_time_unix", end_unix);
  put(w, "duration", wall_s);
  put(w, "completed", m.completed);
  put(w, "total_input_tokens", static_cast<int64_t>(m.total_input_tokens));
  put(w, "total_output_tokens", static_cast<int64_t>(m.total_output_tokens));
  put(w, "request_throughput", m.request_throughput);
  put(w, "output_throughput", m.output_throughput);
  put(w, "total_token_throughput", m.total_token_throughput);
  write_stats(w, "ttft", m.ttft);
  write_stats(w, "tpot", m.tpot);
  write_stats(w, "itl", m.itl);
  write_stats(w, "e2el", m.e2el);
  w.Key("requests");
  w.StartArray();
  for (const auto& r : records) write_record(w, r);
  w.EndArray();
  write_summary(w, summary, records.size(), wall_s);
  w.EndObject();
  return std::string(sb.GetString()) + "\n";
}
}  // namespace ixfake::client
