#include "spank_plugin/slurmstepd_side.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <thread>

#include "core/process/event_sink.h"
#include "core/base/dir_at.h"
#include "core/base/file_text.h"
#include "core/recipe/launch_plan.h"
#include "core/node/placement.h"
#include "core/process/pidfd.h"
#include "core/process/process.h"
#include "core/node/ports.h"
#include "core/recipe/recipe.h"
#include "core/node/topology.h"
#include "spank_plugin/ix_stepd_launch.h"
#include "spank_plugin/memlock_policy.h"
#include "spank_plugin/slurm_api.h"
#include "spank_plugin/step_backstop.h"
#include "spank_plugin/step_dirs.h"
#include "spank_plugin/step_nodes.h"
#include "spank_plugin/step_setup.h"
#include "spank_plugin/stepd_stop.h"

namespace ix {
namespace {

// The step as planned in init_post_opt; tasks are forked from this
// slurmstepd afterwards and inherit it, with the descriptors opened on the
// host (ix-stepd, the run directory) and slurmstepd's mount namespace.
std::optional<StepSetup> g_setup;
StepdHandles g_handles;
int g_run_base_fd = -1;  // run_dir= itself: root's, checked like the lease directory
struct stat g_host_mntns{};
uid_t g_uid = 0;
// Why the step was refused in init_post_opt. Reported from task_init, whose
// stderr is the step's (srun's): init_post_opt's messages reach only
// slurmd's log, and a failure there shows in srun only as "Plugin
// initialization failed".
std::optional<std::string> g_refusal;
int64_t g_step_nodes = 1;  // the step's node count (S_JOB_NNODES), also when refused

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

// `use_reserved`: Slurm's reserved ports of the step are tried first (a step
// across nodes keeps them for its step ports).
Result<PortList> LeasePorts(spank_t sp, const PluginArgs& args, const std::string& step,
                            const std::vector<std::string>& names, bool use_reserved) {
  if (names.empty()) return PortList{};  // an arm whose ports are all step ports (tp8pp2)
  Result<PortBroker> broker = OpenBroker(args);
  if (!broker) return broker.error();
  std::vector<PortWant> wants;
  for (const auto& n : names) wants.push_back({n, 1});
  std::vector<int> reserved;
  if (auto resv = use_reserved ? JobEnv(sp, "SLURM_STEP_RESV_PORTS") : std::nullopt) {
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
  if (Result<int> n = broker.value().ReleaseHeldBy(MakeOwner(step, ::getpid())); !n) {
    slurm_error("inferencex: %s: cannot release ports: %s", step.c_str(), n.error().message.c_str());
  }
}

// A file in the step's run directory, through its descriptor.
void WriteRunFile(const std::string& name, const std::string& text) {
  if (!g_setup || g_handles.run_dir_fd < 0) return;
  if (Status s = WriteFileAtomicAt(g_handles.run_dir_fd, g_setup->run_dir, name, text); !s) {
    slurm_error("inferencex: %s", s.error().message.c_str());
  }
}

// The plan's pinned host-memory needs by name ("" when none): the recipe's
// and its KV offload tier's.
std::string PinnedNeeds(const LaunchPlan& plan) {
  std::string names;
  for (const PlannedHostMemory& n : plan.host_memory) {
    if (n.pinned) names += (names.empty() ? "" : ", ") + n.name;
  }
  return names;
}

// slurmstepd's RLIMIT_MEMLOCK now, which its tasks inherit.
std::optional<MemlockLimit> CurrentMemlock() {
  struct rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return std::nullopt;
  return MemlockLimit{rl.rlim_cur == RLIM_INFINITY, rl.rlim_cur == RLIM_INFINITY ? 0 : rl.rlim_cur};
}

// Raises slurmstepd's own RLIMIT_MEMLOCK as decided, soft to the target and
// hard to at least it; its tasks inherit it at fork. Without
// CAP_SYS_RESOURCE the hard limit cannot go up: the soft one goes as far as
// the hard one allows, and the decision records what the tasks keep.
void ApplyMemlock(MemlockDecision& d) {
  if (!d.raise_to) return;
  const rlim_t want = d.raise_to->unlimited ? RLIM_INFINITY : static_cast<rlim_t>(d.raise_to->bytes);
  struct rlimit cur{};
  ::getrlimit(RLIMIT_MEMLOCK, &cur);
  struct rlimit rl{want, cur.rlim_max == RLIM_INFINITY || cur.rlim_max > want ? cur.rlim_max : want};
  if (::setrlimit(RLIMIT_MEMLOCK, &rl) == 0) return;
  const int err = errno;
  cur.rlim_cur = cur.rlim_max;
  ::setrlimit(RLIMIT_MEMLOCK, &cur);
  RecordRaiseFailure(d, CurrentMemlock(), std::strerror(err));
  slurm_error("inferencex: RLIMIT_MEMLOCK: %s", d.reason.c_str());
}

// Directories of steps whose slurmstepd died without its `exit` hook
// (SIGKILL): removed, so they do not pile up in /run.
void RemoveStaleSteps(const std::string& run_dir) {
  static ProcessLiveness live;
  std::vector<std::string> problems;
  Result<std::vector<std::string>> gone = RemoveStaleStepDirs(g_run_base_fd, run_dir, live, &problems);
  if (!gone) problems.push_back(gone.error().message);
  for (const std::string& step : gone ? gone.value() : std::vector<std::string>{}) {
    slurm_info("inferencex: removed %s/%s: its slurmstepd is gone", run_dir.c_str(), step.c_str());
  }
  for (const std::string& p : problems) slurm_error("inferencex: stale step directories: %s", p.c_str());
}

// The step's directory and its record in run_dir, never following a link;
// `keep_dir`: the directory stays (without its record: for the admin).
void RemoveStepDir(const std::string& run_dir, const std::string& step, bool keep_dir) {
  if (!keep_dir) {
    if (Status r = RemoveTreeAt(g_run_base_fd, run_dir, step, 10000); !r) {
      slurm_error("inferencex: step %s: %s", step.c_str(), r.error().message.c_str());
    }
  }
  ::unlinkat(g_run_base_fd, StepOwnerFile(step).c_str(), 0);
}

// The mount namespace this process is in now.
bool MountNamespace(struct stat& st) { return ::fstatat(ProcDirFd(), "self/ns/mnt", &st, 0) == 0; }

// A step across nodes (docs/MULTINODE.md): this node's rank, the head's
// address from slurmctld (the step's first node, its NodeAddr) and the step
// ports from Slurm's reservation, the same on every node; the head proves
// them free by binding them (no node but the head listens on them).
Status PlanAcrossNodes(spank_t sp, const PluginArgs& args, const Recipe& recipe, const Arm& arm, StepSetup& s) {
  uint32_t nodes = 1, node_id = 0;
  spank_get_item(sp, S_JOB_NNODES, &nodes);
  spank_get_item(sp, S_JOB_NODEID, &node_id);
  if (Status c = CheckArmNodes(arm, nodes); !c) return c;
  if (arm.nodes == 1) return Ok{};
  Result<std::string> head = FirstHost(JobEnv(sp, "SLURM_STEP_NODELIST").value_or(""));
  if (!head) return head.error();
  Result<std::string> addr = SlurmNodeAddress(head.value());
  if (!addr) return addr.error();
  s.request.node_rank = node_id;
  s.request.head_addr = addr.value();
  Result<std::vector<std::string>> names = StepPortNames(recipe, arm.name);
  if (!names) return names.error();
  Result<PortList> ports = StepPortsFromReservation(names.value(), JobEnv(sp, "SLURM_STEP_RESV_PORTS"), args.port_range);
  if (!ports) return ports.error();
  BindProber prober;
  for (const auto& [name, port] : ports.value()) {
    if (node_id == 0 && !prober.IsFree(port)) {
      return Error{"port " + std::to_string(port) + " (" + name + ", reserved by Slurm for the step) is in use on the "
                   "head " + head.value()};
    }
  }
  s.step_ports = ports.value();
  return Ok{};
}

// The recipe (parsed once per step: it is most of the planning time), the
// step's ports leased and its plan rendered with them.
Result<Recipe> RenderStep(spank_t sp, const PluginArgs& args, const StepOptions& o, StepSetup& s) {
  Result<Recipe> recipe = LoadCheckedRecipe(o, args.recipe_dir);
  if (!recipe) return recipe.error();
  s.recipe_dir = args.recipe_dir;
  s.recipe = *o.recipe;
  s.request.arm = *o.arm;
  s.request.conc = *o.conc;
  s.request.eval_only = o.eval_only;
  s.request.kv_offload = o.kv_offload.value_or("");
  s.request.total_cpu_dram_gb = o.kv_offload_dram_gb.value_or(0);
  if (o.hang_after_s) s.request.hang_after_s = static_cast<double>(*o.hang_after_s);
  // ix-stepd writes the tier's files there before anything starts.
  const std::string results = JobEnv(sp, "IX_RESULT_DIR").value_or("");
  s.request.result_dir = results.empty() ? args.run_dir + "/" + s.step_id + "/results" : results;
  s.ready_timeout_s = static_cast<int>(o.ready_timeout_s.value_or(3600));
  s.agent_socket = args.agent_socket;
  const Arm* arm = recipe.value().FindArm(s.request.arm);
  if (!arm) return Error{"recipe " + s.recipe + " has no arm " + s.request.arm};
  if (Status n = PlanAcrossNodes(sp, args, recipe.value(), *arm, s); !n) return n.error();
  Result<std::vector<std::string>> names = PortNames(recipe.value(), s.request.arm, s.request.kv_offload);
  if (!names) return names.error();
  Result<PortList> ports = LeasePorts(sp, args, s.step_id, names.value(), arm->nodes == 1);
  if (!ports) return ports.error();
  s.request.ports = ports.value();
  s.request.ports.insert(s.request.ports.end(), s.step_ports.begin(), s.step_ports.end());
  Result<LaunchPlan> plan = RenderPlan(recipe.value(), s.request);
  if (!plan) return plan.error();
  s.plan = std::move(plan).value();
  return recipe;
}

// The facts of this node for the placement (topology, RLIMIT_MEMLOCK as
// raised for a recipe that pins memory, the host's CPUs and /dev/shm, the
// step's GPUs), handed to PlaceStep, which decides under the step's policy.
// Returns placement.json's text.
Result<std::string> PlaceOnNode(spank_t sp, const PluginArgs& args, const StepOptions& o, const Recipe& recipe,
                                StepSetup& s) {
  // Root's: the steps' directories, and the topology (live, once per boot;
  // or the topology= file, until it changes) cached there as JSON.
  Result<int> base = OpenOwnedDir(args.run_dir, 0755, "run_dir");
  if (!base) return base.error();
  g_run_base_fd = base.value();
  Result<Topology> topo = args.topology.empty() ? DiscoverTopologyCached(args.run_dir)
                                                : LoadTopologyXmlCached(args.topology, args.run_dir);
  if (!topo) return topo.error();
  PlacementRequest pr;
  const std::string pinned = PinnedNeeds(s.plan);
  MemlockDecision memlock = DecideMemlock(pinned, args.memlock, CurrentMemlock());
  ApplyMemlock(memlock);
  pr.pinned_memory = !pinned.empty();
  std::unique_ptr<HostProbe> probe = MakeSystemHostProbe();
  if (args.topology.empty()) {  // topology= describes another host: its facts only
    MeasureFreeMemory(topo.value(), *probe);
    const HostState host = ReadHostState(*probe);
    pr.allowed_cpus = host.allowed_cpus;
    pr.shm_free_bytes = host.shm_free_bytes;
    pr.memlock = memlock.tasks_limit;
  }
  Result<StepGpus> gpus = SelectStepGpus(topo.value(), JobEnv(sp, "SLURM_STEP_GPUS"),
                                         JobEnv(sp, "CUDA_VISIBLE_DEVICES"));
  return PlaceStep(s, recipe, topo.value(), gpus, pr, memlock, StepPlacementPolicy(o.placement));
}

// The step's run directory: fresh, made and written by root through
// descriptors (plan.json, placement.json) and only then given to the job
// user, so root never works through a link the user planted. A leftover
// with this id (job ids restart with slurmctld's state) is removed first,
// never following a link. ix-stepd and the directory are opened here, on
// the host: the task may run in a container where neither exists by path.
Status MakeRunDir(spank_t sp, const PluginArgs& args, StepSetup& s, const std::string& placement_json) {
  uid_t uid = 0;
  gid_t gid = 0;
  spank_get_item(sp, S_JOB_UID, &uid);
  spank_get_item(sp, S_JOB_GID, &gid);
  g_uid = uid;
  s.run_dir = args.run_dir + "/" + s.step_id;
  RemoveStaleSteps(args.run_dir);
  if (Status r = RemoveTreeAt(g_run_base_fd, args.run_dir, s.step_id); !r) return r.error();
  const LeaseOwner me = MakeOwner(s.step_id, ::getpid());
  if (Status w = WriteFileAtomicAt(g_run_base_fd, args.run_dir, StepOwnerFile(s.step_id), FormatStepOwner(me)); !w) {
    return w.error();
  }
  if (::mkdirat(g_run_base_fd, s.step_id.c_str(), 0755) != 0) {
    return Error{"cannot create " + s.run_dir + ": " + std::strerror(errno)};
  }
  s.result_dir = JobEnv(sp, "IX_RESULT_DIR").value_or("");
  Result<int> exe = OpenStepdExe(args.stepd);
  if (!exe) return exe.error();
  g_handles.exe_fd = exe.value();
  g_handles.run_dir_fd = ::openat(g_run_base_fd, s.step_id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (g_handles.run_dir_fd < 0) return Error{"cannot open " + s.run_dir + ": " + std::strerror(errno)};
  // Connected here, on the host: under Pyxis the socket's path may not
  // exist in the container where ix-stepd runs.
  g_handles.agent_fd = ConnectAgentSocket(args.agent_socket);
  // Everything after goes through the descriptor.
  const int dir = g_handles.run_dir_fd;
  for (const auto& [name, text] : {std::pair{"plan.json", PlanToJson(s.plan, true)}, {"placement.json", placement_json}}) {
    if (Status w = WriteFileAtomicAt(dir, s.run_dir, name, text + "\n"); !w) return w.error();
  }
  if (::fchown(dir, uid, gid) != 0) return Error{"cannot chown " + s.run_dir + ": " + std::strerror(errno)};
  return Ok{};
}

// The whole plan of init_post_opt; what it leased or made is in the globals
// and `s`, for the caller to undo on an Error.
Status Plan(spank_t sp, const PluginArgs& args, const StepOptions& o, StepSetup& s) {
  Result<Recipe> recipe = RenderStep(sp, args, o, s);
  if (!recipe) return recipe.error();
  Result<std::string> placement_json = PlaceOnNode(sp, args, o, recipe.value(), s);
  if (!placement_json) return placement_json.error();
  if (Status d = MakeRunDir(sp, args, s, placement_json.value()); !d) return d.error();
  if (!MountNamespace(g_host_mntns)) return Error{std::string("cannot read /proc/self/ns/mnt: ") + std::strerror(errno)};
  return Ok{};
}

// Said once per step, in slurmd's log and (from task 0) on srun's stderr.
void LogPlacementNotes(const StepSetup& s) {
  for (const auto& n : s.placement_notes) {
    slurm_error("inferencex: step %s: placement not met (--inferencex-placement=warn): %s",
                s.step_id.c_str(), n.c_str());
  }
}

}  // namespace

int SlurmstepdInitPostOpt(spank_t sp, const PluginArgs& args, const StepOptions& o) {
  StepSetup s;
  s.step_id = StepId(sp);
  uint32_t nodes = 1;
  spank_get_item(sp, S_JOB_NNODES, &nodes);
  g_step_nodes = nodes;
  Status st = Plan(sp, args, o, s);
  if (!st) {
    // Nothing leased (the broker refused, or its lock was not had within
    // its deadline): nothing to release, and no second wait for that lock.
    if (!s.request.ports.empty()) ReleasePorts(args, s.step_id);
    CloseStepdHandles(g_handles);
    if (g_run_base_fd >= 0) {
      RemoveStepDir(args.run_dir, s.step_id, false);
      ::close(g_run_base_fd);
      g_run_base_fd = -1;
    }
    g_refusal = "step " + s.step_id + " refused before anything started: " + st.error().message;
    slurm_error("inferencex: %s", g_refusal->c_str());
    return 0;  // the tasks fail in task_init, where the reason reaches srun
  }
  LogPlacementNotes(s);
  g_setup = std::move(s);
  return 0;
}

namespace {

// When the job asked for a Pyxis container: from sbatch, Slurm carries the
// option in the job's environment; from srun alone it does not, so Slurm is
// also asked for the option by name (Slurm 22.05 answers it across
// plugins); Pyxis also takes the image from PYXIS_CONTAINER_IMAGE.
bool PyxisRequested(spank_t sp) {
  if (JobEnv(sp, "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image") || JobEnv(sp, "PYXIS_CONTAINER_IMAGE")) {
    return true;
  }
  struct spank_option image{const_cast<char*>("container-image"), const_cast<char*>("IMAGE"),
                            const_cast<char*>(""), 1, 0, nullptr};
  char* value = nullptr;
  return spank_option_getopt(sp, &image, &value) == ESPANK_SUCCESS;
}

// A Pyxis container was asked for, yet this task is still in slurmstepd's
// mount namespace: Pyxis has not joined it, so it comes after this plugin
// in plugstack.conf, and the servers would run on the host.
std::optional<std::string> WrongPlugstackOrder(spank_t sp) {
  struct stat now{};
  if (!PyxisRequested(sp) || !MountNamespace(now)) return std::nullopt;
  if (now.st_ino != g_host_mntns.st_ino || now.st_dev != g_host_mntns.st_dev) return std::nullopt;
  return std::string("a Pyxis container was requested (--container-image) but this task is not in it: "
                     "spank_inferencex.so is listed before pyxis in plugstack.conf; list it after pyxis "
                     "(the servers must run inside the container)");
}

// Task 0: starts ix-stepd and waits for its word. Returns 0 when ready.
int StartSupervisor(spank_t sp, const StepSetup& s) {
  int local_tasks = 1;
  spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks);
  // With one local task on the head, that task is the client: ix-stepd
  // stops the servers the moment it exits, before any task_exit hook runs.
  // A node after the head keeps its part up until the head ends it.
  std::vector<std::string> argv =
      StepdArgv("ix-stepd", s, kStepdReadyFd, ::getpid(), kStepdRunDirFd, local_tasks == 1 && s.plan.node_rank == 0,
                g_handles.agent_fd >= 0 ? kStepdAgentFd : -1);
  if (s.plan.nodes > 1) {
    if (std::optional<std::string> name = JobEnv(sp, "SLURMD_NODENAME")) argv.insert(argv.end(), {"--node-name", *name});
  }
  // ix-stepd runs in the job's environment as it is now (under Pyxis: the
  // image's, PATH included), which the task gets only at its exec.
  char** job_env = nullptr;
  if (spank_get_item(sp, S_JOB_ENV, &job_env) != ESPANK_SUCCESS || !job_env) return -1;
  Result<LaunchedStepd> l = LaunchStepd(g_handles, argv, job_env);
  if (!l) {
    WriteRunFile("state", "failed\n");
    slurm_error("inferencex: step %s: %s", s.step_id.c_str(), l.error().message.c_str());
    return -1;
  }
  WriteRunFile("stepd.pid", std::to_string(l.value().pid) + "\n");
  const std::string answer = ReadReadyAnswer(l.value().ready_fd);
  if (answer.rfind("ready", 0) == 0) return 0;
  // The other local tasks wait for this state: tell them now, also when
  // ix-stepd could not even start and so never wrote it.
  WriteRunFile("state", "failed\n");
  slurm_error("inferencex: step %s: server %s (logs: %s, and stepd.log in %s)", s.step_id.c_str(),
              answer.empty() ? "supervisor exited before it was ready" : answer.c_str(),
              s.result_dir.c_str(), s.run_dir.c_str());
  return -1;
}

}  // namespace

int SlurmstepdTaskInit(spank_t sp) {
  int task = -1;
  spank_get_item(sp, S_TASK_ID, &task);
  if (g_refusal) {
    if (task == 0) slurm_error("inferencex: %s", g_refusal->c_str());
    return -1;
  }
  if (!g_setup) return 0;
  const StepSetup& s = *g_setup;
  if (std::optional<std::string> wrong = WrongPlugstackOrder(sp)) {
    if (task == 0) slurm_error("inferencex: step %s: %s", s.step_id.c_str(), wrong->c_str());
    WriteRunFile("state", "failed\n");
    return -1;
  }
  // Results go where the job says (IX_RESULT_DIR), else, like Slurm's
  // slurm-%j.out, to inferencex-JOB.STEP in the step's working directory
  // (under Pyxis: the container's); never to run_dir, which ends with the step.
  if (g_setup->result_dir.empty()) {
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) {
      if (task == 0) {
        slurm_error("inferencex: step %s: no working directory for the results (%s); set IX_RESULT_DIR",
                    s.step_id.c_str(), std::strerror(errno));
      }
      WriteRunFile("state", "failed\n");
      return -1;
    }
    g_setup->result_dir = std::string(cwd) + (cwd[1] ? "/" : "") + "inferencex-" + s.step_id;
  }
  // Across nodes the result directory may be shared (NFS, Lustre): the
  // head's logs stay at its top, each other node's go to node<K>/ in it.
  if (s.plan.node_rank > 0) g_setup->result_dir += "/node" + std::to_string(s.plan.node_rank);
  if (task == 0) {
    // Said once, on the step's stderr (srun's), besides slurmd's log.
    LogPlacementNotes(s);
    if (StartSupervisor(sp, s) != 0) return -1;
  } else {
    // The other local tasks wait for task 0's supervisor to report, and
    // give up as soon as it fails or dies.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(s.ready_timeout_s + 60);
    if (Status w = WaitForStepd(g_handles.run_dir_fd, deadline); !w) {
      slurm_error("inferencex: step %s: task %d: %s", s.step_id.c_str(), task, w.error().message.c_str());
      return -1;
    }
  }
  for (const auto& [k, v] : TaskEnvironment(s)) spank_setenv(sp, k.c_str(), v.c_str(), 1);
  return 0;
}

namespace {

int g_tasks_exited = 0;
bool g_backstop_fired = false;
std::optional<StepdStop> g_stepd_stop;  // made at the first stop or wait, once per step

StepdStop& Stepd() {
  if (!g_stepd_stop) g_stepd_stop.emplace(g_handles.run_dir_fd, g_uid);
  return *g_stepd_stop;
}

// Whether this node's part of the step failed: refused, or ix-stepd said so.
bool PartFailed() {
  if (g_refusal) return true;
  int err = 0;
  const std::string state = ReadFileTextAt(g_handles.run_dir_fd, "state", &err, 64);
  return !err && state.rfind("failed", 0) == 0;
}

// A failed part of a step across nodes ends the step on every node
// (SIGTERM to all its tasks and processes, as scancel --signal would): a
// node whose part never started, or whose engine hangs in a collective with
// a dead peer, would otherwise keep srun waiting. Half a second first, so
// that a failure the engines carry to the head themselves is recorded there.
void EndStepEverywhere(spank_t sp) {
  if (g_step_nodes <= 1 || !PartFailed()) return;
  uint32_t job = 0, step = 0;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  slurm_error("inferencex: step %u.%u: this node's part failed: ending the step on every node", job, step);
  if (Status k = SlurmSignalStep(job, step, SIGTERM); !k) slurm_error("inferencex: %s", k.error().message.c_str());
}

// The backstop: what outlived ix-stepd's stop is killed from here (the
// host's /proc) before the leases go, and said in slurmd's log, the step's
// state and an event.
void Backstop(const StepSetup& s, const std::string& agent_socket, const std::vector<ProcessId>& remembered) {
  std::set<int> ports;
  for (const auto& [name, port] : s.plan.ports) ports.insert(port);
  Result<std::vector<ProcessInfo>> left = FindLeftovers(remembered, ports, g_uid);
  if (!left) {
    slurm_error("inferencex: step %s: backstop: %s", s.step_id.c_str(), left.error().message.c_str());
    return;
  }
  if (left.value().empty()) return;
  std::vector<ProcessId> ids;
  for (const ProcessInfo& p : left.value()) ids.push_back(p.id());
  StopOptions so;
  so.grace = std::chrono::milliseconds(200);  // they had their SIGTERM from ix-stepd
  const StopReport r = StopTree({}, ids, so);
  const std::string what = "backstop: " + std::to_string(left.value().size()) +
                           " process(es) left after ix-stepd's stop, killed from slurmstepd: " + r.Summary();
  slurm_error("inferencex: step %s: %s", s.step_id.c_str(), what.c_str());
  WriteRunFile("state", "backstop\n");
  WriteRunFile("backstop.txt", what + "\n");
  g_backstop_fired = true;  // the run directory stays, for the admin
  EventSink(agent_socket).Send("backstop", s.step_id, {{"detail", what}});  // a string field: `what` is text, not JSON
}

}  // namespace

int SlurmstepdTaskExit(spank_t sp) {
  int local_tasks = 1;
  spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks);
  if (!g_setup) {
    if (g_refusal && ++g_tasks_exited == local_tasks) EndStepEverywhere(sp);
    return 0;
  }
  // The servers outlive no client. Slurm 22.05's slurmstepd, once every
  // task is reaped (each through this hook), SIGKILLs the whole step
  // (proctrack) and only then runs `exit`: so the last local task's hook
  // is where ix-stepd's graceful stop must start and end, engines getting
  // their SIGTERM and grace, and "finished" written before that kill. srun
  // hears of the tasks' exits only after this hook returns.
  if (++g_tasks_exited < local_tasks) return 0;
  if (g_setup->plan.node_rank > 0) Stepd().AwaitOwnEnd();
  Stepd().Stop();
  // A failure after readiness shows in srun only as "task 0: Killed", and
  // the run directory goes with the step: slurmd's log keeps the reason,
  // from the run directory's copy of failure.json, which is there even when
  // the result directory is full.
  int err = 0;
  const std::string failure = ReadFileTextAt(g_handles.run_dir_fd, "failure.json", &err, 1 << 16);
  if (std::optional<std::string> why = err ? std::nullopt : FailureReason(failure)) {
    slurm_error("inferencex: step %s failed: %s (failure.json and logs in %s)", g_setup->step_id.c_str(), why->c_str(),
                g_setup->result_dir.c_str());
  }
  EndStepEverywhere(sp);
  return 0;
}

int SlurmstepdExit(spank_t /*sp*/, const PluginArgs& args) {
  if (!g_setup) return 0;
  const StepSetup& s = *g_setup;
  Stepd().Stop();  // done already, unless a task never reached task_exit
  Backstop(s, args.agent_socket, Stepd().remembered());
  std::vector<PortLease> kept;
  if (Result<PortBroker> broker = OpenBroker(args); !broker) {
    slurm_error("inferencex: %s: cannot release ports: %s", s.step_id.c_str(), broker.error().message.c_str());
  } else if (Result<int> n = broker.value().ReleaseHeldBy(MakeOwner(s.step_id, ::getpid()), &kept); !n) {
    slurm_error("inferencex: %s: cannot release ports: %s", s.step_id.c_str(), n.error().message.c_str());
  }
  for (const PortLease& l : kept) {
    slurm_error("inferencex: step %s: port %d (%s) is still bound after the step; its lease is kept until it is free",
                s.step_id.c_str(), l.first, l.name.c_str());
  }
  CloseStepdHandles(g_handles);
  // Nothing of the step stays in run_dir (a tmpfs on a node), unless the
  // backstop had to act: then it is the record slurmd's log points to.
  RemoveStepDir(args.run_dir, s.step_id, g_backstop_fired);
  ::close(g_run_base_fd);
  g_run_base_fd = -1;
  g_stepd_stop.reset();
  g_setup.reset();
  return 0;
}

}  // namespace ix
