#include "submitter/sweep_results.h"

#include <dirent.h>

#include <algorithm>
#include <filesystem>

#include "core/base/file_text.h"
#include "core/process/spawn.h"
#include "submitter/report/agentic_read.h"
#include "submitter/sweep/sweep_db.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep_command.h"

namespace ix {
namespace {

std::vector<std::string> FileNames(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != ".." && e->d_type != DT_DIR) names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool ReadResultFile(EntryResults& r, const std::string& name) {
  int err = 0;
  const std::string text = ReadFileText(r.result_dir + "/" + name, &err);
  auto doc = std::make_shared<rapidjson::Document>();
  if (err || doc->Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str()).HasParseError() || !doc->IsObject()) {
    return false;
  }
  r.agg_path = r.result_dir + "/" + name;
  r.agg = std::move(doc);
  return true;
}

// InferenceX's result of the entry: an agentic entry's RESULT_FILENAME.json
// (its workflow uploads that file as the result, and runs no
// process_result.py), a fixed-seq-len entry's agg_*.json (RESULT_FILENAME.json
// is then the client's own output, not a result).
void ReadAgg(EntryResults& r) {
  int err = 0;
  r.agentic = EnvFileValue(ReadFileText(r.result_dir + "/benchmark.env", &err), "SCENARIO_TYPE") == "agentic-coding";
  if (r.agentic) {
    if (const std::string name = AgenticAggregateName(r.result_dir); !name.empty()) ReadResultFile(r, name);
    return;
  }
  for (const std::string& n : r.files) {
    if (n.rfind("agg_", 0) == 0 && EndsWith(n, ".json") && ReadResultFile(r, n)) return;
  }
}

}  // namespace

std::string RelativeTo(const std::string& target, const std::string& from) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path t = fs::absolute(target, ec), f = fs::absolute(from, ec);
  return t.lexically_normal().lexically_relative(f.lexically_normal()).string();
}

Result<SweepResults> LoadSweepResults(const std::optional<std::string>& db, const std::optional<std::string>& id) {
  if (Result<std::string> there = ExistingDbPath(db, CurrentEnvironment(), PathExistsOnDisk); !there) return there.error();
  Result<SweepStore> store = OpenSweepStore(db);
  if (!store) return store.error();
  std::string sweep_id;
  if (id) {
    sweep_id = *id;
  } else {
    Result<std::string> latest = store.value().LatestSweepId();
    if (!latest) return latest.error();
    sweep_id = latest.value();
  }
  Result<LoadedSweep> l = store.value().LoadSweep(sweep_id);
  if (!l) return l.error();
  SweepResults out;
  out.sweep = l.value().sweep;
  const std::vector<std::string> logs = FileNames(out.sweep.sweep_dir + "/logs");
  for (const EntryRecord& e : l.value().entries) {
    EntryResults r;
    r.record = e;
    r.result_dir = !e.result_path.empty() ? e.result_path
                                          : out.sweep.sweep_dir + "/results/" + std::to_string(e.index);
    r.files = FileNames(r.result_dir);
    ReadAgg(r);
    if (!e.slurm_task_id.empty()) {
      for (const std::string& n : logs) {
        if (EndsWith(n, "_" + e.slurm_task_id + ".out")) r.batch_log = out.sweep.sweep_dir + "/logs/" + n;
      }
    }
    out.entries.push_back(std::move(r));
  }
  return out;
}

}  // namespace ix
