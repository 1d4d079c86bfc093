// ix-node-agent: the per-node agent. Built so far: the configuration
// (--check) and one sample of the node (--once --json); the daemon loop is
// not, and the program says so instead of pretending to run.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "node_agent/agent_config.h"
#include "node_agent/node_sample.h"
#include "node_agent/nvml_sampler.h"

int main(int argc, char** argv) {
  ix::Result<ix::AgentCommandLine> parsed = ix::ParseAgentCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed) {
    std::cerr << "ix-node-agent: " << parsed.error().message << "\nTry 'ix-node-agent --help'.\n";
    return 2;
  }
  const ix::AgentCommandLine& line = parsed.value();
  if (line.help) {
    std::cout << line.usage;
    return 0;
  }
  for (const std::string& p : line.problems) std::cerr << "ix-node-agent: " << p << "\n";
  if (!line.problems.empty()) return 1;
  if (line.check) {
    std::cout << "configuration ok\n";
    return 0;
  }
  if (line.once) {
    const std::unique_ptr<ix::GpuSource> gpus = ix::OpenNvml(ix::NvmlLibraryFromEnv());
    ix::NodeSampleSources sources;
    sources.gpus = gpus.get();
    std::cout << ix::NodeSampleToJson(ix::TakeNodeSample(sources), true) << "\n";
    return 0;
  }
  std::cerr << "ix-node-agent: the daemon loop is not built yet; use --once or --check\n";
  return 2;
}
