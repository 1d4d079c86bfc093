// ix-node-agent: the per-node agent (docs/AGENT.md). Checks its
// configuration (--check), prints one sample of the node (--once --json),
// or runs as the daemon (agent_program.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "node_agent/agent_config.h"
#include "node_agent/agent_program.h"
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
  std::vector<std::string> problems = line.problems;
  if (line.check && problems.empty()) problems = ix::CheckAgentFiles(line.config);
  for (const std::string& p : problems) std::cerr << "ix-node-agent: " << p << "\n";
  if (!problems.empty()) return 1;
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
  return ix::RunAgentProgram(line.config);
}
