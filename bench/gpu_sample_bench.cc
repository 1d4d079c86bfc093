// gpu_sample_bench [SAMPLES]: the CPU time of one GPU sample by the agent's
// NVML sampler (node_agent/nvml_sampler.h: batched field values, the
// energy counter every 10 s), against the baseline in the same run: one
// `nvidia-smi --query-gpu=<InferenceX's fields> --format=csv,noheader`, the
// query InferenceX's start_gpu_monitor makes every second. CPU time is the
// process's own (CLOCK_PROCESS_CPUTIME_ID) for the sampler, the children's
// (getrusage) for nvidia-smi. NVML is IX_NVML_LIBRARY's or the driver's;
// without nvidia-smi on PATH the baseline is left out. Prints Markdown.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "node_agent/nvml_sampler.h"

extern char** environ;

namespace {

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double ChildrenCpuSeconds() {
  rusage r{};
  getrusage(RUSAGE_CHILDREN, &r);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(r.ru_utime) + s(r.ru_stime);
}

// One nvidia-smi query (its output discarded); false when it cannot run.
bool NvidiaSmiOnce() {
  const char* argv[] = {"nvidia-smi",
                        "--query-gpu=timestamp,index,power.draw,temperature.gpu,clocks.current.sm,"
                        "clocks.current.memory,utilization.gpu,utilization.memory",
                        "--format=csv,noheader", nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "nvidia-smi", &fa, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  int st = 0;
  return rc == 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 30;
  std::unique_ptr<ix::GpuSource> nvml = ix::OpenNvml(ix::NvmlLibraryFromEnv());
  ix::GpuSnapshot first = nvml->Sample();  // opens what it opens once; reads the energy counter
  if (first.state != "ok" || first.gpus.empty()) {
    std::printf("no GPUs sampled: %s\n", first.detail.c_str());
    return 1;
  }
  const size_t gpus = first.gpus.size();
  // At the agent's pace (1 Hz would take long: 100 ms apart), so the energy
  // counter is read as often as in the agent over the run.
  double cpu = 0, wall = 0;
  for (int i = 0; i < samples; ++i) {
    const double c0 = CpuSeconds();
    const auto w0 = std::chrono::steady_clock::now();
    nvml->Sample();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    cpu += CpuSeconds() - c0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double per_gpu_ms = cpu / samples / static_cast<double>(gpus) * 1000;
  std::printf("| one GPU sample (%zu GPUs, %d samples) | CPU per GPU | wall per GPU | ratio to nvidia-smi (CPU) |\n",
              gpus, samples);
  std::printf("| --- | --- | --- | --- |\n");
  const int smi_runs = 10;
  const double s0 = ChildrenCpuSeconds();
  int smi_ok = 0;
  for (int i = 0; i < smi_runs; ++i) smi_ok += NvidiaSmiOnce() ? 1 : 0;
  const double smi_ms = smi_ok ? (ChildrenCpuSeconds() - s0) / smi_ok / static_cast<double>(gpus) * 1000 : 0;
  std::printf("| ix-node-agent's sampler | %.3f ms | %.3f ms | %s |\n", per_gpu_ms,
              wall / samples / static_cast<double>(gpus) * 1000,
              smi_ok ? (std::to_string(per_gpu_ms / smi_ms).substr(0, 6)).c_str() : "n/a");
  if (smi_ok) std::printf("| nvidia-smi --query-gpu (baseline, %d runs) | %.3f ms | | 1 |\n", smi_ok, smi_ms);
  return 0;
}
