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


// ---- writing sweep.json ------------------------------------------------------------

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void String(JsonWriter& w, const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }

void WriteStream(JsonWriter& w, const StreamSettings& s) {
  w.Key("stream");
  w.StartObject();
  w.Key("agent_socket"); String(w, s.agent_socket);
  w.Key("collector_listen"); String(w, s.collector_listen);
  w.Key("collector_url"); String(w, s.collector_url);
  w.Key("token_file"); String(w, s.token_file);
  w.Key("node_result_dir"); String(w, s.node_result_dir);
  w.EndObject();
}

void WriteSettings(JsonWriter& w, const SubmitSettings& s, const ContainerSettings& c) {
  w.Key("sbatch");
  w.StartObject();
  w.Key("partition"); String(w, s.partition);
  w.Key("account"); String(w, s.account);
  w.Key("time"); String(w, s.time_limit);
  w.Key("exclusive"); w.Bool(s.exclusive);
  w.Key("throttle"); w.Int64(s.throttle);
  w.EndObject();
  w.Key("container");
  w.StartObject();
  w.Key("enabled"); w.Bool(c.enabled);
  w.Key("squash_dir"); String(w, c.squash_dir);
  w.Key("model_dir"); String(w, c.model_dir);
  w.EndObject();
}

void WriteJob(JsonWriter& w, const PlannedJob& j) {
  w.StartObject();
  w.Key("key"); String(w, j.key);
  w.Key("bucket"); String(w, j.bucket);
  w.Key("canary"); w.Bool(j.canary);
  w.Key("gpus"); w.Int64(j.gpus);
  w.Key("nodes"); w.Int64(j.nodes);
  w.Key("depends_on"); String(w, j.depends_on);
  w.Key("entries");
  w.StartArray();
  for (int64_t i : j.entries) w.Int64(i);
  w.EndArray();
  w.EndObject();
}

void WriteEntry(JsonWriter& w, const PlannedEntry& e) {
  w.StartObject();
  w.Key("index"); w.Int64(e.index);
  w.Key("job"); String(w, e.job_key);
  w.Key("array_index"); w.Int64(e.array_index);
  w.Key("bucket"); String(w, e.bucket);
  w.Key("config_key"); String(w, e.config_key);
  w.Key("recipe"); String(w, e.recipe);
  w.Key("arm"); String(w, e.arm);
  w.Key("conc"); w.Int64(e.conc);
  w.Key("gpus"); w.Int64(e.gpus);
  w.Key("nodes"); w.Int64(e.nodes);
  w.Key("eval_only"); w.Bool(e.eval_only);
  w.Key("image"); String(w, e.image);
  w.Key("model_path"); String(w, e.model_path);
  w.Key("router_version"); String(w, e.router_version);
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
  w.Key("sweep_dir"); String(w, m.sweep_dir);
  w.Key("ixsubmit"); String(w, m.ixsubmit);
  w.Key("recipe_dir"); String(w, m.recipe_dir);
  w.Key("fail_fast"); w.Bool(m.fail_fast);
  w.Key("dry_run"); w.Bool(m.dry_run);
  w.Key("client");
  w.StartArray();
  for (const auto& a : m.client) String(w, a);
  w.EndArray();
  w.Key("client_defaults");
  w.StartObject();
  w.Key("bench_serving_dir"); String(w, m.client_defaults.bench_serving_dir);
  w.Key("duration"); w.Int64(m.client_defaults.duration);
  w.EndObject();
  w.Key("hang_after"); String(w, m.hang_after);
  WriteSettings(w, m.settings, m.container);
  WriteStream(w, m.stream);
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
};

PlannedJob ReadJob(const Fields& f) {
  PlannedJob job;
  job.key = f.Str("key");
  job.bucket = f.Str("bucket");
  job.canary = f.Bool("canary");
  job.gpus = f.Int("gpus");
  job.nodes = std::max<int64_t>(1, f.Int("nodes"));  // absent before multi-node arms: one node
  job.depends_on = f.Str("depends_on");
  if (f.o.HasMember("entries") && f.o["entries"].IsArray()) {
    for (const auto& x : f.o["entries"].GetArray()) job.entries.push_back(x.IsInt64() ? x.GetInt64() : -1);
  }
  return job;
}

PlannedEntry ReadEntry(const Fields& f) {
  PlannedEntry p;
  p.index = f.Int("index");
  p.job_key = f.Str("job");
  p.array_index = f.Int("array_index");
  p.bucket = f.Str("bucket");
  p.config_key = f.Str("config_key");
  p.recipe = f.Str("recipe");
  p.arm = f.Str("arm");
  p.conc = f.Int("conc");
  p.gpus = f.Int("gpus");
  p.nodes = std::max<int64_t>(1, f.Int("nodes"));
  p.eval_only = f.Bool("eval_only");
  p.image = f.Str("image");
  p.model_path = f.Str("model_path");
  p.router_version = f.Str("router_version");
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
  m.sweep_dir = top.Str("sweep_dir");
  m.ixsubmit = top.Str("ixsubmit");
  m.recipe_dir = top.Str("recipe_dir");
  m.fail_fast = top.Bool("fail_fast");
  m.dry_run = top.Bool("dry_run");
  Result<SweepMode> mode = ParseSweepMode(top.Str("mode"));
  if (!mode) return Error{path + ": field 'mode': " + mode.error().message};
  m.plan.mode = mode.value();
  if (!d.HasMember("client") || !d["client"].IsArray() || !d.HasMember("jobs") || !d["jobs"].IsArray() ||
      !d.HasMember("entries") || !d["entries"].IsArray()) {
    return Error{path + ": fields 'client', 'jobs' and 'entries' must be arrays"};
  }
  for (const auto& a : d["client"].GetArray()) m.client.push_back(a.IsString() ? a.GetString() : "");
  if (d.HasMember("client_defaults") && d["client_defaults"].IsObject()) {
    const Fields cd{d["client_defaults"]};
    m.client_defaults.bench_serving_dir = cd.Str("bench_serving_dir");
    m.client_defaults.duration = cd.Int("duration");
  }
  if (d.HasMember("hang_after") && d["hang_after"].IsString()) m.hang_after = d["hang_after"].GetString();
  if (d.HasMember("sbatch") && d["sbatch"].IsObject()) {
    const Fields sb{d["sbatch"]};
    m.settings.partition = sb.Str("partition");
    m.settings.account = sb.Str("account");
    m.settings.time_limit = sb.Str("time");
    m.settings.exclusive = sb.Bool("exclusive");
    m.settings.throttle = sb.Int("throttle");
  }
  // A sweep.json without "container" was written before containers: its
  // steps ran on the host, and so do those of its resumed submitter.
  if (d.HasMember("container") && d["container"].IsObject()) {
    const Fields c{d["container"]};
    m.container.enabled = c.Bool("enabled");
    m.container.squash_dir = c.Str("squash_dir");
    m.container.model_dir = c.Str("model_dir");
  }
  // Without "stream" (written before the agent): the default socket, no
  // collector, results in the sweep directory.
  if (d.HasMember("stream") && d["stream"].IsObject()) {
    const Fields s{d["stream"]};
    // An empty agent_socket is the default one.
    if (!s.Str("agent_socket").empty()) m.stream.agent_socket = s.Str("agent_socket");
    m.stream.collector_listen = s.Str("collector_listen");
    m.stream.collector_url = s.Str("collector_url");
    m.stream.token_file = s.Str("token_file");
    m.stream.node_result_dir = s.Str("node_result_dir");
  }
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
