#include "submitter/report_source.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "core/base/file_text.h"
#include "submitter/report/agentic_read.h"
#include "submitter/sweep/sweep_mode.h"

namespace ix {
namespace {

std::optional<double> Num(const rapidjson::Value& o, const char* key) {
  if (!o.IsObject() || !o.HasMember(key) || !o[key].IsNumber()) return std::nullopt;
  return o[key].GetDouble();
}

// "GPUs 0,1,2,3 · vllm: NUMA 0, CPUs 0-63" from ix-stepd's
// step-placement.json.
std::string Placement(const std::string& dir) {
  int err = 0;
  const std::string text = ReadFileText(dir + "/step-placement.json", &err);
  rapidjson::Document d;
  if (err || d.Parse(text.c_str()).HasParseError() || !d.IsObject()) return "";
  std::string out;
  if (d.HasMember("gpus") && d["gpus"].IsArray()) {
    std::string g;
    for (const auto& v : d["gpus"].GetArray()) {
      if (v.IsInt()) g += (g.empty() ? "" : ",") + std::to_string(v.GetInt());
    }
    out = "GPUs " + g;
  }
  if (d.HasMember("processes") && d["processes"].IsObject()) {
    for (const auto& p : std::as_const(d)["processes"].GetObject()) {
      if (p.value.IsObject() && p.value.HasMember("summary") && p.value["summary"].IsString()) {
        out += std::string(out.empty() ? "" : " · ") + p.name.GetString() + ": " + p.value["summary"].GetString();
      }
    }
  }
  return out;
}

bool IsDiagnosis(const std::string& name) {
  return name.size() > 14 && name.rfind("diagnosis-", 0) == 0 && name.compare(name.size() - 4, 4, ".txt") == 0;
}

// A hung step's diagnoses (docs/STEP.md, "Hangs"): the head's, in the
// result directory, then each other node's, in its nodeK/ there.
void DiagnosisLinks(const EntryResults& e, const std::string& report_dir, ReportEntry& r) {
  for (const std::string& f : e.files) {
    if (IsDiagnosis(f)) r.logs.emplace_back(f, RelativeTo(e.result_dir + "/" + f, report_dir));
  }
  for (const std::string& f : e.files) {
    if (f.size() < 5 || f.rfind("node", 0) != 0 || f.find_first_not_of("0123456789", 4) != std::string::npos) continue;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(e.result_dir + "/" + f, ec)) {
      if (IsDiagnosis(d.path().filename().string())) names.push_back(d.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      r.logs.emplace_back(f + "/" + n, RelativeTo(e.result_dir + "/" + f + "/" + n, report_dir));
    }
  }
}

// The files of an entry worth a link, in this order, when present.
void Links(const EntryResults& e, const std::string& report_dir, ReportEntry& r) {
  const char* wanted[] = {"step.log", "server.log", "router.log", "failure.json", "status.json", "benchmark.env",
                          "gpu_metrics.csv"};
  if (!e.batch_log.empty()) r.logs.emplace_back("batch log", RelativeTo(e.batch_log, report_dir));
  for (const char* w : wanted) {
    for (const std::string& f : e.files) {
      if (f == w) r.logs.emplace_back(f, RelativeTo(e.result_dir + "/" + f, report_dir));
    }
  }
  DiagnosisLinks(e, report_dir, r);
  if (!e.agg_path.empty()) r.logs.emplace_back("agg result", RelativeTo(e.agg_path, report_dir));
  if (!IsAgentic(r)) return;
  const std::string aggregate = AgenticAggregateName(e.result_dir);
  if (!aggregate.empty() && std::find(e.files.begin(), e.files.end(), aggregate) != e.files.end()) {
    r.logs.emplace_back("agentic result", RelativeTo(e.result_dir + "/" + aggregate, report_dir));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(e.result_dir + "/aiperf_artifacts", ec)) {
    r.logs.emplace_back("aiperf artifacts", RelativeTo(e.result_dir + "/aiperf_artifacts", report_dir) + "/");
  }
}

void Metrics(const rapidjson::Value& agg, ReportEntry& r) {
  r.has_result = Num(agg, "tput_per_gpu").has_value() && Num(agg, "median_intvty").has_value();
  r.tput_per_gpu = Num(agg, "tput_per_gpu").value_or(0);
  r.output_tput_per_gpu = Num(agg, "output_tput_per_gpu").value_or(0);
  r.median_intvty = Num(agg, "median_intvty").value_or(0);
  r.mean_ttft_s = Num(agg, "mean_ttft").value_or(0);
  r.p99_ttft_s = Num(agg, "p99_ttft").value_or(0);
  r.median_tpot_s = Num(agg, "median_tpot").value_or(0);
  r.median_e2el_s = Num(agg, "median_e2el").value_or(0);
  r.power_valid = Num(agg, "power_valid").value_or(0) == 1;
  if (r.power_valid) {
    r.joules_per_output_token = Num(agg, "joules_per_output_token");
    r.avg_power_w = Num(agg, "avg_power_w");
  }
  if (agg.HasMember("tp") && agg["tp"].IsInt64()) r.gpus = agg["tp"].GetInt64();
  if (agg.HasMember("ix") && agg["ix"].IsObject() && agg["ix"].HasMember("sessions_per_rank") &&
      agg["ix"]["sessions_per_rank"].IsArray()) {
    for (const auto& v : agg["ix"]["sessions_per_rank"].GetArray()) {
      if (v.IsInt64()) r.sessions_per_rank.push_back(v.GetInt64());
    }
  }
}

}  // namespace

ReportData MakeReportData(const SweepResults& s, const std::string& report_dir, const std::string& generated) {
  ReportData d{.sweep_id = s.sweep.id, .mode = SweepModeName(s.sweep.mode), .generated = generated};
  for (const EntryResults& e : s.entries) {
    const EntryRecord& rec = e.record;
    ReportEntry r{.index = rec.index, .config_key = rec.config_key, .bucket = rec.bucket, .arm = rec.arm,
                  .conc = rec.conc, .state = StateName(rec.state), .slurm_job = rec.slurm_task_id,
                  .failure_reason = rec.failure_reason, .failure_process = rec.failure_process,
                  .placement = Placement(e.result_dir)};
    rapidjson::Document entry;
    if (!entry.Parse(rec.entry_json.c_str()).HasParseError() && entry.IsObject()) {
      r.gpus = static_cast<int64_t>(Num(entry, "tp").value_or(0) * Num(entry, "pp").value_or(1) *
                                    Num(entry, "pcp-size").value_or(1));
      if (entry.HasMember("scenario-type") && entry["scenario-type"].IsString() &&
          std::string(entry["scenario-type"].GetString()) == kScenarioAgentic) {
        r.scenario = kScenarioAgentic;
      }
    }
    // An agentic entry has no agg_*.json: its numbers are InferenceX's
    // agentic aggregate and AIPerf's artifacts (agentic_read.h).
    ReadAgenticEntry(e.result_dir, r);
    if (e.agg && !IsAgentic(r)) Metrics(*e.agg, r);
    Links(e, report_dir, r);
    d.entries.push_back(std::move(r));
  }
  return d;
}

}  // namespace ix
