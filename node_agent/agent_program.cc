#include "node_agent/agent_program.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>

#include "core/base/unique_fd.h"
#include "node_agent/agent_daemon.h"
#include "node_agent/delivery.h"
#include "node_agent/metrics_server.h"
#include "node_agent/node_sample.h"
#include "node_agent/nvml_sampler.h"

namespace ix {

namespace {

void LogLine(const std::string& line) {
  // One write per line: the delivery threads log too.
  const std::string text = "ix-node-agent: " + line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace

int RunAgentProgram(const AgentConfig& config) {
  // SIGTERM/SIGINT become a readable descriptor the loop polls.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  UniqueFd stop_fd(::signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC));
  // A collector or job going away must not kill the agent.
  signal(SIGPIPE, SIG_IGN);

  MetricsServer metrics;
  if (Status s = metrics.Start(config.metrics_listen); !s) {
    LogLine(s.error().message);
    return 1;
  }
  LogLine("serving /metrics on " + config.metrics_listen.substr(0, config.metrics_listen.rfind(':')) + ":" +
          std::to_string(metrics.port()));

  std::unique_ptr<GpuSource> gpus = OpenNvml(NvmlLibraryFromEnv());
  bool said_absent = false;
  AgentHooks hooks;
  hooks.sample_node = [] { return TakeNodeSample(NodeSampleSources{}); };
  hooks.sample_gpus = [&] {
    GpuSnapshot s = gpus->Sample();
    // No NVML is said once, not an error (a CPU node, a test machine).
    if (s.state != "ok" && !said_absent) LogLine("GPUs not sampled: " + s.detail);
    said_absent = said_absent || s.state != "ok";
    return s;
  };
  hooks.publish = [&](const AgentMetrics& m) { metrics.Publish(m); };
  hooks.log = LogLine;
  const int status = RunAgentDaemon(config, std::move(hooks), stop_fd.get());
  metrics.Stop();
  return status;
}

std::vector<std::string> CheckAgentFiles(const AgentConfig& config) {
  std::vector<std::string> problems;
  if (!config.token_file.empty()) {
    if (Result<std::string> t = ReadTokenFile(config.token_file); !t) problems.push_back(t.error().message);
  }
  if (!config.ca_file.empty()) {
    const UniqueFd fd(::open(config.ca_file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
      problems.push_back("ca-file " + config.ca_file + ": cannot be read");
    } else if (!S_ISREG(st.st_mode)) {
      problems.push_back("ca-file " + config.ca_file + ": not a regular file");
    }
  }
  return problems;
}

}  // namespace ix
