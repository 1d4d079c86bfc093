#include "submitter/sweep/slurm_output.h"

#include <array>
#include <cstdlib>
#include <set>

#include "core/base/text.h"

namespace ix {
namespace {

// A non-negative decimal number of at most 18 digits (so it fits), without
// sign or spaces.
bool ParseCount(std::string_view s, int64_t& out) {
  uint64_t v = 0;
  if (s.size() > 18 || !ParseUnsigned(s, v)) return false;
  out = static_cast<int64_t>(v);
  return true;
}

bool ParseSignedInt(std::string_view s, int& out) {
  bool neg = false;
  if (!s.empty() && s.front() == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  int64_t v = 0;
  if (!ParseCount(s, v) || v > 1'000'000'000) return false;
  out = static_cast<int>(neg ? -v : v);
  return true;
}

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// ---- states -----------------------------------------------------------------------

struct StateRow {
  SlurmState state;
  const char* name;
  const char* code;
};
constexpr std::array<StateRow, 25> kStates{{
    {SlurmState::kPending, "PENDING", "PD"},
    {SlurmState::kRunning, "RUNNING", "R"},
    {SlurmState::kSuspended, "SUSPENDED", "S"},
    {SlurmState::kCompleting, "COMPLETING", "CG"},
    {SlurmState::kCompleted, "COMPLETED", "CD"},
    {SlurmState::kConfiguring, "CONFIGURING", "CF"},
    {SlurmState::kCancelled, "CANCELLED", "CA"},
    {SlurmState::kFailed, "FAILED", "F"},
    {SlurmState::kTimeout, "TIMEOUT", "TO"},
    {SlurmState::kNodeFail, "NODE_FAIL", "NF"},
    {SlurmState::kOutOfMemory, "OUT_OF_MEMORY", "OOM"},
    {SlurmState::kPreempted, "PREEMPTED", "PR"},
    {SlurmState::kBootFail, "BOOT_FAIL", "BF"},
    {SlurmState::kDeadline, "DEADLINE", "DL"},
    {SlurmState::kRequeued, "REQUEUED", "RQ"},
    {SlurmState::kRequeueHold, "REQUEUE_HOLD", "RH"},
    {SlurmState::kRequeueFed, "REQUEUE_FED", "RF"},
    {SlurmState::kResvDelHold, "RESV_DEL_HOLD", "RD"},
    {SlurmState::kResizing, "RESIZING", "RS"},
    {SlurmState::kRevoked, "REVOKED", "RV"},
    {SlurmState::kSignaling, "SIGNALING", "SI"},
    {SlurmState::kSpecialExit, "SPECIAL_EXIT", "SE"},
    {SlurmState::kStageOut, "STAGE_OUT", "SO"},
    {SlurmState::kStopped, "STOPPED", "ST"},
    {SlurmState::kUnknown, "UNKNOWN", ""},
}};

// ---- scontrol fields -----------------------------------------------------------

// Fields whose values may hold spaces (and '='): they end only at a field
// name from kJobKeys.
const std::set<std::string, std::less<>>& FreeTextKeys() {
  static const std::set<std::string, std::less<>> keys{"Command", "WorkDir",      "Reason",       "Comment",
                                                       "StdOut",  "StdErr",       "StdIn",        "JobName",
                                                       "AdminComment", "SystemComment"};
  return keys;
}

// The field names `scontrol show job` prints (Slurm 20.11 - 23.11).
const std::set<std::string, std::less<>>& JobKeys() {
  static const std::set<std::string, std::less<>> keys{
      "JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset", "HetJobIdSet",
      "JobName", "UserId", "GroupId", "MCS_label", "Priority", "Nice", "Account", "QOS", "WCKey", "JobState",
      "Reason", "Dependency", "Requeue", "Restarts", "BatchFlag", "Reboot", "ExitCode", "DerivedExitCode",
      "RunTime", "TimeLimit", "TimeMin", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime",
      "Deadline", "PreemptEligibleTime", "PreemptTime", "SuspendTime", "SecsPreSuspend", "LastSchedEval",
      "Scheduler", "Partition", "AllocNode:Sid", "ReqNodeList", "ExcNodeList", "NodeList", "SchedNodeList",
      "BatchHost", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "ReqB:S:C:T", "ReqTRES", "AllocTRES", "TRES",
      "Socks/Node", "NtasksPerN:B:S:C", "CoreSpec", "MinCPUsNode", "MinMemoryNode", "MinMemoryCPU",
      "MinTmpDiskNode", "Features", "ClusterFeatures", "Prefer", "DelayBoot", "OverSubscribe", "Contiguous",
      "Licenses", "LicensesAlloc", "Network", "Command", "WorkDir", "AdminComment", "SystemComment", "Comment",
      "StdErr", "StdIn", "StdOut", "Power", "TresPerNode", "TresPerJob", "TresPerTask", "TresPerSocket",
      "CpusPerTres", "MemPerTres", "TresBind", "TresFreq", "MailUser", "MailType", "NtasksPerTRES", "Reservation",
      "Container", "ContainerID", "Cluster", "ResizeTime", "FedOrigin", "FedViableSiblings", "FedActiveSiblings",
      "BurstBuffer", "BurstBufferState", "SelinuxContext", "CpuFreqMin", "CpuFreqMax", "CpuFreqGov",
      "KillOInInvalidDependent", "OOMKillStep", "MemPerNode", "MemPerCPU", "Switches", "Wait-for-Switch",
      "ThreadSpec", "CronJob", "CrontabSpec", "Gres", "Tres", "ResvPort", "NodeListIndices", "Profile",
      "SpreadJob", "Segment", "StepMgrEnabled", "MaxNodes", "MinNodes", "RequeueExit", "RequeueExitHold",
      "Mcs_label", "DeadlineTime", "PartitionLimit", "SiblingsActive", "SiblingsViable", "Array",
  };
  return keys;
}

// The key of a token that starts a field ("JobId=12" -> "JobId"), or "".
std::string_view KeyOf(std::string_view token) {
  const size_t eq = token.find('=');
  if (eq == std::string_view::npos || eq == 0) return {};
  if (token[0] < 'A' || token[0] > 'Z') return {};
  for (size_t i = 1; i < eq; ++i) {
    const char c = token[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == ':' || c == '/' || c == '-';
    if (!ok) return {};
  }
  return token.substr(0, eq);
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

// ---- lines and ids of any tool ----------------------------------------------------------

std::vector<std::string_view> OutputLines(std::string_view text) {
  std::vector<std::string_view> lines = Lines(text);
  for (std::string_view& line : lines) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  }
  return lines;
}

std::optional<int64_t> LeadingJobId(std::string_view line) {
  // The part before '_' (an array task), '.' (a step) or '+' (a het component).
  int64_t id = 0;
  if (!ParseCount(line.substr(0, line.find_first_of("_.+")), id) || id <= 0) return std::nullopt;
  return id;
}

std::optional<int64_t> ParseMaxArraySize(std::string_view config) {
  const size_t at = config.find("\nMaxArraySize");
  if (at == std::string_view::npos) return std::nullopt;
  const size_t eq = config.find('=', at);
  // strtoll, as the value may have blanks before it ("MaxArraySize = 1001").
  const int64_t v =
      eq == std::string_view::npos ? 0 : std::strtoll(std::string(config.substr(eq + 1)).c_str(), nullptr, 10);
  if (v <= 0) return std::nullopt;
  return v;
}

// ---- states ------------------------------------------------------------------------------

SlurmState ParseSlurmState(std::string_view text) {
  text = Trim(text);
  text = text.substr(0, text.find(' '));  // "CANCELLED by 1000"
  while (!text.empty() && text.back() == '+') text.remove_suffix(1);  // sacct: "CANCELLED+"
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  if (upper.empty()) return SlurmState::kUnknown;
  for (const StateRow& r : kStates) {
    if (upper == r.name || upper == r.code) return r.state;
  }
  return SlurmState::kUnknown;
}

const char* SlurmStateName(SlurmState s) {
  for (const StateRow& r : kStates) {
    if (r.state == s) return r.name;
  }
  return "UNKNOWN";
}

bool Final(SlurmState s) {
  switch (s) {
    case SlurmState::kCompleted:
    case SlurmState::kCancelled:
    case SlurmState::kFailed:
    case SlurmState::kTimeout:
    case SlurmState::kNodeFail:
    case SlurmState::kOutOfMemory:
    case SlurmState::kPreempted:
    case SlurmState::kBootFail:
    case SlurmState::kDeadline:
    case SlurmState::kRevoked: return true;
    default: return false;
  }
}

bool Succeeded(SlurmState s) { return s == SlurmState::kCompleted; }

// ---- ids -------------------------------------------------------------------------------------

// ---- ids -------------------------------------------------------------------------------------

std::string TaskId::ToString() const {
  return std::to_string(job_id) + (task ? "_" + std::to_string(*task) : std::string());
}

Result<TaskId> ParseTaskId(std::string_view text) {
  const std::string_view t = Trim(text);
  TaskId id;
  const size_t us = t.find('_');
  int64_t task = 0;
  if (!ParseCount(t.substr(0, us), id.job_id) || id.job_id <= 0 ||
      (us != std::string_view::npos && !ParseCount(t.substr(us + 1), task))) {
    return Error{"job id " + Quote(text) + ": expected JOB or JOB_TASK, e.g. 1234 or 1234_7"};
  }
  if (us != std::string_view::npos) id.task = task;
  return id;
}

Result<std::vector<int64_t>> ExpandArrayIndices(std::string_view text) {
  constexpr int64_t kMaxIndices = 4'000'001;  // Slurm's largest MaxArraySize
  std::string_view t = Trim(text);
  const auto bad = [&](const std::string& why) {
    return Error{"array indices " + Quote(text) + ": " + why + "; expected e.g. 7, 8-15%2, 3,5,9-10 or 1-7:2"};
  };
  if (!t.empty() && t.front() == '[') {
    if (t.back() != ']') return bad("unbalanced '['");
    t = t.substr(1, t.size() - 2);
  }
  if (const size_t pct = t.find('%'); pct != std::string_view::npos) {
    int64_t throttle = 0;
    if (!ParseCount(t.substr(pct + 1), throttle)) return bad("bad throttle after '%'");
    t = t.substr(0, pct);
  }
  if (t.empty()) return bad("empty");
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= t.size()) {
    size_t comma = t.find(',', start);
    if (comma == std::string_view::npos) comma = t.size();
    std::string_view item = t.substr(start, comma - start);
    int64_t step = 1;
    if (const size_t colon = item.find(':'); colon != std::string_view::npos) {
      if (!ParseCount(item.substr(colon + 1), step) || step < 1) return bad("bad step in " + Quote(item));
      item = item.substr(0, colon);
    }
    int64_t lo = 0, hi = 0;
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      if (!ParseCount(item, lo)) return bad("bad index " + Quote(item));
      hi = lo;
    } else if (!ParseCount(item.substr(0, dash), lo) || !ParseCount(item.substr(dash + 1), hi)) {
      return bad("bad range " + Quote(item));
    }
    if (lo > hi) return bad("reversed range " + Quote(item));
    if (static_cast<int64_t>(out.size()) + (hi - lo) / step + 1 > kMaxIndices) return bad("too many indices");
    for (int64_t i = lo; i <= hi; i += step) out.push_back(i);
    start = comma + 1;
  }
  return out;
}

// ---- parsers -------------------------------------------------------------------------------

Result<int64_t> ParseSbatchParsable(std::string_view out) {
  // The id is the last line; anything before it is not ours to interpret.
  std::string_view last;
  for (std::string_view line : OutputLines(out)) {
    if (!Trim(line).empty()) last = Trim(line);
  }
  int64_t id = 0;
  if (!ParseCount(last.substr(0, last.find(';')), id) || id <= 0) {
    return Error{"sbatch --parsable printed " + Quote(Trim(out)) + "; expected a job id (ID or ID;CLUSTER)"};
  }
  return id;
}

Result<std::vector<QueueTask>> ParseSqueue(std::string_view out) {
  std::vector<QueueTask> tasks;
  int lineno = 0;
  for (std::string_view line : OutputLines(out)) {
    ++lineno;
    if (Trim(line).empty()) continue;
    const auto bad = [&](const std::string& why) {
      return Error{"squeue output line " + std::to_string(lineno) + " " + Quote(line) + ": " + why +
                   " (format " + kSqueueFormat + ")"};
    };
    const size_t bar1 = line.find('|');
    const size_t bar2 = bar1 == std::string_view::npos ? bar1 : line.find('|', bar1 + 1);
    if (bar2 == std::string_view::npos) return bad("expected ID|STATE|REASON");
    const std::string_view id = Trim(line.substr(0, bar1));
    QueueTask base;
    base.state_name = std::string(Trim(line.substr(bar1 + 1, bar2 - bar1 - 1)));
    base.state = ParseSlurmState(base.state_name);
    base.reason = std::string(Trim(line.substr(bar2 + 1)));
    const size_t bracket = id.find('[');
    if (bracket == std::string_view::npos) {
      Result<TaskId> t = ParseTaskId(id);
      if (!t) return bad(t.error().message);
      base.id = t.value();
      tasks.push_back(std::move(base));
      continue;
    }
    // A pending range: "1234_[8-15%2]".
    int64_t job = 0;
    if (bracket < 2 || id[bracket - 1] != '_' || !ParseCount(id.substr(0, bracket - 1), job) || job <= 0) {
      return bad("expected JOB_[INDICES]");
    }
    Result<std::vector<int64_t>> idx = ExpandArrayIndices(id.substr(bracket));
    if (!idx) return bad(idx.error().message);
    for (int64_t i : idx.value()) {
      QueueTask t = base;
      t.id = TaskId{job, i};
      tasks.push_back(std::move(t));
    }
  }
  return tasks;
}

Result<SlurmExitCode> ParseSlurmExitCode(std::string_view text) {
  const std::string_view t = Trim(text);
  const size_t colon = t.find(':');
  SlurmExitCode c;
  if (colon == std::string_view::npos || !ParseSignedInt(t.substr(0, colon), c.status) ||
      !ParseSignedInt(t.substr(colon + 1), c.signal)) {
    return Error{"exit code " + Quote(text) + ": expected STATUS:SIGNAL, e.g. 1:0"};
  }
  return c;
}

const std::string* JobInfo::Get(std::string_view key) const {
  auto it = fields.find(std::string(key));
  return it == fields.end() ? nullptr : &it->second;
}

Result<std::map<std::string, std::string>> ParseScontrolFields(std::string_view record) {
  std::map<std::string, std::string> fields;
  std::string key;           // the field being read
  size_t value_start = 0;    // where its value starts in `record`
  bool free_text = false;
  const auto finish = [&](size_t end) {
    if (!key.empty()) fields.emplace(key, std::string(Trim(record.substr(value_start, end - value_start))));
  };
  size_t i = 0;
  while (i < record.size()) {
    if (IsSpace(record[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < record.size() && !IsSpace(record[end])) ++end;
    const std::string_view token = record.substr(i, end - i);
    const std::string_view k = KeyOf(token);
    const bool starts_field = !k.empty() && (!free_text || JobKeys().count(k));
    if (starts_field) {
      finish(i);
      key = std::string(k);
      value_start = i + k.size() + 1;
      free_text = FreeTextKeys().count(k) > 0;
    } else if (key.empty()) {
      return Error{"scontrol output " + Quote(Trim(record).substr(0, 80)) + ": expected KEY=VALUE at " + Quote(token)};
    }
    // else: a word of the current value ("Reason=launch failed requeued held").
    i = end;
  }
  finish(record.size());
  return fields;
}

namespace {

// The records of `scontrol show job`: each starts at a line whose first
// field is JobId=; other non-empty lines continue it (the multi-line form
// without -o).
std::vector<std::string> ScontrolRecords(std::string_view out) {
  std::vector<std::string> records;
  for (std::string_view line : OutputLines(out)) {
    const std::string_view t = Trim(line);
    if (t.empty()) continue;
    if (t.substr(0, 6) == "JobId=" || records.empty()) {
      records.emplace_back(t);
    } else {
      records.back() += " " + std::string(t);
    }
  }
  return records;
}

Result<JobInfo> JobInfoFromRecord(const std::string& rec) {
  Result<std::map<std::string, std::string>> f = ParseScontrolFields(rec);
  if (!f) return f.error();
  JobInfo j;
  j.fields = std::move(f.value());
  const auto bad = [&](const std::string& why) {
    return Error{"scontrol show job: " + why + " in " + Quote(std::string_view(rec).substr(0, 120))};
  };
  const std::string* id = j.Get("JobId");
  if (!id || !ParseCount(*id, j.job_id)) return bad("no numeric JobId");
  if (const std::string* a = j.Get("ArrayJobId")) {
    int64_t v = 0;
    if (!ParseCount(*a, v)) return bad("ArrayJobId " + Quote(*a) + " is not a number");
    j.array_job_id = v;
  }
  if (const std::string* v = j.Get("ArrayTaskId")) j.array_task_id = *v;
  if (const std::string* v = j.Get("JobName")) j.name = *v;
  if (const std::string* v = j.Get("JobState")) {
    j.state_name = *v;
    j.state = ParseSlurmState(*v);
  }
  if (const std::string* v = j.Get("Reason")) j.reason = *v;
  if (const std::string* v = j.Get("Dependency")) j.dependency = *v;
  if (const std::string* v = j.Get("ExitCode")) {
    Result<SlurmExitCode> c = ParseSlurmExitCode(*v);
    if (!c) return bad(c.error().message);
    j.exit_code = c.value();
  }
  return j;
}

}  // namespace

Result<std::vector<JobInfo>> ParseScontrolShowJob(std::string_view out) {
  std::vector<JobInfo> jobs;
  for (const std::string& rec : ScontrolRecords(out)) {
    Result<JobInfo> j = JobInfoFromRecord(rec);
    if (!j) return j.error();
    jobs.push_back(std::move(j).value());
  }
  return jobs;
}

}  // namespace ix
