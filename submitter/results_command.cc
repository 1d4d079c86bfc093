#include "submitter/results_command.h"

#include <rapidjson/pointer.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "core/base/file_text.h"
#include "submitter/results/python_json.h"
#include "submitter/sweep_results.h"

namespace ix {
namespace {

constexpr char kUsage[] =
    "Usage: ixsubmit results [SWEEP_ID] [--db PATH] [--format inferencex|json|csv] [-o FILE]\n"
    "A sweep's results (the newest sweep without SWEEP_ID), to FILE or standard output:\n"
    "  inferencex  the results in one JSON list, as InferenceX's collect_results.py gathers them: fixed-seq-len\n"
    "              entries' agg results and agentic entries' aggregates (default)\n"
    "  json        every entry: scenario, state, Slurm task, failure, result directory and result\n"
    "  csv         one row per entry with throughput, interactivity, TTFT, prefix-cache hit rates and energy\n";

struct Options {
  std::optional<std::string> db, id, out;
  std::string format = "inferencex";
};

std::optional<int> Parse(const std::vector<std::string>& args, Options& o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* name) -> std::optional<std::string> {
      const std::string eq = std::string(name) + "=";
      if (a == name && i + 1 < args.size()) return args[++i];
      if (a.rfind(eq, 0) == 0) return a.substr(eq.size());
      return std::nullopt;
    };
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
    if (auto v = value("--db")) o.db = v;
    else if (auto f = value("--format")) o.format = *f;
    else if (auto out = value("-o")) o.out = out;
    else if (auto out2 = value("--output")) o.out = out2;
    else if (!o.id && !a.empty() && a[0] != '-') o.id = a;
    else return std::cerr << "ixsubmit results: error: unrecognized argument " << a << "\n" << kUsage, 2;
  }
  if (o.format != "inferencex" && o.format != "json" && o.format != "csv") {
    return std::cerr << "ixsubmit results: error: --format " << o.format << ": expected inferencex, json or csv\n", 2;
  }
  return std::nullopt;
}

using Alloc = rapidjson::Document::AllocatorType;

std::string InferenceXList(const SweepResults& s) {
  rapidjson::Document list(rapidjson::kArrayType);
  for (const EntryResults& e : s.entries) {
    if (e.agg) list.PushBack(rapidjson::Value(*e.agg, list.GetAllocator()), list.GetAllocator());
  }
  return PyJsonDumps(list);
}

std::string JsonView(const SweepResults& s) {
  rapidjson::Document list(rapidjson::kArrayType);
  Alloc& a = list.GetAllocator();
  auto str = [&](const std::string& v) { return rapidjson::Value(v.c_str(), a); };
  for (const EntryResults& e : s.entries) {
    const EntryRecord& r = e.record;
    rapidjson::Value o(rapidjson::kObjectType);
    o.AddMember("sweep", str(r.sweep_id), a);
    o.AddMember("entry", r.index, a);
    o.AddMember("config_key", str(r.config_key), a);
    o.AddMember("bucket", str(r.bucket), a);
    o.AddMember("scenario", str(e.agentic ? "agentic-coding" : "fixed-seq-len"), a);
    o.AddMember("arm", str(r.arm), a);
    o.AddMember("conc", r.conc, a);
    o.AddMember("state", str(StateName(r.state)), a);
    o.AddMember("slurm_task", str(r.slurm_task_id), a);
    o.AddMember("exit_code", r.exit_code ? rapidjson::Value(*r.exit_code) : rapidjson::Value(), a);
    o.AddMember("failure_reason", str(r.failure_reason), a);
    o.AddMember("failure_process", str(r.failure_process), a);
    o.AddMember("result_dir", str(e.result_dir), a);
    o.AddMember("agg_file", str(e.agg_path), a);
    o.AddMember("result", e.agg ? rapidjson::Value(*e.agg, a) : rapidjson::Value(), a);
    list.PushBack(o, a);
  }
  return PyJsonDumps(list);
}

std::string CsvCell(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A CSV column: where a fixed-seq-len agg result and an agentic aggregate
// keep the same measure (JSON pointers; "" when that kind has none: the
// agentic aggregate stops at p95, the fixed-seq-len one has no cache).
struct CsvMetric {
  const char* column;
  const char* fixed;
  const char* agentic;
};
constexpr CsvMetric kCsvMetrics[] = {
    {"tput_per_gpu", "/tput_per_gpu", "/request_metrics/throughput/per_gpu/total_tput_tps"},
    {"output_tput_per_gpu", "/output_tput_per_gpu", "/request_metrics/throughput/per_gpu/output_tput_tps"},
    {"median_intvty", "/median_intvty", "/request_metrics/latency/intvty/p50"},
    {"mean_ttft", "/mean_ttft", "/request_metrics/latency/ttft/mean"},
    {"p99_ttft", "/p99_ttft", ""},
    {"median_tpot", "/median_tpot", "/request_metrics/latency/tpot/p50"},
    {"median_e2el", "/median_e2el", "/request_metrics/latency/e2el/p50"},
    {"gpu_cache_hit_rate", "", "/server_metrics/cache/gpu_cache_hit_rate"},
    {"cpu_cache_hit_rate", "", "/server_metrics/cache/cpu_cache_hit_rate"},
    {"power_valid", "/power_valid", "/power_valid"},
    {"joules_per_output_token", "/joules_per_output_token", "/joules_per_output_token"},
    {"avg_power_w", "/avg_power_w", "/avg_power_w"},
};

std::string CsvNumber(const rapidjson::Value* v) {
  if (!v || !v->IsNumber()) return "";
  return v->IsInt64() ? std::to_string(v->GetInt64()) : PyFloatRepr(v->GetDouble());
}

std::string CsvView(const SweepResults& s) {
  std::string out = "entry,config_key,bucket,scenario,arm,conc,state,slurm_task";
  for (const CsvMetric& m : kCsvMetrics) out += std::string(",") + m.column;
  out += ",failure_reason\n";
  for (const EntryResults& e : s.entries) {
    const EntryRecord& r = e.record;
    out += std::to_string(r.index) + "," + CsvCell(r.config_key) + "," + CsvCell(r.bucket) + "," +
           (e.agentic ? "agentic-coding" : "fixed-seq-len") + "," + CsvCell(r.arm) + "," + std::to_string(r.conc) +
           "," + StateName(r.state) + "," + CsvCell(r.slurm_task_id);
    for (const CsvMetric& m : kCsvMetrics) {
      const char* path = e.agentic ? m.agentic : m.fixed;
      out += "," + (e.agg && *path ? CsvNumber(rapidjson::Pointer(path).Get(*e.agg)) : std::string());
    }
    out += "," + CsvCell(r.failure_reason) + "\n";
  }
  return out;
}

}  // namespace

int RunResultsCommand(const std::vector<std::string>& args) {
  Options o;
  if (std::optional<int> done = Parse(args, o)) return *done;
  Result<SweepResults> s = LoadSweepResults(o.db, o.id);
  if (!s) return std::cerr << "ixsubmit results: " << s.error().message << "\n", 1;
  const std::string text = o.format == "inferencex" ? InferenceXList(s.value())
                           : o.format == "json"     ? JsonView(s.value()) + "\n"
                                                    : CsvView(s.value());
  if (!o.out || *o.out == "-") return std::fwrite(text.data(), 1, text.size(), stdout), 0;
  if (Status w = WriteFileAtomic(*o.out, text); !w) return std::cerr << "ixsubmit results: " << w.error().message << "\n", 1;
  size_t with = 0;
  for (const EntryResults& e : s.value().entries) with += e.agg ? 1 : 0;
  std::fprintf(stderr, "ixsubmit results: %s: %zu of %zu entries with results -> %s\n", s.value().sweep.id.c_str(), with,
               s.value().entries.size(), o.out->c_str());
  return 0;
}

}  // namespace ix
