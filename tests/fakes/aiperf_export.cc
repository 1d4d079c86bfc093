#include "aiperf_export.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "fake_common.h"
#include "json_writer.h"

namespace ixfake::aiperf {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// "name": {"value": V, "unit": unit}, AIPerf's metric record; `value`
// writes V (a double, or an int for the token counts).
template <class Value>
void metric_record(Writer& w, const char* name, const char* unit, Value value) {
  w.Key(name);
  w.StartObject();
  w.Key("value");
  value();
  key_str(w, "unit", unit);
  w.EndObject();
}

void metric(Writer& w, const char* name, double value, const char* unit) {
  metric_record(w, name, unit, [&] { w.Double(value); });
}

void int_metric(Writer& w, const char* name, int value, const char* unit) {
  metric_record(w, name, unit, [&] { w.Int(value); });
}

void error_object(Writer& w, const RequestError& e) {
  w.StartObject();
  w.Key("code");
  if (e.code) {
    w.Int(*e.code);
  } else {
    w.Null();
  }
  key_str(w, "type", e.type);
  key_str(w, "message", e.message);
  w.EndObject();
}

// A counted value (request counts): {"unit", "avg"}.
void count_entry(Writer& w, const char* name, std::size_t n) {
  w.Key(name);
  w.StartObject();
  key_str(w, "unit", "requests");
  w.Key("avg");
  w.Uint64(n);
  w.EndObject();
}

void stats_entry(Writer& w, const char* name, const char* unit, std::vector<double> values) {
  auto s = metric_stats(std::move(values));
  if (!s) return;
  w.Key(name);
  w.StartObject();
  key_str(w, "unit", unit);
  w.Key("avg");
  w.Double(s->avg);
  for (const auto& [p, v] : s->percentiles) {
    w.Key(strprintf("p%d", p).c_str());
    w.Double(v);
  }
  w.Key("min");
  w.Double(s->min);
  w.Key("max");
  w.Double(s->max);
  w.Key("std");
  w.Double(s->std);
  w.Key("count");
  w.Uint64(s->count);
  w.Key("sum");
  w.Double(s->sum);
  w.EndObject();
}

void scalar_entry(Writer& w, const char* name, const char* unit, double value) {
  w.Key(name);
  w.StartObject();
  key_str(w, "unit", unit);
  w.Key("avg");
  w.Double(value);
  w.EndObject();
}

}  // namespace

std::string record_json(const RequestRecord& r) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("metadata");
  w.StartObject();
  w.Key("session_num");
  w.Int(r.session_num);
  key_str(w, "x_request_id", r.x_request_id);
  key_str(w, "x_correlation_id", r.x_correlation_id);
  key_str(w, "conversation_id", r.conversation_id);
  w.Key("turn_index");
  w.Int(r.turn_index);
  w.Key("request_start_ns");
  w.Int64(r.start_ns);
  w.Key("request_ack_ns");
  if (r.ack_ns != 0) {
    w.Int64(r.ack_ns);
  } else {
    w.Null();
  }
  w.Key("request_end_ns");
  w.Int64(r.end_ns);
  key_str(w, "worker_id", strprintf("worker_%d", r.session_num));
  key_str(w, "record_processor_id", "record_processor_0");
  key_str(w, "benchmark_phase", r.warmup ? "warmup" : "profiling");
  w.Key("was_cancelled");
  w.Bool(false);
  w.Key("cancellation_time_ns");
  w.Null();
  if (r.served_by_rank) {
    w.Key("served_by_rank");
    w.Int(*r.served_by_rank);
  }
  w.EndObject();
  w.Key("metrics");
  w.StartObject();
  if (r.error) {
    int_metric(w, "error_isl", r.input_len, "tokens");
  } else {
    if (r.isl) int_metric(w, "input_sequence_length", *r.isl, "tokens");
    if (r.osl) int_metric(w, "output_sequence_length", *r.osl, "tokens");
    if (r.ttft_ms) metric(w, "time_to_first_token", *r.ttft_ms, "ms");
    if (r.latency_ms) metric(w, "request_latency", *r.latency_ms, "ms");
    if (r.itl_ms) metric(w, "inter_token_latency", *r.itl_ms, "ms");
    if (r.full_itl_ms) metric(w, "full_response_inter_token_latency", *r.full_itl_ms, "ms");
  }
  w.EndObject();
  w.Key("error");
  if (r.error) {
    error_object(w, *r.error);
  } else {
    w.Null();
  }
  w.EndObject();
  return sb.GetString();
}

std::optional<MetricStats> metric_stats(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  MetricStats s;
  s.count = values.size();
  for (double v : values) s.sum += v;
  s.avg = s.sum / static_cast<double>(s.count);
  double ss = 0;
  for (double v : values) ss += (v - s.avg) * (v - s.avg);
  s.std = std::sqrt(ss / static_cast<double>(s.count));
  s.min = values.front();
  s.max = values.back();
  for (int p : {1, 5, 10, 25, 50, 75, 90, 95, 99}) {
    const double k = static_cast<double>(s.count - 1) * p / 100.0;
    const auto f = static_cast<std::size_t>(k);
    const double v = f + 1 < s.count ? values[f] + (k - static_cast<double>(f)) * (values[f + 1] - values[f]) : values[f];
    s.percentiles.emplace_back(p, v);
  }
  return s;
}

std::string naive_local_iso(std::int64_t unix_ns) {
  const auto secs = static_cast<time_t>(unix_ns / 1000000000);
  const auto micros = static_cast<long>((unix_ns % 1000000000) / 1000);
  struct tm tm {};
  localtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return strprintf("%s.%06ld", buf, micros);
}

std::string aggregate_json(const std::vector<RequestRecord>& records, const RunInfo& info) {
  std::size_t ok = 0, failed = 0, warm_ok = 0, warm_failed = 0;
  long long hit_blocks = 0, blocks = 0, out_tokens = 0;
  std::vector<double> ttft, latency, itl, full_itl, isl, osl;
  std::map<std::string, std::pair<RequestError, std::size_t>> errors;  // by "type\ncode\nmessage"
  for (const RequestRecord& r : records) {
    if (r.warmup) {
      (r.error ? warm_failed : warm_ok)++;
      continue;
    }
    if (r.error) {
      ++failed;
      auto& e = errors[strprintf("%s\n%d\n%s", r.error->type.c_str(), r.error->code.value_or(-1),
                                 r.error->message.substr(0, 200).c_str())];
      if (e.second++ == 0) e.first = *r.error;
      continue;
    }
    ++ok;
    hit_blocks += r.prefix_hit_blocks;
    blocks += r.prefix_blocks;
    if (r.ttft_ms) ttft.push_back(*r.ttft_ms);
    if (r.latency_ms) latency.push_back(*r.latency_ms);
    if (r.itl_ms) itl.push_back(*r.itl_ms);
    if (r.full_itl_ms) full_itl.push_back(*r.full_itl_ms);
    if (r.isl) isl.push_back(*r.isl);
    if (r.osl) {
      osl.push_back(*r.osl);
      out_tokens += *r.osl;
    }
  }
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  key_str(w, "schema_version", "1.4");
  key_str(w, "aiperf_version", info.aiperf_version);
  key_str(w, "benchmark_id", info.benchmark_id);
  count_entry(w, "request_count", ok);
  count_entry(w, "error_request_count", failed);
  count_entry(w, "completed_request_count", ok + failed);
  w.Key("theoretical_prefix_cache_hit");
  w.StartObject();
  key_str(w, "unit", "%");
  w.Key("avg");
  w.Double(blocks > 0 ? 100.0 * static_cast<double>(hit_blocks) / static_cast<double>(blocks) : 0.0);
  w.Key("count");
  w.Int64(blocks);
  w.Key("sum");
  w.Int64(hit_blocks);
  w.EndObject();
  stats_entry(w, "time_to_first_token", "ms", ttft);
  stats_entry(w, "request_latency", "ms", latency);
  stats_entry(w, "inter_token_latency", "ms", itl);
  stats_entry(w, "full_response_inter_token_latency", "ms", full_itl);
  stats_entry(w, "input_sequence_length", "tokens", isl);
  stats_entry(w, "output_sequence_length", "tokens", osl);
  if (info.duration_s > 0) {
    scalar_entry(w, "request_throughput", "requests/sec", static_cast<double>(ok) / info.duration_s);
    scalar_entry(w, "output_token_throughput", "tokens/sec", static_cast<double>(out_tokens) / info.duration_s);
    scalar_entry(w, "benchmark_duration", "sec", info.duration_s);
  }
  w.Key("input_config");
  w.RawValue(info.input_config_json.c_str(), info.input_config_json.size(), rapidjson::kObjectType);
  w.Key("was_cancelled");
  w.Bool(info.was_cancelled);
  w.Key("error_summary");
  w.StartArray();
  for (const auto& [key, e] : errors) {
    w.StartObject();
    w.Key("error_details");
    error_object(w, e.first);
    w.Key("count");
    w.Uint64(e.second);
    w.EndObject();
  }
  w.EndArray();
  key_str(w, "start_time", info.start_time);
  key_str(w, "end_time", info.end_time);
  w.Key("warmup_metrics");
  w.StartObject();
  count_entry(w, "request_count", warm_ok);
  count_entry(w, "error_request_count", warm_failed);
  w.EndObject();
  w.Key("metadata");
  w.StartObject();
  w.Key("dataset");
  w.StartObject();
  key_str(w, "source_type", "public_dataset");
  key_str(w, "loader", info.loader);
  key_str(w, "hf_dataset_name", info.hf_dataset);
  key_str(w, "hf_split", "train");
  w.Key("num_dataset_entries");
  w.Int(info.num_dataset_entries);
  w.EndObject();
  w.Key("submission_valid");
  w.Bool(info.invalid_reasons.empty());
  key_strings(w, "submission_invalid_reasons", info.invalid_reasons);
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

}  // namespace ixfake::aiperf
