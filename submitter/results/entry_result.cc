#include "submitter/results/entry_result.h"

#include <rapidjson/document.h>

#include <cstring>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "core/base/file_text.h"
#include "submitter/results/power_aggregate.h"
#include "submitter/results/process_result.h"
#include "submitter/results/python_json.h"

namespace ix {
namespace {

using Alloc = rapidjson::Document::AllocatorType;

rapidjson::Value Str(const std::string& s, Alloc& a) { return rapidjson::Value(s.c_str(), a); }

// A JSON file of the result directory, parsed; a null value when absent
// or unreadable (it is optional).
rapidjson::Document ReadJson(const std::string& path) {
  rapidjson::Document d;
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err || d.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str()).HasParseError()) d.SetNull();
  return d;
}

// Sessions per data-parallel rank from the client's summary.session_ranks
// ({"sess-0": [2], ...}): a session counts on each rank it was served by.
rapidjson::Value SessionsPerRank(const rapidjson::Value& bench, Alloc& a) {
  rapidjson::Value out(rapidjson::kArrayType);
  if (!bench.IsObject() || !bench.HasMember("summary") || !bench["summary"].IsObject()) return out;
  const rapidjson::Value& s = bench["summary"];
  if (!s.HasMember("session_ranks") || !s["session_ranks"].IsObject()) return out;
  std::map<int64_t, int64_t> counts;
  for (const auto& m : s["session_ranks"].GetObject()) {
    if (!m.value.IsArray()) continue;
    for (const auto& r : m.value.GetArray()) {
      if (r.IsInt64() && r.GetInt64() >= 0 && r.GetInt64() < 4096) ++counts[r.GetInt64()];
    }
  }
  if (counts.empty()) return out;
  for (int64_t r = 0; r <= counts.rbegin()->first; ++r) out.PushBack(counts.count(r) ? counts[r] : 0, a);
  return out;
}

rapidjson::Value IxFields(const std::string& dir, const EntryRunInfo& run, const rapidjson::Value& bench, bool dp,
                          Alloc& a) {
  rapidjson::Value ix = EntryIxFields(dir, run, a);
  ix.AddMember("sessions_per_rank", dp ? SessionsPerRank(bench, a) : rapidjson::Value(rapidjson::kArrayType), a);
  return ix;
}

// The node agent ends a step's gpu_metrics.csv with one last row set when
// the step's `finished` event reaches it, which can be just after srun
// returns: wait (at most `limit_s`) for a row at or after the benchmark's
// end, so the window is bracketed as it will be in the delivered file.
// Returns the file's text, or nullopt when there is no file.
std::optional<std::string> ReadTelemetry(const std::string& path, const rapidjson::Value& bench, double limit_s) {
  const double end = bench.HasMember("benchmark_end_time_unix") && bench["benchmark_end_time_unix"].IsNumber()
                         ? bench["benchmark_end_time_unix"].GetDouble()
                         : 0;
  for (double waited = 0;; waited += 0.05) {
    int err = 0;
    std::string csv = ReadFileText(path, &err);
    if (err) return std::nullopt;
    const size_t last = csv.find_last_not_of("\r\n");
    const size_t start = last == std::string::npos ? 0 : csv.rfind('\n', last);
    const std::string line = csv.substr(start == std::string::npos ? 0 : start + 1);
    const std::optional<double> t = ParsePowerTimestamp(line.substr(0, line.find(',')));
    if ((t && *t >= end) || waited >= limit_s) return csv;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

rapidjson::Value EntryIxFields(const std::string& dir, const EntryRunInfo& run, Alloc& a) {
  rapidjson::Value ix(rapidjson::kObjectType);
  ix.AddMember("sweep", Str(run.sweep_id, a), a);
  ix.AddMember("entry", run.entry, a);
  ix.AddMember("config_key", Str(run.config_key, a), a);
  ix.AddMember("recipe", Str(run.recipe, a), a);
  ix.AddMember("arm", Str(run.arm, a), a);
  ix.AddMember("slurm_job_id", Str(run.slurm_job_id, a), a);
  ix.AddMember("slurm_task", Str(run.slurm_task, a), a);
  ix.AddMember("node", Str(run.node, a), a);
  rapidjson::Document placement = ReadJson(dir + "/step-placement.json");
  ix.AddMember("placement", rapidjson::Value(placement, a), a);
  return ix;
}

std::string AggFileName(const std::string& result_filename) { return "agg_" + result_filename + ".json"; }

Result<std::string> WriteEntryAgg(const std::string& dir, const EnvVars& env, const EntryRunInfo& run) {
  const std::string name = EnvValue(env, "RESULT_FILENAME");
  const std::string bench_path = dir + "/" + name + ".json";
  int err = 0;
  const std::string text = ReadFileText(bench_path, &err);
  if (err) return Error{"no client result " + bench_path + ": " + std::strerror(err)};
  rapidjson::Document bench;
  if (bench.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str()).HasParseError() || !bench.IsObject()) {
    return Error{bench_path + ": not a JSON object"};
  }
  const EnvLookup lookup = [&](const std::string& n) -> std::optional<std::string> {
    for (const auto& [k, v] : env) {
      if (k == n) return v;
    }
    return std::nullopt;
  };
  Result<rapidjson::Document> agg = ProcessResult(bench, lookup);
  if (!agg) return Error{bench_path + ": " + agg.error().message};
  rapidjson::Document& doc = agg.value();
  const bool multinode = IsMultinode(lookup);
  if (multinode) {
    // process_result.py hands multinode power to aggregate_power_multinode.py,
    // which reads LOGS/power (srt-slurm's power manifest); there is none
    // here, so the agg gets its verdict for a missing one (power_valid 0).
    (void)MarkMultinodePowerMissing(doc);
  } else {
    const std::optional<std::string> csv = ReadTelemetry(dir + "/gpu_metrics.csv", bench, 5.0);
    (void)AggregatePower(csv, bench, doc, ExpectedGpus(lookup));
  }
  // Data-parallel attention: ranks behind a router.
  const bool dp = EnvValue(env, multinode ? "PREFILL_DP_ATTN" : "DP_ATTENTION") == "true";
  doc.AddMember("ix", IxFields(dir, run, bench, dp, doc.GetAllocator()), doc.GetAllocator());
  const std::string out = dir + "/" + AggFileName(name);
  if (Status s = WriteFileAtomic(out, PyJsonDumps(doc)); !s) return s.error();
  return out;
}

}  // namespace ix
