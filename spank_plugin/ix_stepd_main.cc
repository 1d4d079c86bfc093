// ix-stepd: the per-step supervisor the plugin starts from task_init of
// local task 0 (as the job user, inside the container, executed from a
// descriptor the plugin opened on the host: it is static and needs nothing
// from the image). It reads the plan the plugin rendered (plan.json in the
// run directory, which it gets as a descriptor: leased ports, and for an
// engine whose ranks span NUMA nodes the recipe's per-worker NUMA flags),
// runs it with StepSupervisor and reports "ready" or "failed: ..." on
// --ready-fd. SIGTERM, or the exit of the client it watches, stops the step
// cleanly; the death of the step's slurmstepd (--owner-pid) fails it. /proc
// and its directories are held as descriptors from the start, so the stop
// works after the container is removed under it. Its own output goes to a
// log file; it never holds the task's stdio.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "core/base/file_text.h"
#include "core/base/paths.h"
#include "core/recipe/launch_plan.h"
#include "core/process/process.h"
#include "core/node/topology.h"
#include "spank_plugin/step_supervisor.h"

namespace po = boost::program_options;

namespace {

volatile sig_atomic_t g_stop = 0;
void OnTerm(int) { g_stop = 1; }

// A failure before the supervisor runs: said in the log (stderr) and, as
// "failed: ...", on the ready descriptor, so task 0 shows it on srun's stderr.
int Fail(int ready_fd, const std::string& what, int status = 1) {
  std::cerr << "ix-stepd: " << what << "\n";
  if (ready_fd >= 0) {
    const std::string line = "failed: " + what + "\n";
    (void)!::write(ready_fd, line.data(), line.size());
  }
  return status;
}

// The parent of task 0 (`client`), which is the step's slurmstepd: Slurm
// forks every task from it. 0 when it cannot be read or is already gone
// (the task was reparented to init).
pid_t ClientParent(pid_t client) {
  ix::Result<ix::ProcessInfo> c = ix::ReadProcessInfo(client);
  return c && c.value().ppid > 1 ? c.value().ppid : 0;
}

bool SplitPair(const std::string& s, std::string& k, std::string& v) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  k = s.substr(0, eq);
  v = s.substr(eq + 1);
  return true;
}

// ix-stepd's command line, as given (-1: not given).
struct StepdArgs {
  std::string plan_path, run_dir, result_dir, agent_socket, step, gpus, node_name;
  int ready_fd = -1, run_dir_fd = -1, owner_pid = -1, agent_fd = -1;
  bool stop_with_client = false;
  double ready_timeout = 3600, health_ms = 250, grace_ms = 3000;
  std::vector<std::string> binds;
  std::vector<int> clients;
};

// Parses the command line into `a`; returns the exit status when ix-stepd
// is done already (--help: 0, a bad option: 2).
std::optional<int> ParseArgs(int argc, char** argv, StepdArgs& a) {
  po::options_description opts(
      "Usage: ix-stepd --plan FILE [OPTIONS]\n\n"
      "Runs the engine (and router) of one job step as its launch plan says, waits\n"
      "until they are ready, and watches them until the step ends. Started by\n"
      "spank_inferencex.so; `ixsubmit plan --json` writes a plan too.\n\nOptions");
  opts.add_options()
      ("plan", po::value(&a.plan_path)->required()->value_name("FILE"), "the launch plan (JSON)")
      ("bind", po::value(&a.binds)->composing()->value_name("PROCESS=CPUS@NUMA"), "bind a process before exec")
      ("run-dir", po::value(&a.run_dir)->value_name("DIR"), "per-step state directory (a relative --plan is read there)")
      ("run-dir-fd", po::value(&a.run_dir_fd)->value_name("FD"), "the run directory as an inherited descriptor (--run-dir only names it)")
      ("result-dir", po::value(&a.result_dir)->value_name("DIR"),
       "server logs and failure.json; the servers' working directory (default: results/ in the run directory)")
      ("ready-timeout", po::value(&a.ready_timeout)->value_name("S"), "seconds to wait for readiness (default 3600)")
      ("ready-fd", po::value(&a.ready_fd)->value_name("FD"), "write ready/failed here")
      ("client-pid", po::value(&a.clients)->composing()->value_name("PID"), "a client task to kill on failure")
      ("stop-with-client", po::bool_switch(&a.stop_with_client), "stop the step when the first --client-pid exits")
      ("owner-pid", po::value(&a.owner_pid)->value_name("PID"),
       "the step's slurmstepd: when it dies, kill the clients and stop the step (default: the parent of the "
       "first --client-pid; 0: none)")
      ("agent-socket", po::value(&a.agent_socket)->value_name("PATH"), "the node agent's event socket")
      ("agent-fd", po::value(&a.agent_fd)->value_name("FD"),
       "an inherited socket connected to the agent's (tried before --agent-socket)")
      ("step", po::value(&a.step)->value_name("JOB.STEP"), "the step id events carry")
      ("gpus", po::value(&a.gpus)->value_name("LIST"), "the step's GPUs by node (NVML) index, for the agent's telemetry")
      ("node-name", po::value(&a.node_name)->value_name("NAME"),
       "this node's name as Slurm knows it, in failure.json of a step across nodes (default: the host name)")
      ("health-interval-ms", po::value(&a.health_ms)->value_name("MS"), "health probe period once ready (default 250)")
      ("stop-grace-ms", po::value(&a.grace_ms)->value_name("MS"), "SIGTERM to SIGKILL (default 3000)")
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
  return std::nullopt;
}

// Descriptors first, while every path still resolves: /proc, the run
// directory (a.run_dir_fd), the result directory (`result_dir_fd`; by
// default results/ in the run directory). Returns the exit status on a
// failure (said on the ready descriptor).
std::optional<int> OpenDirs(StepdArgs& a, int& result_dir_fd) {
  if (ix::ProcDirFd() < 0) return Fail(a.ready_fd, std::string("cannot open /proc: ") + std::strerror(errno));
  if (a.run_dir_fd < 0 && !a.run_dir.empty()) a.run_dir_fd = ::open(a.run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (a.run_dir_fd < 0 && !a.run_dir.empty()) {
    return Fail(a.ready_fd, "cannot open " + a.run_dir + ": " + std::strerror(errno));
  }
  if (a.run_dir_fd >= 0) ::fcntl(a.run_dir_fd, F_SETFD, FD_CLOEXEC);
  if (a.run_dir.empty() && a.run_dir_fd >= 0) a.run_dir = "(run directory)";
  if (!a.result_dir.empty()) {
    // A node after the head of a multi-node step writes to node<K>/ in the
    // step's result directory, which the head may not have made yet.
    (void)ix::MakeDirs(a.result_dir, 0755, 0755, "--result-dir");
    result_dir_fd = ::open(a.result_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } else if (a.run_dir_fd >= 0) {
    a.result_dir = a.run_dir + "/results";
    ::mkdirat(a.run_dir_fd, "results", 0755);
    result_dir_fd = ::openat(a.run_dir_fd, "results", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (result_dir_fd < 0 && !a.result_dir.empty()) {
    return Fail(a.ready_fd, "cannot open the result directory " + a.result_dir + ": " + std::strerror(errno) +
                                " (set IX_RESULT_DIR to a writable directory; in a container, one that is mounted)");
  }
  return std::nullopt;
}

// The plan: --plan, read in the run directory (through its descriptor)
// when it names no directory.
ix::Result<ix::LaunchPlan> ReadPlan(StepdArgs& a) {
  int err = 0;
  const bool in_run_dir = a.run_dir_fd >= 0 && a.plan_path.find('/') == std::string::npos;
  const std::string text =
      ix::ReadFileTextAt(in_run_dir ? a.run_dir_fd : AT_FDCWD, a.plan_path, &err, size_t{16} << 20);
  if (in_run_dir) a.plan_path = a.run_dir + "/" + a.plan_path;
  if (err) return ix::Error{"cannot read " + a.plan_path + ": " + std::strerror(err)};
  return ix::PlanFromJson(text, a.plan_path);
}

// --bind PROCESS=CPUS[@NUMA] into o.bindings; the exit status (2) on a bad one.
std::optional<int> ParseBinds(const StepdArgs& a, ix::SupervisorOptions& o) {
  std::string k, v;
  for (const auto& b : a.binds) {
    const size_t at = b.rfind('@');
    if (!SplitPair(b, k, v)) return Fail(a.ready_fd, "bad --bind " + b, 2);
    ix::BindingTarget t;
    const std::string cpus = at == std::string::npos ? v : b.substr(k.size() + 1, at - k.size() - 1);
    ix::Result<std::vector<int>> list = ix::ParseIdList(cpus, "--bind " + b);
    if (!list) return Fail(a.ready_fd, list.error().message, 2);
    t.cpus = list.value();
    if (at != std::string::npos) t.numa = std::atoi(b.c_str() + at + 1);
    o.bindings.emplace_back(k, t);
  }
  return std::nullopt;
}

// The supervisor's options from the command line and the open directories;
// the exit status on a failure.
std::optional<int> MakeOptions(const StepdArgs& a, int result_dir_fd, ix::SupervisorOptions& o) {
  o.run_dir = a.run_dir;
  o.run_dir_fd = a.run_dir_fd;
  o.result_dir = a.result_dir;
  o.result_dir_fd = result_dir_fd;
  o.stop_with_client = a.stop_with_client;
  o.ready_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.ready_timeout * 1000));
  o.health_interval = std::chrono::milliseconds(static_cast<int64_t>(a.health_ms));
  o.stop_grace = std::chrono::milliseconds(static_cast<int64_t>(a.grace_ms));
  o.ready_fd = a.ready_fd;
  o.agent_socket = a.agent_socket;
  o.agent_fd = a.agent_fd;
  if (a.agent_fd >= 0) ::fcntl(a.agent_fd, F_SETFD, FD_CLOEXEC);  // the servers never see it
  o.step = a.step;
  o.node_name = a.node_name;
  if (o.node_name.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) o.node_name = host;
  }
  // Set by `ixsubmit task` for the step it runs: events name their entry.
  if (const char* sweep = std::getenv("IX_SWEEP_ID"); sweep && *sweep) {
    o.sweep = sweep;
    const char* entry = std::getenv("IX_SWEEP_ENTRY");
    o.entry = entry && *entry ? std::strtoll(entry, nullptr, 10) : -1;
  }
  if (!a.gpus.empty()) {
    ix::Result<std::vector<int>> gpus = ix::ParseIdList(a.gpus, "--gpus");
    if (!gpus) return Fail(a.ready_fd, gpus.error().message, 2);
    o.node_gpus = gpus.value();
  }
  for (int c : a.clients) o.client_pids.push_back(static_cast<pid_t>(c));
  o.owner_pid = a.owner_pid >= 0 ? static_cast<pid_t>(a.owner_pid) : a.clients.empty() ? 0 : ClientParent(a.clients[0]);
  if (a.owner_pid < 0 && !a.clients.empty() && o.owner_pid == 0) {
    return Fail(a.ready_fd, "the step's slurmstepd (the parent of task " + std::to_string(a.clients[0]) + ") is gone");
  }
  if (o.owner_pid > 0) std::cerr << "ix-stepd: watching the step's slurmstepd (pid " << o.owner_pid << ")\n";
  return ParseBinds(a, o);
}

}  // namespace

int main(int argc, char** argv) {
  StepdArgs a;
  if (std::optional<int> done = ParseArgs(argc, argv, a)) return *done;
  int result_dir_fd = -1;
  if (std::optional<int> failed = OpenDirs(a, result_dir_fd)) return *failed;
  ix::Result<ix::LaunchPlan> plan = ReadPlan(a);
  if (!plan) return Fail(a.ready_fd, plan.error().message);
  ix::SupervisorOptions o;
  if (std::optional<int> failed = MakeOptions(a, result_dir_fd, o)) return *failed;
  // Orphans of what we start (a setsid'd grandchild whose parent died)
  // become our children, so nothing escapes the stop.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction sa{};
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return ix::RunSupervisor(plan.value(), o, &g_stop);
}
