#include "submitter/sweep/sweep_files.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <variant>

#include "core/base/file_text.h"

namespace ix {
namespace {

// Single-quoted for bash: the one way a value reaches a script.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Safe(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '-';
  return out;
}

// What the readers of a manifest index without checking again (JobName,
// ScriptPath, SbatchArgs, the array task): a job's entries are entries of
// the plan; a job other than the canary is an array named bucket:NAME with
// at least one entry.
Status CheckJobs(const SweepManifest& m, const std::string& path) {
  const int64_t n = static_cast<int64_t>(m.plan.entries.size());
  for (size_t j = 0; j < m.plan.jobs.size(); ++j) {
    const PlannedJob& job = m.plan.jobs[j];
    const std::string field = path + ": field 'jobs[" + std::to_string(j) + "].";
    if (!job.canary && job.key.rfind("bucket:", 0) != 0) {
      return Error{field + "key' is '" + job.key + "' (expected bucket:NAME for a job that is not the canary)"};
    }
    if (!job.canary && job.entries.empty()) {
      return Error{field + "entries' is empty (expected the indices of the array's entries)"};
    }
    for (size_t k = 0; k < job.entries.size(); ++k) {
      if (job.entries[k] < 0 || job.entries[k] >= n) {
        return Error{field + "entries[" + std::to_string(k) + "]' is not the index of an entry (the file has " +
                     std::to_string(n) + ")"};
      }
    }
  }
  return Ok{};
}


// ---- the plain fields of sweep.json's objects ---------------------------------------

// One plain field of a T as sweep.json holds it: its JSON name and the
// member. The tables list them in the order they are written, so the writer
// and the reader name each field once.
template <class T>
struct JsonField {
  const char* name;
  std::variant<std::string T::*, int64_t T::*, bool T::*> member;
};

// The manifest's own fields after "sweep" and "mode".
const JsonField<SweepManifest> kManifestFields[] = {
    {"sweep_dir", &SweepManifest::sweep_dir}, {"ixsubmit", &SweepManifest::ixsubmit},
    {"recipe_dir", &SweepManifest::recipe_dir}, {"fail_fast", &SweepManifest::fail_fast},
    {"dry_run", &SweepManifest::dry_run}};
const JsonField<ClientDefaults> kClientDefaultsFields[] = {
    {"bench_serving_dir", &ClientDefaults::bench_serving_dir}, {"duration", &ClientDefaults::duration}};
const JsonField<SubmitSettings> kSbatchFields[] = {
    {"partition", &SubmitSettings::partition}, {"account", &SubmitSettings::account},
    {"time", &SubmitSettings::time_limit}, {"exclusive", &SubmitSettings::exclusive},
    {"throttle", &SubmitSettings::throttle}};
const JsonField<ContainerSettings> kContainerFields[] = {
    {"enabled", &ContainerSettings::enabled}, {"squash_dir", &ContainerSettings::squash_dir},
    {"model_dir", &ContainerSettings::model_dir}};
const JsonField<StreamSettings> kStreamFields[] = {
    {"agent_socket", &StreamSettings::agent_socket}, {"collector_listen", &StreamSettings::collector_listen},
    {"collector_url", &StreamSettings::collector_url}, {"token_file", &StreamSettings::token_file},
    {"node_result_dir", &StreamSettings::node_result_dir}};
// A job's fields before its "entries".
const JsonField<PlannedJob> kJobFields[] = {
    {"key", &PlannedJob::key}, {"bucket", &PlannedJob::bucket}, {"canary", &PlannedJob::canary},
    {"gpus", &PlannedJob::gpus}, {"nodes", &PlannedJob::nodes}, {"depends_on", &PlannedJob::depends_on}};
// An entry's fields before the matrix "entry" itself.
const JsonField<PlannedEntry> kEntryFields[] = {
    {"index", &PlannedEntry::index}, {"job", &PlannedEntry::job_key}, {"array_index", &PlannedEntry::array_index},
    {"bucket", &PlannedEntry::bucket}, {"config_key", &PlannedEntry::config_key}, {"recipe", &PlannedEntry::recipe},
    {"arm", &PlannedEntry::arm}, {"conc", &PlannedEntry::conc}, {"gpus", &PlannedEntry::gpus},
    {"nodes", &PlannedEntry::nodes}, {"eval_only", &PlannedEntry::eval_only}, {"image", &PlannedEntry::image},
    {"model_path", &PlannedEntry::model_path}, {"router_version", &PlannedEntry::router_version}};

// ---- writing sweep.json ------------------------------------------------------------

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void String(JsonWriter& w, const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }

// One plain value, by its type.
void WriteValue(JsonWriter& w, const std::string& s) { String(w, s); }
void WriteValue(JsonWriter& w, int64_t i) { w.Int64(i); }
void WriteValue(JsonWriter& w, bool b) { w.Bool(b); }

// Each of `fields` of `obj` as a key and its value, in the table's order.
template <class T, size_t N>
void WriteFields(JsonWriter& w, const T& obj, const JsonField<T> (&fields)[N]) {
  for (const JsonField<T>& f : fields) {
    w.Key(f.name);
    std::visit([&](auto member) { WriteValue(w, obj.*member); }, f.member);
  }
}

// `obj` as the object of field `key`, holding exactly `fields`.
template <class T, size_t N>
void WriteObject(JsonWriter& w, const char* key, const T& obj, const JsonField<T> (&fields)[N]) {
  w.Key(key);
  w.StartObject();
  WriteFields(w, obj, fields);
  w.EndObject();
}

void WriteJob(JsonWriter& w, const PlannedJob& j) {
  w.StartObject();
  WriteFields(w, j, kJobFields);
  w.Key("entries");
  w.StartArray();
  for (int64_t i : j.entries) w.Int64(i);
  w.EndArray();
  w.EndObject();
}

void WriteEntry(JsonWriter& w, const PlannedEntry& e) {
  w.StartObject();
  WriteFields(w, e, kEntryFields);
  w.Key("entry"); w.RawValue(e.entry_json.c_str(), e.entry_json.size(), rapidjson::kObjectType);
  w.EndObject();
}

void WriteSkipped(JsonWriter& w, const SkippedEntry& s) {
  w.StartObject();
  w.Key("config_key"); String(w, s.config_key);
  w.Key("where"); String(w, s.where);
  w.Key("path"); String(w, s.path);
  w.Key("concs");
  w.StartArray();
  for (int64_t c : s.concs) w.Int64(c);
  w.EndArray();
  w.Key("reason"); String(w, s.reason);
  w.EndObject();
}

// sweep.json's text, without the final newline.
std::string ManifestJson(const SweepManifest& m) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("sweep"); String(w, m.sweep_id);
  w.Key("mode"); w.String(SweepModeName(m.plan.mode));
  WriteFields(w, m, kManifestFields);
  w.Key("client");
  w.StartArray();
  for (const auto& a : m.client) String(w, a);
  w.EndArray();
  WriteObject(w, "client_defaults", m.client_defaults, kClientDefaultsFields);
  w.Key("hang_after"); String(w, m.hang_after);
  WriteObject(w, "sbatch", m.settings, kSbatchFields);
  WriteObject(w, "container", m.container, kContainerFields);
  WriteObject(w, "stream", m.stream, kStreamFields);
  w.Key("jobs");
  w.StartArray();
  for (const PlannedJob& j : m.plan.jobs) WriteJob(w, j);
  w.EndArray();
  w.Key("entries");
  w.StartArray();
  for (const PlannedEntry& e : m.plan.entries) WriteEntry(w, e);
  w.EndArray();
  // What the selection held that the sweep does not run, and why.
  w.Key("skipped");
  w.StartArray();
  for (const SkippedEntry& sk : m.plan.skipped) WriteSkipped(w, sk);
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

// ---- reading sweep.json ------------------------------------------------------------

// The fields of one JSON object, read leniently: a missing field or one of
// another type reads as empty, 0 or false (the checks after reading catch
// what matters). Invariant: `o` is an object (HasMember on anything else
// is undefined).
struct Fields {
  const rapidjson::Value& o;
  std::string Str(const char* k) const { return o.HasMember(k) && o[k].IsString() ? o[k].GetString() : ""; }
  int64_t Int(const char* k) const { return o.HasMember(k) && o[k].IsInt64() ? o[k].GetInt64() : 0; }
  bool Bool(const char* k) const { return o.HasMember(k) && o[k].IsBool() && o[k].GetBool(); }
  // The same, into a member by its type.
  void Read(const char* k, std::string& out) const { out = Str(k); }
  void Read(const char* k, int64_t& out) const { out = Int(k); }
  void Read(const char* k, bool& out) const { out = Bool(k); }
};

// Each of `fields` of `obj` from `in`.
template <class T, size_t N>
void ReadFields(const Fields& in, T& obj, const JsonField<T> (&fields)[N]) {
  for (const JsonField<T>& f : fields) std::visit([&](auto member) { in.Read(f.name, obj.*member); }, f.member);
}

// `fields` of `obj` from the object of field `key` of `d`; without one
// (written before that object existed) `obj` keeps its defaults.
template <class T, size_t N>
void ReadObject(const rapidjson::Value& d, const char* key, T& obj, const JsonField<T> (&fields)[N]) {
  if (d.HasMember(key) && d[key].IsObject()) ReadFields(Fields{d[key]}, obj, fields);
}

PlannedJob ReadJob(const Fields& f) {
  PlannedJob job;
  ReadFields(f, job, kJobFields);
  job.nodes = std::max<int64_t>(1, job.nodes);  // absent before multi-node arms: one node
  if (f.o.HasMember("entries") && f.o["entries"].IsArray()) {
    for (const auto& x : f.o["entries"].GetArray()) job.entries.push_back(x.IsInt64() ? x.GetInt64() : -1);
  }
  return job;
}

PlannedEntry ReadEntry(const Fields& f) {
  PlannedEntry p;
  ReadFields(f, p, kEntryFields);
  p.nodes = std::max<int64_t>(1, p.nodes);
  if (f.o.HasMember("entry") && f.o["entry"].IsObject()) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    f.o["entry"].Accept(w);
    p.entry_json.assign(buf.GetString(), buf.GetSize());
  }
  return p;
}

SkippedEntry ReadSkipped(const Fields& f) {
  SkippedEntry s{f.Str("config_key"), f.Str("where"), f.Str("path"), {}, f.Str("reason")};
  if (f.o.HasMember("concs") && f.o["concs"].IsArray()) {
    for (const auto& x : f.o["concs"].GetArray()) {
      if (x.IsInt64()) s.concs.push_back(x.GetInt64());
    }
  }
  return s;
}

// Each element of the array `list` (field `name` of `path`) read into
// `out` by `read` (a T or an error), in order; an element that is not an
// object is an error.
template <class T, class Read>
Status ReadObjects(const rapidjson::Value& list, const char* name, const std::string& path, std::vector<T>& out,
                   Read&& read) {
  for (const auto& v : list.GetArray()) {
    if (!v.IsObject()) {
      return Error{path + ": field '" + name + "[" + std::to_string(out.size()) + "]' must be an object"};
    }
    Result<T> one = read(Fields{v});
    if (!one) return one.error();
    out.push_back(std::move(one).value());
  }
  return Ok{};
}

// The script of one job: it only execs `ixsubmit task` with quoted fixed arguments.
std::string JobScript(const SweepManifest& m, const PlannedJob& j) {
  return "#!/bin/bash\n"
         "# " + JobName(m, j) + ": " + (j.canary ? "the canary" : "bucket " + j.bucket) + " of sweep " + m.sweep_id +
         " (" + std::to_string(j.entries.size()) + " entries). Written by ixsubmit sweep; the entry is\n"
         "# looked up by SLURM_ARRAY_TASK_ID in sweep.json.\n"
         "exec " + Quote(m.ixsubmit) + " task --sweep-dir " + Quote(m.sweep_dir) + " --job " + Quote(j.key) + "\n";
}

}  // namespace

std::string ScriptPath(const SweepManifest& m, const PlannedJob& job) {
  return m.sweep_dir + "/" + (job.canary ? std::string("canary") : "bucket-" + Safe(job.key.substr(7))) + ".sbatch";
}

std::string ResultDir(const SweepManifest& m, int64_t index) {
  return m.sweep_dir + "/results/" + std::to_string(index);
}

std::string TaskResultDir(const SweepManifest& m, int64_t index) {
  if (m.stream.node_result_dir.empty()) return ResultDir(m, index);
  return m.stream.node_result_dir + "/" + m.sweep_id + "/" + std::to_string(index);
}

std::string JobName(const SweepManifest& m, const PlannedJob& job) {
  std::string key = job.entries.empty() ? "" : m.plan.entries[static_cast<size_t>(job.entries[0])].config_key;
  return "ix-" + m.sweep_id + "-" + (job.canary ? std::string("canary") : Safe(job.key.substr(7))) + "-" + Safe(key);
}

Status WriteSweepFiles(const SweepManifest& m) {
  std::error_code ec;
  std::filesystem::create_directories(m.sweep_dir + "/logs", ec);
  if (ec) return Error{"cannot create " + m.sweep_dir + "/logs: " + ec.message()};
  std::filesystem::create_directories(m.sweep_dir + "/results", ec);
  if (ec) return Error{"cannot create " + m.sweep_dir + "/results: " + ec.message()};
  if (Status s = WriteFileAtomic(m.sweep_dir + "/sweep.json", ManifestJson(m) + "\n", 0644); !s) return s;
  for (const PlannedJob& j : m.plan.jobs) {
    if (Status s = WriteFileAtomic(ScriptPath(m, j), JobScript(m, j), 0755); !s) return s;
  }
  return Ok{};
}

Result<SweepManifest> ReadSweepManifest(const std::string& sweep_dir) {
  const std::string path = sweep_dir + "/sweep.json";
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err) return Error{"cannot read " + path + ": " + std::strerror(err)};
  return SweepManifestFromJson(text, path);
}

Result<SweepManifest> SweepManifestFromJson(const std::string& text, const std::string& path) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  if (d.HasParseError() || !d.IsObject()) return Error{path + ": not a sweep file (invalid JSON)"};
  const Fields top{d};
  SweepManifest m;
  m.sweep_id = top.Str("sweep");
  ReadFields(top, m, kManifestFields);
  Result<SweepMode> mode = ParseSweepMode(top.Str("mode"));
  if (!mode) return Error{path + ": field 'mode': " + mode.error().message};
  m.plan.mode = mode.value();
  if (!d.HasMember("client") || !d["client"].IsArray() || !d.HasMember("jobs") || !d["jobs"].IsArray() ||
      !d.HasMember("entries") || !d["entries"].IsArray()) {
    return Error{path + ": fields 'client', 'jobs' and 'entries' must be arrays"};
  }
  for (const auto& a : d["client"].GetArray()) m.client.push_back(a.IsString() ? a.GetString() : "");
  ReadObject(d, "client_defaults", m.client_defaults, kClientDefaultsFields);
  m.hang_after = top.Str("hang_after");
  ReadObject(d, "sbatch", m.settings, kSbatchFields);
  // A sweep.json without "container" was written before containers: its
  // steps ran on the host, and so do those of its resumed submitter.
  ReadObject(d, "container", m.container, kContainerFields);
  // Without "stream" (written before the agent): the default socket, no
  // collector, results in the sweep directory. An empty agent_socket is
  // the default one too.
  ReadObject(d, "stream", m.stream, kStreamFields);
  if (m.stream.agent_socket.empty()) m.stream.agent_socket = StreamSettings{}.agent_socket;
  if (Status s = ReadObjects(d["jobs"], "jobs", path, m.plan.jobs, ReadJob); !s) return s.error();
  const auto read_entry = [&](const Fields& f) -> Result<PlannedEntry> {
    PlannedEntry p = ReadEntry(f);
    if (p.index != static_cast<int64_t>(m.plan.entries.size())) return Error{path + ": entries out of order"};
    return p;
  };
  if (Status s = ReadObjects(d["entries"], "entries", path, m.plan.entries, read_entry); !s) return s.error();
  if (d.HasMember("skipped") && d["skipped"].IsArray()) {
    const auto read_skipped = [](const Fields& f) -> Result<SkippedEntry> { return ReadSkipped(f); };
    if (Status s = ReadObjects(d["skipped"], "skipped", path, m.plan.skipped, read_skipped); !s) return s.error();
  }
  if (Status checked = CheckJobs(m, path); !checked) return checked.error();
  return m;
}

std::vector<std::string> SbatchArgs(const SweepManifest& m, const PlannedJob& job, const SubmitSettings& s,
                                    int64_t depends_on_job_id) {
  // A job across nodes: its step runs one task per node (srun -N ...
  // --ntasks-per-node=1, StepSrunArgv); --gres is per node.
  std::vector<std::string> a = {"--job-name=" + JobName(m, job), "--nodes=" + std::to_string(job.nodes),
                                job.nodes > 1 ? "--ntasks-per-node=1" : "--ntasks=1",
                                "--gres=gpu:" + std::to_string(job.gpus), "--chdir=" + m.sweep_dir};
  if (job.canary) {
    a.push_back("--output=" + m.sweep_dir + "/logs/%x_%j.out");
  } else {
    std::string array = "--array=0-" + std::to_string(job.entries.size() - 1);
    if (s.throttle > 0) array += "%" + std::to_string(s.throttle);
    a.push_back(array);
    a.push_back("--output=" + m.sweep_dir + "/logs/%x_%A_%a.out");
  }
  if (depends_on_job_id > 0) a.push_back("--dependency=afterok:" + std::to_string(depends_on_job_id));
  if (depends_on_job_id < 0) a.push_back("--dependency=afterok:CANARY_JOB_ID");  // a dry run
  if (!s.partition.empty()) a.push_back("--partition=" + s.partition);
  if (!s.account.empty()) a.push_back("--account=" + s.account);
  if (!s.time_limit.empty()) a.push_back("--time=" + s.time_limit);
  if (s.exclusive) a.push_back("--exclusive");
  return a;
}

}  // namespace ix
