#include "spank_plugin/step_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>

#include "core/base/file_text.h"
#include "core/node/topology.h"
#include "core/process/event_sink.h"
#include "core/process/http_probe.h"
#include "core/process/process.h"
#include "core/process/process_watch.h"
#include "core/process/diagnosis.h"
#include "core/process/readiness.h"
#include "spank_plugin/step_hang.h"
#include "spank_plugin/step_processes.h"
#include "spank_plugin/step_records.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;

// Writes through the directory descriptors; a write that fails is said in
// ix-stepd's log, never fatal.
void WriteIn(int dir, const std::string& where, const std::string& name, const std::string& text) {
  if (dir < 0) return;
  if (Status s = WriteFileAtomicAt(dir, where, name, text); !s) {
    std::fprintf(stderr, "ix-stepd: %s\n", s.error().message.c_str());
  }
}

void SetState(const SupervisorOptions& o, const std::string& state) {
  WriteIn(o.run_dir_fd, o.run_dir, "state", state + "\n");
}

void Report(int& fd, const std::string& line) {
  if (fd < 0) return;
  const std::string text = line + "\n";
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
  fd = -1;
}

// One started process and what is known of it.
struct Started {
  const PlannedProcess* planned;
  SpawnedProcess spawned;
  std::string log;  // its log's name in the result directory ("" = none)
};

// The labels under which ix-stepd watches the client task and the step's
// slurmstepd.
constexpr const char* kClientLabel = "client";
constexpr const char* kOwnerLabel = "slurmstepd";

}  // namespace

namespace {

bool IsClient(const ProcessExit& x) {
  return x.label == kClientLabel;
}
bool IsOwner(const ProcessExit& x) {
  return x.label == kOwnerLabel;
}

// One run of a step's plan, phase by phase: watch the owner and the
// client, start the processes, wait for readiness, watch until the end.
// Each phase returns nullopt to go on, or the run's exit status once it has
// ended the run (stopped or failed). Invariants: `started_` holds every
// process started, in plan order, and whichever phase ends the run stops
// them all; `failed_*` name what a failure is blamed on (empty: nothing
// in particular) and are set before Fail writes the record.
class Supervision {
 public:
  Supervision(const LaunchPlan& plan, const SupervisorOptions& o, volatile const sig_atomic_t* stop_requested)
      : plan_(plan), o_(o), stop_requested_(stop_requested), ready_fd_(o.ready_fd), events_(o.agent_fd, o.agent_socket) {
    if (!o.sweep.empty()) events_.SetEntry(o.sweep, o.entry);
  }

  int Run() {
    if (std::optional<int> end = WatchOwnerAndClient()) return *end;
    if (std::optional<int> end = StartAll()) return *end;
    if (std::optional<int> end = AwaitReady()) return *end;
    BecomeReady();
    return WatchUntilEnd();
  }

 private:
  // Why WaitReady was told to give up, as the abort callback saw it.
  struct ReadyAbort {
    std::optional<ProcessExit> early;       // a started process (or descendant) exited
    std::optional<ProcessExit> owner_gone;  // the step's slurmstepd died
    bool client_gone = false;
  };

  // Every started tree and what was seen of it at readiness, the servers
  // (a KV offload tier's Mooncake master) after the engine and router that
  // use them; with the watch's pidfds in case /proc cannot be read.
  void StopAll() {
    StopOptions so;
    so.grace = o_.stop_grace;
    so.poll = std::chrono::milliseconds(1);  // a fast exit is seen at once; one /proc pass a poll
    so.max_poll = std::chrono::milliseconds(5);
    for (const bool servers : {false, true}) {
      std::vector<ProcessId> roots;
      std::vector<HeldProcess> held;
      for (const auto& s : started_) {
        if ((s.planned->role == PlannedProcess::kServerRole) != servers) continue;
        roots.push_back(s.spawned.id);
        for (const HeldProcess& h : watch_ ? watch_->Held() : std::vector<HeldProcess>{}) {
          if (h.label != kClientLabel && h.label.rfind(s.planned->name, 0) == 0) held.push_back(h);
        }
      }
      if (roots.empty()) continue;
      const StopReport r = StopTree(roots, servers ? std::vector<ProcessId>{} : known_, so, held);
      std::fprintf(stderr, "ix-stepd: %s\n", r.Summary().c_str());
    }
  }

  // A failure: recorded, everything stopped, reported. Returns 1.
  int Fail(const std::string& reason) {
    // The record first: whoever sees the client die (srun, a test, the
    // sweep) finds failure.json already there.
    FailureRecord own{failed_process_, failed_pid_, reason, "", "", -1, failed_ms_ > 0 ? failed_ms_ : UnixMsNow(),
                      hang_ ? "hang" : "", hang_ ? hang_->Json() : "", diagnosis_};
    if (!failed_log_.empty()) own.log_tail = TailLinesAt(o_.result_dir_fd, failed_log_, 50);
    if (plan_.nodes > 1) {
      own.node = o_.node_name;
      own.node_rank = plan_.node_rank;
    }
    std::string json = FailureJson(own);
    std::string why = reason;
    if (std::optional<FailureRecord> first = NodeFailedFirst(own.unix_ms)) {
      json = FailureJsonAfter(*first, own);
      why += "; node " + first->node + " (rank " + std::to_string(first->node_rank) + ") failed first: " +
             first->process + ": " + first->reason;
    }
    WriteIn(o_.run_dir_fd, o_.run_dir, "failure.json", json);
    WriteIn(o_.result_dir_fd, o_.result_dir, "failure.json", json);
    SetState(o_, "failed");
    // Before readiness the client has not started: task_init is waiting on
    // ready_fd and reports the failure itself. After, the client's whole
    // tree goes: a wrapper's child (bash -c 'aiperf ...') orphaned by the
    // wrapper's death would leave Slurm's tree, run on and hold srun's
    // output open until it ends.
    if (ready_) KillClientTrees(o_.client_pids);
    StopAll();
    std::fprintf(stderr, "ix-stepd: step failed%s: %s\n", Where().c_str(), why.c_str());
    std::string record = json;
    while (!record.empty() && record.back() == '\n') record.pop_back();
    events_.Send("failure", o_.step, {}, {{"failure", record}});
    Report(ready_fd_, "failed" + Where() + ": " + why);
    return 1;
  }

  // On the head of a step across nodes: the failure of another node's part
  // that the head's followed from (an engine that lost a node fails too).
  // The head hears of a node's loss only after that node's engine went, but
  // on a loaded machine it may notice before the node's ix-stepd does, so a
  // node's record up to kLater after the head's own still came first; a
  // node that lost the head takes longer to notice (its engine's own
  // detection, or three missed health probes: 750 ms). That node writes its
  // record before it stops anything, so the wait is short against the 2 s
  // in which a failure must end the step.
  std::optional<FailureRecord> NodeFailedFirst(int64_t head_ms) const {
    if (plan_.nodes <= 1 || plan_.node_rank != 0) return std::nullopt;
    constexpr int64_t kLater = 250;
    // A record older than this run (a second of clock skew allowed) is an
    // earlier step's in the same directory.
    return AwaitNodeFailure(o_.result_dir_fd, plan_.nodes, started_ms_ - 1000, head_ms + kLater,
                            std::chrono::milliseconds(300));
  }

  // " on node NAME (rank K of N)" in a step across nodes, else "".
  std::string Where() const {
    if (plan_.nodes <= 1) return "";
    return " on node " + o_.node_name + " (rank " + std::to_string(plan_.node_rank) + " of " +
           std::to_string(plan_.nodes) + ")";
  }

  // A node after the head: the head ended the step (its engine said goodbye
  // or the connection to it is gone). This node's part stops; its local
  // tasks are left to end on their own, as the other tasks of a step are
  // (a failure on the head ends them through Slurm: docs/MULTINODE.md).
  int EndWithHead(const std::string& why) {
    std::fprintf(stderr, "ix-stepd: %s: the head ended the step; stopping this node's part\n", why.c_str());
    StopAll();
    SetState(o_, "finished");
    events_.Send("finished", o_.step);
    return 0;
  }

  // slurmstepd killed: nothing else would end the step (docs/STEP.md).
  int OwnerDied(const ProcessExit& x) {
    failed_process_ = x.label;
    failed_pid_ = x.id.pid;
    if (ready_) KillClientTrees(o_.client_pids);
    return Fail("the step's slurmstepd (pid " + std::to_string(x.id.pid) +
                ") died: nothing else can end the step, so ix-stepd ends it");
  }

  // The step's slurmstepd, and with stop_with_client the client (its exit
  // ends the step), watched like the servers and told apart by label.
  std::optional<int> WatchOwnerAndClient() {
    Result<ProcessWatch> created = ProcessWatch::Create();
    if (!created) return Fail(created.error().message);
    watch_.emplace(std::move(created).value());
    if (o_.owner_pid > 0) {
      Result<ProcessInfo> w = ReadProcessInfo(o_.owner_pid);
      failed_process_ = kOwnerLabel;
      failed_pid_ = o_.owner_pid;
      if (!w || w.value().exited()) {
        return Fail("the step's slurmstepd (pid " + std::to_string(o_.owner_pid) + ") is gone");
      }
      if (Status a = watch_->Add(w.value().id(), kOwnerLabel); !a) return Fail(a.error().message);
      failed_process_.clear();
      failed_pid_ = 0;
    }
    if (o_.stop_with_client && !o_.client_pids.empty()) {
      Result<ProcessInfo> c = ReadProcessInfo(o_.client_pids[0]);
      if (!c) return Fail("the client task is gone: " + c.error().message);
      if (Status a = watch_->Add(c.value().id(), kClientLabel); !a) return Fail(a.error().message);
    }
    return std::nullopt;
  }

  // How `p` is spawned: its argv and environment (a rank's engine sees only
  // its GPUs), its log, and its binding when it has one (kept in prepared_).
  SpawnSpec SpecFor(const PlannedProcess& p, const std::vector<std::string>& base_env,
                    const std::optional<std::string>& visible, const Result<Topology>& machine) {
    SpawnSpec spec;
    spec.name = p.name;
    spec.argv = p.argv;
    EnvList env = p.env;
    if (p.rank >= 0 && static_cast<size_t>(p.rank) < plan_.ranks.size()) {
      env.emplace_back("CUDA_VISIBLE_DEVICES",
                       NarrowVisibleDevices(visible, plan_.ranks[static_cast<size_t>(p.rank)].gpus));
    }
    spec.env = BuildEnvironment(base_env, env);
    if (o_.result_dir_fd >= 0) {
      spec.log_path = p.log;
      spec.log_dir_fd = o_.result_dir_fd;
      spec.cwd_fd = o_.result_dir_fd;  // writable, in any image
    }
    for (const auto& [name, target] : o_.bindings) {
      if (name != p.name || !machine) continue;
      prepared_.push_back(std::make_unique<PreparedBinding>(PreparedBinding::Prepare(target, machine.value())));
      for (const auto& n : prepared_.back()->notes()) {
        std::fprintf(stderr, "ix-stepd: %s: %s\n", p.name.c_str(), n.c_str());
      }
      spec.binding = prepared_.back().get();
      spec.binding_best_effort = true;
    }
    return spec;
  }

  // A KV offload tier's files (the Mooncake config), written as the job
  // user into the result directory, where the recipe's RESULT_DIR names them
  // for the servers (their working directory, reachable in a container).
  std::optional<int> WriteFiles() {
    if (plan_.files.empty()) return std::nullopt;
    if (o_.result_dir_fd < 0) return Fail("the plan has files to write (" + plan_.files[0].name + ") and the step no result directory");
    for (const PlannedFile& f : plan_.files) {
      if (Status w = WriteFileAtomicAt(o_.result_dir_fd, o_.result_dir, f.name, f.text); !w) return Fail(w.error().message);
    }
    return std::nullopt;
  }

  // The plan's processes, in order, each watched; what each got of its
  // binding goes to placement-obtained.json.
  std::optional<int> StartAll() {
    // sysfs, not hwloc: a binding only needs this machine's CPUs and nodes.
    Result<Topology> machine = Topology{};
    if (!o_.bindings.empty()) machine = DiscoverCpusAndNodes();
    const std::vector<std::string> base_env = CurrentEnvironment();
    const std::optional<std::string> visible = FindEnv(base_env, "CUDA_VISIBLE_DEVICES");
    SetState(o_, "starting");
    if (std::optional<int> end = WriteFiles()) return *end;
    ready_deadline_ = Clock::now() + o_.ready_timeout;
    std::vector<std::pair<std::string, Result<ProcBinding>>> obtained;
    for (const PlannedProcess& p : plan_.processes) {
      // A tier's servers are ready before the engine that connects to them starts.
      const bool server = p.role == PlannedProcess::kServerRole;
      if (!server && ready_checked_ < started_.size()) {
        if (std::optional<int> end = AwaitReady()) return *end;
      }
      const SpawnSpec spec = SpecFor(p, base_env, visible, machine);
      Result<SpawnedProcess> s = Spawn(spec);
      if (!s) {
        failed_process_ = p.name;
        return Fail(s.error().message);
      }
      started_.push_back(Started{&p, s.value(), spec.log_path});
      if (Status a = watch_->AddChild(s.value().id, p.name); !a) return Fail(a.error().message);
      std::fprintf(stderr, "ix-stepd: started %s (pid %d)\n", p.name.c_str(), static_cast<int>(s.value().id.pid));
      events_.Send("started", o_.step, {{"process", p.name}}, {{"pid", std::to_string(s.value().id.pid)}});
      // Spawn returns after the exec: the binding is in place to be read.
      obtained.emplace_back(p.name, ReadProcBinding(s.value().id.pid));
    }
    const std::string obtained_json = ObtainedJson(obtained);
    WriteIn(o_.run_dir_fd, o_.run_dir, "placement-obtained.json", obtained_json + "\n");
    // Also beside the results, as the job user, for the agg result's "ix"
    // key: the step's GPUs and where each process was bound.
    std::string gpus;
    for (int g : o_.node_gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    WriteIn(o_.result_dir_fd, o_.result_dir, "step-placement.json",
            "{\"gpus\":[" + gpus + "],\"processes\":" + obtained_json + "}\n");
    events_.Send("placement", o_.step, {}, {{"obtained", obtained_json}});
    SendTelemetry();
    return std::nullopt;
  }

  // Asks the agent for the step's GPU telemetry: gpu_metrics.csv in the
  // result directory, made here as the job user and handed over as a
  // descriptor (the agent, root, never opens a path the user controls), and
  // where each engine's /metrics is for hang detection. Without an agent
  // that takes it, the file is removed again.
  void SendTelemetry() {
    if (!events_.enabled() || o_.result_dir_fd < 0) return;
    const int fd = ::openat(o_.result_dir_fd, "gpu_metrics.csv",
                            O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "ix-stepd: no gpu_metrics.csv: %s\n", std::strerror(errno));
      return;
    }
    std::string gpus = "[", urls = "[";
    for (int g : o_.node_gpus) gpus += (gpus.size() > 1 ? "," : "") + std::to_string(g);
    for (const std::string& u : EngineMetricsUrls(plan_)) urls += (urls.size() > 1 ? ",\"" : "\"") + u + "\"";
    const bool sent = events_.Send("telemetry", o_.step, {}, {{"gpus", gpus + "]"}, {"metrics_urls", urls + "]"}}, fd);
    ::close(fd);
    if (!sent) ::unlinkat(o_.result_dir_fd, "gpu_metrics.csv", 0);
  }

  // Before every readiness probe: a stop, the client's or the owner's exit,
  // or any watched process's exit gives up the wait (said in `why`).
  std::optional<std::string> AbortReason(ReadyAbort& why) {
    if (*stop_requested_) return std::string("stop requested");
    Result<std::optional<ProcessExit>> e = watch_->Wait(std::chrono::milliseconds(0));
    if (e && e.value() && IsClient(*e.value())) {
      why.client_gone = true;
      return std::string("the client exited");
    }
    if (e && e.value() && IsOwner(*e.value())) {
      why.owner_gone = e.value();
      return e.value()->Describe();
    }
    if (e && e.value()) {
      why.early = e.value();
      return e.value()->Describe();
    }
    return std::nullopt;
  }

  // Readiness of the processes started and not yet checked, one by one, in
  // plan order (servers, engine, router), within ready_timeout of the start.
  // A stop or the client's exit meanwhile ends the run cleanly.
  std::optional<int> AwaitReady() {
    ReadyAbort why;
    for (; ready_checked_ < started_.size(); ++ready_checked_) {
      const Started& s = started_[ready_checked_];
      WaitReadyOptions wo;
      wo.deadline = ready_deadline_;
      wo.interval = o_.probe_interval;
      wo.abort = [&] { return AbortReason(why); };
      Status r = WaitReady(s.planned->readiness, wo, prober_);
      if (r) continue;
      if (*stop_requested_ || why.client_gone) {
        StopAll();
        SetState(o_, "finished");
        return 0;
      }
      if (why.owner_gone) return OwnerDied(*why.owner_gone);
      failed_process_ = why.early ? why.early->label : s.planned->name;
      failed_pid_ = why.early ? why.early->id.pid : s.spawned.id.pid;
      for (const auto& x : started_) {
        if (why.early && x.spawned.id.pid == why.early->id.pid) failed_log_ = x.log;
      }
      if (failed_log_.empty()) failed_log_ = s.log;
      return Fail(s.planned->name + " not ready: " + r.error().message);
    }
    return std::nullopt;
  }

  void BecomeReady() {
    // Everything that exists now belongs to the server: watch it all.
    for (const Started& s : started_) {
      Result<std::vector<ProcessInfo>> d = watch_->AddDescendants(s.spawned.id.pid, s.planned->name);
      if (d) {
        for (const auto& p : d.value()) known_.push_back(p.id());
      }
    }
    ready_ = true;
    // task 0 (waiting on the pipe) first; the other local tasks read the state.
    Report(ready_fd_, "ready");
    SetState(o_, "ready");
    std::fprintf(stderr, "ix-stepd: ready\n");
    events_.Send("ready", o_.step);
  }

  // One health probe of each process with a readiness check; `misses`
  // counts each one's failures in a row, and too many fail the step.
  std::optional<int> ProbeHealth(std::vector<int>& misses) {
    ProbeOptions po;
    po.timeout = o_.health_interval;
    po.connect_timeout = o_.health_interval;
    for (size_t i = 0; i < started_.size(); ++i) {
      const auto& checks = started_[i].planned->readiness;
      if (checks.empty()) continue;
      ReadinessCheck health = checks[0];
      const bool joined = health.kind == ReadinessTemplate::Kind::kConnected;
      if (!joined && health.kind != ReadinessTemplate::Kind::kTcpListening) health.kind = ReadinessTemplate::Kind::kHttpOk;
      const ProbeResult pr = prober_.Probe(health, po);
      misses[i] = pr.ready ? 0 : misses[i] + 1;
      if (misses[i] >= o_.health_failures && joined) {
        return EndWithHead("no connection to the head " + health.url + " for " + std::to_string(misses[i]) +
                           " probes in a row");
      }
      if (misses[i] >= o_.health_failures && plan_.hang && !plan_.hang->checks.empty()) {
        // Alive (its exit is the watch's) and answering nothing: wedged,
        // a hang under the step's policy, diagnosed before the kill.
        HangFinding wedged;
        wedged.process = started_[i].planned->name;
        wedged.answered = false;
        wedged.stalled_s = std::chrono::duration<double>(o_.health_interval).count() * misses[i];
        return Hung(wedged);
      }
      if (misses[i] >= o_.health_failures) {
        failed_process_ = started_[i].planned->name;
        failed_pid_ = started_[i].spawned.id.pid;
        failed_log_ = started_[i].log;
        return Fail(started_[i].planned->name + " failed " + std::to_string(misses[i]) +
                    " health probes in a row (" + health.url + ": " + pr.detail + ")");
      }
    }
    return std::nullopt;
  }

  // A watched server process (or a descendant seen at readiness) exited.
  // On a node after the head, its engine's own exit with status 0 is the
  // head's goodbye, not a failure.
  int ServerExited(const ProcessExit& x) {
    // When it was seen, not when it was judged: telling a failure from the
    // head's goodbye below may wait for the engine's own exit.
    failed_ms_ = UnixMsNow();
    if (plan_.node_rank > 0) {
      if (std::optional<ProcessExit> root = GoodbyeFromHead(x)) return EndWithHead(root->Describe());
    }
    failed_process_ = x.label;
    failed_pid_ = x.id.pid;
    for (const auto& s : started_) {
      if (x.label.rfind(s.planned->name, 0) == 0) failed_log_ = s.log;
    }
    return Fail(x.Describe());
  }

  // On a node after the head: whether `x` is part of the engine's normal
  // end, its root process exiting with status 0. An EngineCore goes first
  // when the engine winds down, so after a descendant's exit the root gets
  // up to a second to follow; the exit that tells is returned.
  std::optional<ProcessExit> GoodbyeFromHead(const ProcessExit& x) {
    const auto clean = [](const ProcessExit& e) { return e.status_known && e.exited && e.exit_code == 0; };
    if (x.status_known) return clean(x) ? std::optional<ProcessExit>(x) : std::nullopt;
    const auto end = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < end) {
      Result<std::optional<ProcessExit>> e = watch_->Wait(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()));
      if (!e || !e.value()) break;
      if (e.value()->status_known) return clean(*e.value()) ? e.value() : std::nullopt;
    }
    return std::nullopt;
  }

  // One poll of the hang policy (step_hang.h): each watched server's
  // metrics read once, within half a second.
  std::optional<int> PollHang(StepHang& policy) {
    const auto fetch = [this](const std::string& url) -> std::optional<std::string> {
      ProbeOptions po;
      po.timeout = std::chrono::milliseconds(500);
      std::string body;
      if (!prober_.Get(url, po, &body).ready) return std::nullopt;
      return body;
    };
    const double now = std::chrono::duration<double>(Clock::now() - started_at_).count();
    std::optional<HangFinding> found = policy.Poll(now, fetch);
    if (!found) return std::nullopt;
    return Hung(*found);
  }

  // A hang: the diagnosis of every server first (bounded: 2 s), then the
  // step fails as on a crash, failure.json naming the hang and the files.
  int Hung(const HangFinding& found) {
    failed_ms_ = UnixMsNow();
    std::vector<DiagnosisTarget> targets;
    for (const Started& st : started_) {
      targets.push_back({st.planned->name, st.spawned.id.pid, st.log});
      if (st.planned->name == found.process) {
        failed_pid_ = st.spawned.id.pid;
        failed_log_ = st.log;
      }
    }
    DiagnosisOptions d;
    d.result_dir_fd = o_.result_dir_fd;
    d.result_dir_label = o_.result_dir;
    d.deadline = Clock::now() + std::chrono::seconds(2);
    d.py_spy = FindProgram("py-spy");
    if (o_.result_dir_fd >= 0) d.gpu_rows = TailLinesAt(o_.result_dir_fd, "gpu_metrics.csv", 20);
    const DiagnosisReport report = DiagnoseProcesses(targets, d);
    for (const std::string& n : report.notes) std::fprintf(stderr, "ix-stepd: diagnosis: %s\n", n.c_str());
    diagnosis_ = report.files;
    hang_ = found;
    failed_process_ = found.process;
    std::string files;
    for (const std::string& f : report.files) files += (files.empty() ? "" : ", ") + f;
    return Fail("hang: " + found.Describe() + (files.empty() ? "" : "; diagnosis: " + files));
  }

  // Liveness until the step ends: a stop (SIGTERM), the client's exit
  // (then stopped cleanly), a failure, or a hang (the plan's policy).
  int WatchUntilEnd() {
    std::vector<int> misses(started_.size(), 0);
    // SIGTERM (the end of the step) interrupts the wait (its handler has no
    // SA_RESTART); the short tick is only a backstop.
    constexpr auto kTick = std::chrono::milliseconds(20);
    auto next_probe = Clock::now() + o_.health_interval;
    std::optional<StepHang> hang;
    if (plan_.hang && !plan_.hang->checks.empty()) hang.emplace(*plan_.hang);
    // Every second, or a quarter of hang_after when that is shorter.
    const auto hang_every = std::chrono::milliseconds(
        static_cast<int64_t>(std::min(1000.0, (hang ? hang->after_s() : 4.0) * 250.0)));
    auto next_hang = Clock::now() + hang_every;
    while (!*stop_requested_) {
      Result<std::optional<ProcessExit>> e = watch_->Wait(kTick);
      // A stop wins: scancel's SIGTERM reaches the servers too, whose exit is the stop's.
      if (*stop_requested_) break;
      if (!e) return Fail(e.error().message);
      if (e.value() && IsClient(*e.value())) {
        std::fprintf(stderr, "ix-stepd: %s: stopping the servers\n", e.value()->Describe().c_str());
        break;
      }
      if (e.value() && IsOwner(*e.value())) return OwnerDied(*e.value());
      if (e.value()) return ServerExited(*e.value());
      if (hang && Clock::now() >= next_hang) {
        next_hang = Clock::now() + hang_every;
        if (std::optional<int> end = PollHang(*hang)) return *end;
      }
      if (Clock::now() < next_probe) continue;
      next_probe = Clock::now() + o_.health_interval;
      if (std::optional<int> end = ProbeHealth(misses)) return *end;
    }
    StopAll();
    SetState(o_, "finished");
    events_.Send("finished", o_.step);
    if (events_.dropped() > 0) {
      std::fprintf(stderr, "ix-stepd: %llu events not delivered to the node agent: %s\n",
                   static_cast<unsigned long long>(events_.dropped()), events_.last_error().c_str());
    }
    return 0;
  }

  const LaunchPlan& plan_;
  const SupervisorOptions& o_;
  volatile const sig_atomic_t* stop_requested_;
  int ready_fd_;  // -1 once answered
  EventSink events_;
  SocketProber prober_;  // no libcurl in ix-stepd: it costs ~7 ms of start-up
  std::optional<ProcessWatch> watch_;
  std::vector<std::unique_ptr<PreparedBinding>> prepared_;  // alive while processes are spawned
  std::vector<Started> started_;
  size_t ready_checked_ = 0;  // started_[0, ready_checked_) passed their readiness checks
  Clock::time_point ready_deadline_;
  std::vector<ProcessId> known_;  // descendants seen at readiness
  bool ready_ = false;
  const int64_t started_ms_ = UnixMsNow();
  const Clock::time_point started_at_ = Clock::now();
  std::optional<HangFinding> hang_;     // the hang that ended the step
  std::vector<std::string> diagnosis_;  // its diagnosis files
  std::string failed_process_;
  pid_t failed_pid_ = 0;
  int64_t failed_ms_ = 0;  // when what failed was seen (0: when Fail runs)
  std::string failed_log_;
};

}  // namespace

int RunSupervisor(const LaunchPlan& plan, const SupervisorOptions& o,
                  volatile const sig_atomic_t* stop_requested) {
  return Supervision(plan, o, stop_requested).Run();
}

}  // namespace ix
