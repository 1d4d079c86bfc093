#include "spank_plugin/stepd_side.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "core/file_text.h"
#include "core/launch_plan.h"
#include "core/placement.h"
#include "core/process.h"
#include "core/ports.h"
#include "core/recipe.h"
#include "core/topology.h"
#include "spank_plugin/step_setup.h"

namespace ix {
namespace {

// The step as planned in init_post_opt; tasks are forked from this
// slurmstepd afterwards and inherit it.
std::optional<StepSetup> g_setup;
uid_t g_uid = 0;
// Why the step was refused in init_post_opt. Reported from task_init, whose
// stderr is the step's (srun's): init_post_opt's messages reach only
// slurmd's log, and a failure there shows in srun only as "Plugin
// initialization failed".
std::optional<std::string> g_refusal;

std::optional<std::string> JobEnv(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::string StepId(spank_t sp) {
  uint32_t job = 0, step = 0;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  return std::to_string(job) + "." + std::to_string(step);
}

Status MakeDir(const std::string& path, mode_t mode, uid_t uid, gid_t gid) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return Error{"cannot create " + path + ": " + std::strerror(errno)};
  }
  if (::chown(path.c_str(), uid, gid) != 0) return Error{"cannot chown " + path + ": " + std::strerror(errno)};
  return Ok{};
}

// The ports of the step, leased for owner JOB.STEP.
// The node's port broker as plugstack.conf configures it.
Result<PortBroker> OpenBroker(const PluginArgs& args) {
  static BindProber prober;
  static ProcessLiveness live;
  PortBrokerConfig cfg;
  cfg.range = args.port_range;
  cfg.lease_dir = args.lease_dir;
  return PortBroker::Open(cfg, prober, live);
}

Result<PortList> LeasePorts(spank_t sp, const PluginArgs& args, const std::string& step,
                            const std::vector<std::string>& names) {
  Result<PortBroker> broker = OpenBroker(args);
  if (!broker) return broker.error();
  std::vector<PortWant> wants;
  for (const auto& n : names) wants.push_back({n, 1});
  std::vector<int> reserved;
  if (auto resv = JobEnv(sp, "SLURM_STEP_RESV_PORTS")) {
    Result<std::vector<int>> r = ParsePortList(*resv);
    if (r) reserved = r.value();
  }
  Result<std::vector<PortLease>> got = broker.value().Lease(MakeOwner(step, ::getpid()), wants, reserved);
  if (!got) return got.error();
  PortList ports;
  for (const auto& l : got.value()) ports.emplace_back(l.name, l.first);
  return ports;
}

void ReleasePorts(const PluginArgs& args, const std::string& step) {
  Result<PortBroker> broker = OpenBroker(args);
  if (!broker) {
    slurm_error("inferencex: %s: cannot release ports: %s", step.c_str(), broker.error().message.c_str());
    return;
  }
  if (Result<int> n = broker.value().Release(step); !n) {
    slurm_error("inferencex: %s: cannot release ports: %s", step.c_str(), n.error().message.c_str());
  }
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

Status Plan(spank_t sp, const PluginArgs& args, const StepOptions& o, StepSetup& s) {
  // The recipe file is parsed once per step (it is most of the planning time).
  Result<Recipe> recipe = LoadCheckedRecipe(o, args.recipe_dir);
  if (!recipe) return recipe.error();
  s.recipe_dir = args.recipe_dir;
  s.recipe = *o.recipe;
  s.request.arm = *o.arm;
  s.request.conc = *o.conc;
  s.request.eval_only = o.eval_only;
  s.ready_timeout_s = static_cast<int>(o.ready_timeout_s.value_or(3600));
  s.agent_socket = args.agent_socket;
  Result<std::vector<std::string>> names = PortNames(recipe.value(), s.request.arm);
  if (!names) return names.error();
  Result<PortList> ports = LeasePorts(sp, args, s.step_id, names.value());
  if (!ports) return ports.error();
  s.request.ports = ports.value();
  Result<LaunchPlan> plan = RenderPlan(recipe.value(), s.request);
  if (!plan) return plan.error();
  s.plan = std::move(plan).value();

  // Root's: the steps' directories, and the topology (live, once per boot;
  // or the topology= file, until it changes) cached there as JSON.
  if (Status d = MakeDir(args.run_dir, 0755, 0, 0); !d) return d.error();
  Result<Topology> topo = args.topology.empty() ? DiscoverTopologyCached(args.run_dir)
                                                : LoadTopologyXmlCached(args.topology, args.run_dir);
  if (!topo) return topo.error();
  PlacementRequest pr;
  std::unique_ptr<HostProbe> probe = MakeSystemHostProbe();
  if (args.topology.empty()) {
    MeasureFreeMemory(topo.value(), *probe);
    const HostState host = ReadHostState(*probe);
    pr.allowed_cpus = host.allowed_cpus;
    pr.shm_free_bytes = host.shm_free_bytes;
    pr.memlock = host.memlock;
  }
  Result<StepGpus> gpus = SelectStepGpus(topo.value(), JobEnv(sp, "SLURM_STEP_GPUS"),
                                         JobEnv(sp, "CUDA_VISIBLE_DEVICES"));
  const PlacementPolicy policy = o.placement == std::optional<std::string>("warn")
                                     ? PlacementPolicy::kWarn : PlacementPolicy::kStrict;
  std::string placement_json = "null";
  if (!gpus) {
    if (policy == PlacementPolicy::kStrict) return gpus.error();
    s.placement_notes.push_back(gpus.error().message);
  } else {
    pr.step_gpus = gpus.value().gpus;
    Result<Placement> placement = PlanPlacement(s.plan, topo.value(), pr);
    if (!placement) {
      if (policy == PlacementPolicy::kStrict) return placement.error();
      s.placement_notes.push_back(placement.error().message);
    } else {
      if (Status e = EnforcePlacement(placement.value(), policy); !e) return e.error();
      for (const auto& p : placement.value().problems) s.placement_notes.push_back(p);
      placement_json = PlacementToJson(placement.value(), true);
      // One engine process whose ranks span NUMA nodes places its workers
      // itself when the recipe says how: render again with the flags.
      if (s.plan.dp_layout == DpLayout::kEngine && RanksSpanNumaNodes(placement.value()) &&
          !recipe.value().engine.numa_flags.empty()) {
        s.request.gpu_places = GpuPlacesFor(s.plan, placement.value());
        Result<LaunchPlan> again = RenderPlan(recipe.value(), s.request);
        if (!again) return again.error();
        s.plan = std::move(again).value();
      }
      Result<std::vector<std::pair<std::string, BindingTarget>>> b = BindingsFor(s.plan, placement.value());
      if (b) {
        s.bindings = b.value();
      } else if (policy == PlacementPolicy::kStrict) {
        return b.error();
      } else {
        s.placement_notes.push_back(b.error().message);
      }
    }
  }

  uid_t uid = 0;
  gid_t gid = 0;
  spank_get_item(sp, S_JOB_UID, &uid);
  spank_get_item(sp, S_JOB_GID, &gid);
  g_uid = uid;
  // A fresh directory, written by root first and only then given to the job
  // user, so root never writes through a link the user planted. A leftover
  // of an earlier step with this id (job ids restart with slurmctld's state)
  // is removed; remove_all does not follow symlinks.
  s.run_dir = args.run_dir + "/" + s.step_id;
  std::error_code ec;
  std::filesystem::remove_all(s.run_dir, ec);
  if (Status d = MakeDir(s.run_dir, 0755, 0, 0); !d) return d.error();
  s.result_dir = JobEnv(sp, "IX_RESULT_DIR").value_or(s.run_dir + "/results");
  WriteText(s.run_dir + "/plan.json", PlanToJson(s.plan, true) + "\n");
  WriteText(s.run_dir + "/placement.json", placement_json + "\n");
  if (::chown(s.run_dir.c_str(), uid, gid) != 0) {
    return Error{"cannot chown " + s.run_dir + ": " + std::strerror(errno)};
  }
  return Ok{};
}

}  // namespace

int StepdInitPostOpt(spank_t sp, const PluginArgs& args, const StepOptions& o) {
  StepSetup s;
  s.step_id = StepId(sp);
  Status st = Plan(sp, args, o, s);
  if (!st) {
    ReleasePorts(args, s.step_id);
    g_refusal = "step " + s.step_id + " refused before anything started: " + st.error().message;
    slurm_error("inferencex: %s", g_refusal->c_str());
    return 0;  // the tasks fail in task_init, where the reason reaches srun
  }
  for (const auto& n : s.placement_notes) {
    slurm_error("inferencex: step %s: placement not met (--inferencex-placement=warn): %s",
                s.step_id.c_str(), n.c_str());
  }
  g_setup = std::move(s);
  return 0;
}

int StepdTaskInitPrivileged(spank_t /*sp*/, const PluginArgs& args) {
  if (!g_setup || args.memlock.mode == MemlockSetting::Mode::kKeep) return 0;
  const rlim_t want = args.memlock.mode == MemlockSetting::Mode::kUnlimited
                         ? RLIM_INFINITY : static_cast<rlim_t>(args.memlock.bytes);
  struct rlimit rl{want, want};
  if (::setrlimit(RLIMIT_MEMLOCK, &rl) == 0) return 0;
  // Without CAP_SYS_RESOURCE the hard limit cannot be raised: take what it
  // allows and say so (the placement check already judged pinned memory).
  const int err = errno;
  struct rlimit cur{};
  ::getrlimit(RLIMIT_MEMLOCK, &cur);
  cur.rlim_cur = cur.rlim_max;
  ::setrlimit(RLIMIT_MEMLOCK, &cur);
  slurm_error("inferencex: cannot raise RLIMIT_MEMLOCK (memlock=%s): %s; the tasks keep the hard limit",
              want == RLIM_INFINITY ? "unlimited" : std::to_string(want).c_str(), std::strerror(err));
  return 0;
}

int StepdTaskInit(spank_t sp) {
  if (g_refusal) {
    int task = -1;
    spank_get_item(sp, S_TASK_ID, &task);
    if (task == 0) slurm_error("inferencex: %s", g_refusal->c_str());
    return -1;
  }
  if (!g_setup) return 0;
  const StepSetup& s = *g_setup;
  int task = -1;
  spank_get_item(sp, S_TASK_ID, &task);
  if (task == 0) {
    // Said once, on the step's stderr (srun's), besides slurmd's log.
    for (const auto& n : s.placement_notes) {
      slurm_error("inferencex: step %s: placement not met (--inferencex-placement=warn): %s",
                  s.step_id.c_str(), n.c_str());
    }
    ::mkdir(s.result_dir.c_str(), 0755);
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) return -1;
    const std::vector<std::string> argv = StepdArgv(IX_STEPD_PATH, s, 3, ::getpid());
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    // ix-stepd runs in the job's environment (PATH, HOME, CUDA_VISIBLE_DEVICES
    // ...), which the task gets only at its exec: slurmstepd's is not it.
    char** job_env = nullptr;
    if (spank_get_item(sp, S_JOB_ENV, &job_env) != ESPANK_SUCCESS || !job_env) return -1;
    const std::string log = s.run_dir + "/stepd.log";
    // posix_spawn (a vfork), not fork: this task is a copy of slurmstepd,
    // whose page tables fork would copy for nothing. The child never keeps
    // the task's stdio: srun would wait for it.
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 3);
    posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    pid_t pid = 0;
    const int spawn_err = ::posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), job_env);
    posix_spawn_file_actions_destroy(&fa);
    if (spawn_err != 0) {
      ::close(pipefd[0]);
      ::close(pipefd[1]);
      WriteText(s.run_dir + "/state", "failed\n");
      slurm_error("inferencex: step %s: cannot start %s: %s", s.step_id.c_str(), cargv[0], std::strerror(spawn_err));
      return -1;
    }
    ::close(pipefd[1]);
    WriteText(s.run_dir + "/stepd.pid", std::to_string(pid) + "\n");
    std::string answer;
    char buf[512];
    for (;;) {
      const ssize_t n = ::read(pipefd[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      answer.append(buf, static_cast<size_t>(n));
    }
    ::close(pipefd[0]);
    if (answer.rfind("ready", 0) != 0) {
      if (!answer.empty() && answer.back() == '\n') answer.pop_back();
      // The other local tasks wait for this state: tell them now, also when
      // ix-stepd could not even start and so never wrote it.
      WriteText(s.run_dir + "/state", "failed\n");
      slurm_error("inferencex: step %s: server %s (logs: %s)", s.step_id.c_str(),
                  answer.empty() ? "supervisor exited before it was ready" : answer.c_str(),
                  s.result_dir.c_str());
      return -1;
    }
  } else {
    // Other local tasks wait for task 0's supervisor to report.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(s.ready_timeout_s + 60);
    for (;;) {
      int err = 0;
      const std::string state = ReadFileText(s.run_dir + "/state", &err);
      if (state.rfind("ready", 0) == 0) break;
      if (state.rfind("failed", 0) == 0 || std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (const auto& [k, v] : TaskEnvironment(s)) spank_setenv(sp, k.c_str(), v.c_str(), 1);
  return 0;
}

namespace {

// ix-stepd as this slurmstepd knows it: a pidfd taken on the pid it wrote,
// kept only if that process is the job user's (the pid file is the user's).
// The pidfd is taken first, so the pid checked is the pid signalled: it
// cannot be recycled in between. Without pidfds (Linux < 5.3) the pid alone.
struct Supervisor {
  pid_t pid = 0;
  int pidfd = -1;
  bool stopping = false;  // SIGTERM sent
};
std::optional<Supervisor> g_supervisor;
int g_tasks_exited = 0;

Supervisor* FindSupervisor() {
  if (g_supervisor) return g_supervisor->pid > 1 ? &*g_supervisor : nullptr;
  g_supervisor.emplace();
  int err = 0;
  const std::string pid_text = ReadFileText(g_setup->run_dir + "/stepd.pid", &err);
  const pid_t pid = err ? 0 : static_cast<pid_t>(std::atoi(pid_text.c_str()));
  if (pid <= 1) return nullptr;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  struct stat st{};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0 || st.st_uid != g_uid) {
    if (pidfd >= 0) ::close(pidfd);
    return nullptr;
  }
  g_supervisor->pid = pid;
  g_supervisor->pidfd = pidfd;
  return &*g_supervisor;
}

void Signal(const Supervisor& s, int sig) {
  if (s.pidfd >= 0) {
    ::syscall(SYS_pidfd_send_signal, s.pidfd, sig, nullptr, 0);
  } else {
    ::kill(s.pid, sig);
  }
}

// ix-stepd stops what it started on SIGTERM.
void StartStop() {
  Supervisor* s = FindSupervisor();
  if (!s || s->stopping) return;
  Signal(*s, SIGTERM);
  s->stopping = true;
}

}  // namespace

int StepdTaskExit(spank_t sp) {
  if (!g_setup) return 0;
  // The servers outlive no client: once the last local task has exited,
  // ix-stepd starts stopping them while Slurm ends the step, and `exit`
  // only waits for what is left.
  int local_tasks = 1;
  spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks);
  if (++g_tasks_exited >= local_tasks) StartStop();
  return 0;
}

int StepdExit(spank_t /*sp*/, const PluginArgs& args) {
  if (!g_setup) return 0;
  const StepSetup& s = *g_setup;
  StartStop();
  if (Supervisor* sup = FindSupervisor()) {
    const pid_t pid = sup->pid;
    // A zombie counts as gone.
    auto gone = [pid] {
      Result<ProcessInfo> p = ReadProcessInfo(pid);
      return !p || p.value().exited();
    };
    if (sup->pidfd >= 0) {
      struct pollfd pfd{sup->pidfd, POLLIN, 0};
      while (::poll(&pfd, 1, 5000) < 0 && errno == EINTR) {
      }
    } else {
      for (int i = 0; i < 500 && !gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!gone()) Signal(*sup, SIGKILL);
    if (sup->pidfd >= 0) ::close(sup->pidfd);
  }
  g_supervisor.reset();
  ReleasePorts(args, s.step_id);
  g_setup.reset();
  return 0;
}

}  // namespace ix
