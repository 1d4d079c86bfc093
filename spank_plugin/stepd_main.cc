// ix-stepd: the per-step supervisor the plugin starts from task_init of
// local task 0 (as the job user, inside the container). It reads the plan
// the plugin rendered (run_dir/plan.json: leased ports, and for an engine
// whose ranks span NUMA nodes the recipe's per-worker NUMA flags), runs it
// with StepSupervisor and reports "ready" or "failed: ..." on --ready-fd.
// SIGTERM stops the step cleanly. Its own output goes to a log file; it
// never holds the task's stdio.
#include <signal.h>
#include <sys/prctl.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/file_text.h"
#include "core/launch_plan.h"
#include "core/topology.h"
#include "spank_plugin/step_supervisor.h"

namespace po = boost::program_options;

namespace {

volatile sig_atomic_t g_stop = 0;
void OnTerm(int) { g_stop = 1; }

bool SplitPair(const std::string& s, std::string& k, std::string& v) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  k = s.substr(0, eq);
  v = s.substr(eq + 1);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plan_path, run_dir, result_dir, agent_socket, step;
  int ready_fd = -1;
  double ready_timeout = 3600, health_ms = 250, grace_ms = 3000;
  std::vector<std::string> binds;
  std::vector<int> clients;
  po::options_description opts(
      "Usage: ix-stepd --plan FILE [OPTIONS]\n\n"
      "Runs the engine (and router) of one job step as its launch plan says, waits\n"
      "until they are ready, and watches them until the step ends. Started by\n"
      "spank_inferencex.so; `ixsubmit plan --json` writes a plan too.\n\nOptions");
  opts.add_options()
      ("plan", po::value(&plan_path)->required()->value_name("FILE"), "the launch plan (JSON)")
      ("bind", po::value(&binds)->composing()->value_name("PROCESS=CPUS@NUMA"), "bind a process before exec")
      ("run-dir", po::value(&run_dir)->value_name("DIR"), "per-step state directory")
      ("result-dir", po::value(&result_dir)->value_name("DIR"), "where the server logs and failure.json go")
      ("ready-timeout", po::value(&ready_timeout)->value_name("S"), "seconds to wait for readiness (default 3600)")
      ("ready-fd", po::value(&ready_fd)->value_name("FD"), "write ready/failed here")
      ("client-pid", po::value(&clients)->composing()->value_name("PID"), "a client task to kill on failure")
      ("agent-socket", po::value(&agent_socket)->value_name("PATH"), "the node agent's event socket")
      ("step", po::value(&step)->value_name("JOB.STEP"), "the step id events carry")
      ("health-interval-ms", po::value(&health_ms)->value_name("MS"), "health probe period once ready (default 250)")
      ("stop-grace-ms", po::value(&grace_ms)->value_name("MS"), "SIGTERM to SIGKILL (default 3000)")
      ("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    if (vm.count("help")) {
      std::cout << opts;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "ix-stepd: " << e.what() << "\n";
    return 2;
  }
  int err = 0;
  const std::string text = ix::ReadFileText(plan_path, &err);
  if (err) return std::cerr << "ix-stepd: cannot read " << plan_path << ": " << std::strerror(err) << "\n", 1;
  ix::Result<ix::LaunchPlan> plan = ix::PlanFromJson(text, plan_path);
  if (!plan) {
    std::cerr << "ix-stepd: " << plan.error().message << "\n";
    return 1;
  }
  ix::SupervisorOptions o;
  o.run_dir = run_dir;
  o.result_dir = result_dir;
  o.ready_timeout = std::chrono::milliseconds(static_cast<int64_t>(ready_timeout * 1000));
  o.health_interval = std::chrono::milliseconds(static_cast<int64_t>(health_ms));
  o.stop_grace = std::chrono::milliseconds(static_cast<int64_t>(grace_ms));
  o.ready_fd = ready_fd;
  o.agent_socket = agent_socket;
  o.step = step;
  for (int c : clients) o.client_pids.push_back(static_cast<pid_t>(c));
  std::string k, v;
  for (const auto& b : binds) {
    const size_t at = b.rfind('@');
    if (!SplitPair(b, k, v)) return std::cerr << "ix-stepd: bad --bind " << b << "\n", 2;
    ix::BindingTarget t;
    const std::string cpus = at == std::string::npos ? v : b.substr(k.size() + 1, at - k.size() - 1);
    ix::Result<std::vector<int>> list = ix::ParseIdList(cpus, "--bind " + b);
    if (!list) return std::cerr << "ix-stepd: " << list.error().message << "\n", 2;
    t.cpus = list.value();
    if (at != std::string::npos) t.numa = std::atoi(b.c_str() + at + 1);
    o.bindings.emplace_back(k, t);
  }
  // Orphans of what we start (a setsid'd grandchild whose parent died)
  // become our children, so nothing escapes the stop.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction sa{};
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return ix::RunSupervisor(plan.value(), o, &g_stop);
}
