#include "submitter/sweep/sweep_files.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <sys/stat.h>

#include <cerrno>
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

}  // namespace

std::string ScriptPath(const SweepManifest& m, const PlannedJob& job) {
  return m.sweep_dir + "/" + (job.canary ? std::string("canary") : "bucket-" + Safe(job.key.substr(7))) + ".sbatch";
}

std::string ResultDir(const SweepManifest& m, int64_t index) {
  return m.sweep_dir + "/results/" + std::to_string(index);
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

  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  w.SetIndent(' ', 2);
  auto str = [&](const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("sweep"); str(m.sweep_id);
  w.Key("mode"); w.String(SweepModeName(m.plan.mode));
  w.Key("sweep_dir"); str(m.sweep_dir);
  w.Key("ixsubmit"); str(m.ixsubmit);
  w.Key("recipe_dir"); str(m.recipe_dir);
  w.Key("fail_fast"); w.Bool(m.fail_fast);
  w.Key("dry_run"); w.Bool(m.dry_run);
  w.Key("client");
  w.StartArray();
  for (const auto& a : m.client) str(a);
  w.EndArray();
  w.Key("sbatch");
  w.StartObject();
  w.Key("partition"); str(m.settings.partition);
  w.Key("account"); str(m.settings.account);
  w.Key("time"); str(m.settings.time_limit);
  w.Key("exclusive"); w.Bool(m.settings.exclusive);
  w.Key("throttle"); w.Int64(m.settings.throttle);
  w.EndObject();
  w.Key("container");
  w.StartObject();
  w.Key("enabled"); w.Bool(m.container.enabled);
  w.Key("squash_dir"); str(m.container.squash_dir);
  w.Key("model_dir"); str(m.container.model_dir);
  w.EndObject();
  w.Key("jobs");
  w.StartArray();
  for (const PlannedJob& j : m.plan.jobs) {
    w.StartObject();
    w.Key("key"); str(j.key);
    w.Key("bucket"); str(j.bucket);
    w.Key("canary"); w.Bool(j.canary);
    w.Key("gpus"); w.Int64(j.gpus);
    w.Key("depends_on"); str(j.depends_on);
    w.Key("entries");
    w.StartArray();
    for (int64_t i : j.entries) w.Int64(i);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("entries");
  w.StartArray();
  for (const PlannedEntry& e : m.plan.entries) {
    w.StartObject();
    w.Key("index"); w.Int64(e.index);
    w.Key("job"); str(e.job_key);
    w.Key("array_index"); w.Int64(e.array_index);
    w.Key("bucket"); str(e.bucket);
    w.Key("config_key"); str(e.config_key);
    w.Key("recipe"); str(e.recipe);
    w.Key("arm"); str(e.arm);
    w.Key("conc"); w.Int64(e.conc);
    w.Key("gpus"); w.Int64(e.gpus);
    w.Key("eval_only"); w.Bool(e.eval_only);
    w.Key("image"); str(e.image);
    w.Key("model_path"); str(e.model_path);
    w.Key("entry"); w.RawValue(e.entry_json.c_str(), e.entry_json.size(), rapidjson::kObjectType);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  if (Status s = WriteFileAtomic(m.sweep_dir + "/sweep.json", std::string(buf.GetString()) + "\n", 0644); !s) return s;

  for (const PlannedJob& j : m.plan.jobs) {
    const std::string script =
        "#!/bin/bash\n"
        "# " + JobName(m, j) + ": " + (j.canary ? "the canary" : "bucket " + j.bucket) + " of sweep " + m.sweep_id +
        " (" + std::to_string(j.entries.size()) + " entries). Written by ixsubmit sweep; the entry is\n"
        "# looked up by SLURM_ARRAY_TASK_ID in sweep.json.\n"
        "exec " + Quote(m.ixsubmit) + " task --sweep-dir " + Quote(m.sweep_dir) + " --job " + Quote(j.key) + "\n";
    if (Status s = WriteFileAtomic(ScriptPath(m, j), script, 0755); !s) return s;
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
  // Callers check that `o` is an object: HasMember on anything else is undefined.
  auto s = [&](const rapidjson::Value& o, const char* k) -> std::string {
    return o.HasMember(k) && o[k].IsString() ? o[k].GetString() : "";
  };
  auto i = [&](const rapidjson::Value& o, const char* k) -> int64_t {
    return o.HasMember(k) && o[k].IsInt64() ? o[k].GetInt64() : 0;
  };
  auto b = [&](const rapidjson::Value& o, const char* k) { return o.HasMember(k) && o[k].IsBool() && o[k].GetBool(); };
  auto not_object = [&](const char* list, size_t n) {
    return Error{path + ": field '" + list + "[" + std::to_string(n) + "]' must be an object"};
  };
  SweepManifest m;
  m.sweep_id = s(d, "sweep");
  m.sweep_dir = s(d, "sweep_dir");
  m.ixsubmit = s(d, "ixsubmit");
  m.recipe_dir = s(d, "recipe_dir");
  m.fail_fast = b(d, "fail_fast");
  m.dry_run = b(d, "dry_run");
  Result<SweepMode> mode = ParseSweepMode(s(d, "mode"));
  if (!mode) return Error{path + ": field 'mode': " + mode.error().message};
  m.plan.mode = mode.value();
  if (!d.HasMember("client") || !d["client"].IsArray() || !d.HasMember("jobs") || !d["jobs"].IsArray() ||
      !d.HasMember("entries") || !d["entries"].IsArray()) {
    return Error{path + ": fields 'client', 'jobs' and 'entries' must be arrays"};
  }
  for (const auto& a : d["client"].GetArray()) m.client.push_back(a.IsString() ? a.GetString() : "");
  if (d.HasMember("sbatch") && d["sbatch"].IsObject()) {
    const rapidjson::Value& sb = d["sbatch"];
    m.settings.partition = s(sb, "partition");
    m.settings.account = s(sb, "account");
    m.settings.time_limit = s(sb, "time");
    m.settings.exclusive = b(sb, "exclusive");
    m.settings.throttle = i(sb, "throttle");
  }
  // A sweep.json without "container" was written before containers: its
  // steps ran on the host, and so do those of its resumed submitter.
  if (d.HasMember("container") && d["container"].IsObject()) {
    const rapidjson::Value& c = d["container"];
    m.container.enabled = b(c, "enabled");
    m.container.squash_dir = s(c, "squash_dir");
    m.container.model_dir = s(c, "model_dir");
  }
  for (const auto& j : d["jobs"].GetArray()) {
    if (!j.IsObject()) return not_object("jobs", m.plan.jobs.size());
    PlannedJob job;
    job.key = s(j, "key");
    job.bucket = s(j, "bucket");
    job.canary = b(j, "canary");
    job.gpus = i(j, "gpus");
    job.depends_on = s(j, "depends_on");
    if (j.HasMember("entries") && j["entries"].IsArray()) {
      for (const auto& x : j["entries"].GetArray()) job.entries.push_back(x.IsInt64() ? x.GetInt64() : -1);
    }
    m.plan.jobs.push_back(std::move(job));
  }
  for (const auto& e : d["entries"].GetArray()) {
    if (!e.IsObject()) return not_object("entries", m.plan.entries.size());
    PlannedEntry p;
    p.index = i(e, "index");
    p.job_key = s(e, "job");
    p.array_index = i(e, "array_index");
    p.bucket = s(e, "bucket");
    p.config_key = s(e, "config_key");
    p.recipe = s(e, "recipe");
    p.arm = s(e, "arm");
    p.conc = i(e, "conc");
    p.gpus = i(e, "gpus");
    p.eval_only = b(e, "eval_only");
    p.image = s(e, "image");
    p.model_path = s(e, "model_path");
    if (p.index != static_cast<int64_t>(m.plan.entries.size())) return Error{path + ": entries out of order"};
    m.plan.entries.push_back(std::move(p));
  }
  if (Status checked = CheckJobs(m, path); !checked) return checked.error();
  return m;
}

std::vector<std::string> SbatchArgs(const SweepManifest& m, const PlannedJob& job, const SubmitSettings& s,
                                    int64_t depends_on_job_id) {
  std::vector<std::string> a = {"--job-name=" + JobName(m, job), "--nodes=1", "--ntasks=1",
                                "--gres=gpu:" + std::to_string(job.gpus),
                                "--chdir=" + m.sweep_dir};
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
