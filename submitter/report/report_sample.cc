#include "submitter/report/report_sample.h"

#include <cmath>
#include <string>

namespace ix::test {
namespace {

// An entry of bucket 1k1k in `state`, without numbers.
ReportEntry Unfinished(const std::string& key, const std::string& arm, int64_t conc, int64_t gpus,
                       const std::string& state) {
  ReportEntry e;
  e.config_key = key;
  e.bucket = "1k1k";
  e.arm = arm;
  e.conc = conc;
  e.gpus = gpus;
  e.state = state;
  return e;
}

// A succeeded entry whose numbers follow a plausible curve: throughput per
// GPU rises with conc, interactivity and TTFT get worse.
ReportEntry Succeeded(const std::string& key, const std::string& arm, int64_t conc, int64_t gpus, double speed) {
  ReportEntry e = Unfinished(key, arm, conc, gpus, "succeeded");
  e.placement = "GPUs 0-" + std::to_string(gpus - 1) + " \xc2\xb7 NUMA 0 \xc2\xb7 cores 0-27,56-83";
  e.has_result = true;
  const double c = static_cast<double>(conc);
  e.median_intvty = speed * 120.0 / (1.0 + c / 24.0);
  e.tput_per_gpu = e.median_intvty * c * 2.0 / static_cast<double>(gpus);
  e.output_tput_per_gpu = e.tput_per_gpu / 2.0;
  e.mean_ttft_s = 0.05 + 0.004 * c / speed;
  e.p99_ttft_s = e.mean_ttft_s * 2.5;
  e.median_tpot_s = 1.0 / e.median_intvty;
  e.median_e2el_s = e.mean_ttft_s + 1024 * e.median_tpot_s;
  e.power_valid = true;
  e.avg_power_w = 650.0 * static_cast<double>(gpus) * (0.6 + 0.4 * c / (c + 64.0));
  e.joules_per_output_token = *e.avg_power_w / (e.output_tput_per_gpu * static_cast<double>(gpus));
  return e;
}

// An agentic-coding entry's numbers on the same curve, with TTFT growing
// over 10 turns, a KV usage ramp of 12 slices and, with `dp_ranks`, a
// session count and hit rate per rank. DEP hits more (the router keeps a
// session on its rank) and offloading is a little faster, so no two arms'
// lines coincide.
ReportEntry AgenticSucceeded(const std::string& arm, int64_t conc, int dp_ranks, const std::string& offload) {
  const double speed = arm == "tp4" ? 1.0 : offload == "none" ? 0.9 : 1.05;
  ReportEntry e = Succeeded(kAgenticKey, arm, conc, 4, speed);
  e.bucket = "agentic";
  e.scenario = kScenarioAgentic;
  e.p99_ttft_s = std::nan("");
  AgenticResult& a = e.agentic;
  a.kv_offloading = offload;
  a.p50_ttft_s = e.mean_ttft_s * 0.8;
  a.gpu_cache_hit_rate = (arm == "tp4" ? 0.75 : 0.9) - 0.002 * static_cast<double>(conc);
  if (offload != "none") a.cpu_cache_hit_rate = 0.08, a.kv_offload_backend = "native";
  a.requests_successful = conc * 40, a.requests_total = conc * 40 + 3;
  for (int64_t t = 0; t < 10; ++t) {
    const double ttft = e.mean_ttft_s * (1.0 + 0.3 * static_cast<double>(t));
    a.ttft_by_turn.push_back({t, conc * 4 - t, ttft * 1.1, ttft});
  }
  a.kv_engines = dp_ranks > 0 ? dp_ranks : 1;
  for (int i = 0; i < 12; ++i) {
    const double t = 30.0 * i;
    a.kv_usage.push_back({t, t + 30, std::min(99.0, static_cast<double>(conc) * (0.4 + 0.05 * i))});
  }
  for (int r = 0; r < dp_ranks; ++r) {
    DpRankStats s{r, conc * 10 + r, conc / 4 + (r == 0 ? 1 : 0), 0.85 - 0.01 * r};
    if (offload != "none") s.sessions.reset();  // the router did not report them
    a.dp_ranks.push_back(s);
  }
  return e;
}


}  // namespace

ReportData SampleReport() {
  ReportData data;
  data.sweep_id = "sw-20261205-182233-3f9a";
  data.mode = "full-sweep-fail-fast";
  data.generated = "2026-12-05 18:40:02 UTC";
  auto& v = data.entries;
  const std::string a = "dsv41flash-fp4-b300-vllm-1k1k";
  for (const int64_t conc : {4, 16, 64, 256}) v.push_back(Succeeded(a, "tp4", conc, 4, 1.0));
  for (const int64_t conc : {4, 16, 64}) v.push_back(Succeeded(a, "tep4", conc, 4, 1.15));
  ReportEntry failed = Unfinished(a, "tep4", 256, 4, "failed");
  failed.failure_reason = "engine exited with status 1 before ready";
  failed.failure_process = "vllm-rank2";
  failed.placement = "GPUs 0-3 \xc2\xb7 NUMA 0 \xc2\xb7 cores 0-27,56-83";
  v.push_back(failed);
  for (const int64_t conc : {4, 16, 64, 256}) {
    ReportEntry e = Succeeded(a, "dep4", conc, 4, 0.9);
    const int64_t c = conc;
    e.sessions_per_rank = {c / 4 + 1, c / 4, c / 4 - (c > 4 ? 1 : 0), c / 4};
    if (conc == 256) e.power_valid = false, e.joules_per_output_token.reset(), e.avg_power_w.reset();
    v.push_back(e);
  }
  v.push_back(Unfinished(a, "dep4", 512, 4, "pending"));

  v.push_back(Succeeded(kOddKey, "tp8", 1, 8, 1.3));
  v.push_back(Succeeded(kOddKey, "tp8", 8, 8, 1.3));
  for (const size_t i : {v.size() - 2, v.size() - 1}) {
    v[i].power_valid = false, v[i].joules_per_output_token.reset(), v[i].avg_power_w.reset();
  }
  v.push_back(Unfinished(kOddKey, "tp8", 64, 8, "cancelled"));

  const std::string c = "qwen3-bf16-h200-vllm-8k1k";
  ReportEntry dep8 = Unfinished(c, "dep8", 32, 8, "failed");
  dep8.failure_reason = "srun: error: task 0 exited with exit code 137";
  v.push_back(dep8);
  v.push_back(Unfinished(c, "tp2", 2, 2, "running"));

  for (const int64_t conc : {8, 32}) v.push_back(AgenticSucceeded("tp4", conc, 0, "none"));
  for (const int64_t conc : {8, 32, 64}) v.push_back(AgenticSucceeded("dep4", conc, 4, "none"));
  v.push_back(AgenticSucceeded("dep4", 64, 4, "cpu"));
  ReportEntry agentic_failed = Unfinished(kAgenticKey, "tp4", 64, 4, "failed");
  agentic_failed.scenario = kScenarioAgentic;
  agentic_failed.failure_reason = "aiperf request error rate exceeded the benchmark limit";
  v.push_back(agentic_failed);

  for (size_t i = 0; i < v.size(); ++i) {
    v[i].index = static_cast<int64_t>(i);
    if (v[i].state == "pending") continue;
    v[i].slurm_job = "4242_" + std::to_string(i);
    const std::string dir = "results/" + std::to_string(i) + "/";
    v[i].logs = {{"server.log", dir + "server.log"}, {"client.log", dir + "client.log"}};
  }
  return data;
}

}  // namespace ix::test
