#include "submitter/sweep/sweep_container.h"

#include <rapidjson/document.h>

#include <filesystem>
#include <set>

namespace ix {

namespace {

// The plugin's KV offload options for the entry's row: its
// kv-offload-backend and the DRAM the matrix gave it (total-cpu-dram-gb),
// none for a row without one.
std::vector<std::string> KvOffloadOptions(const PlannedEntry& e) {
  rapidjson::Document d;
  d.Parse(e.entry_json.c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("kv-offload-backend")) return {};
  const rapidjson::Value& b = d["kv-offload-backend"];
  if (!b.IsObject() || !b.HasMember("name") || !b["name"].IsString()) return {};
  std::vector<std::string> out = {std::string("--inferencex-kv-offload=") + b["name"].GetString()};
  if (d.HasMember("total-cpu-dram-gb") && d["total-cpu-dram-gb"].IsInt64() && d["total-cpu-dram-gb"].GetInt64() > 0) {
    out.push_back("--inferencex-kv-offload-dram-gb=" + std::to_string(d["total-cpu-dram-gb"].GetInt64()));
  }
  return out;
}

}  // namespace

bool PathExistsOnDisk(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

Result<std::vector<std::string>> ImagesOfKeys(const MasterConfig& config, const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& key : keys) {
    const ConfigEntry* c = config.Find(key);
    if (!c || !seen.insert(c->image).second) continue;
    if (Result<ImageRef> ref = ParseImageRef(c->image); !ref) {
      return Error{c->Where() + ": " + key + ": field 'image': " + ref.error().message};
    }
    out.push_back(c->image);
  }
  return out;
}

Status CheckSweepContainers(const SweepManifest& m, const MasterConfig& config) {
  std::vector<std::string> keys;
  for (const PlannedEntry& e : m.plan.entries) keys.push_back(e.config_key);
  if (Result<std::vector<std::string>> images = ImagesOfKeys(config, keys); !images) return images.error();
  if (Status s = CheckMountPath("--sweep-dir", m.sweep_dir); !s) return s;
  if (!m.container.model_dir.empty()) {
    if (Status s = CheckMountPath("--model-dir", m.container.model_dir); !s) return s;
  }
  std::set<std::string> checked;
  for (const PlannedEntry& e : m.plan.entries) {
    if (e.model_path.empty() || e.model_path[0] != '/' || !checked.insert(e.recipe + "\n" + e.model_path).second) {
      continue;
    }
    const std::string what = "recipe " + e.recipe + ": variable MODEL_PATH";
    if (m.container.model_dir.empty()) {
      if (Status s = CheckMountPath(what, e.model_path); !s) return s;
      continue;
    }
    const std::filesystem::path rel =
        std::filesystem::path(e.model_path).lexically_normal().lexically_relative(m.container.model_dir);
    if (rel.empty() || *rel.begin() == "..") {
      return Error{what + " '" + e.model_path + "' is not inside --model-dir " + m.container.model_dir +
                   ": the engine reads its checkpoint at MODEL_PATH inside the container, where only the model "
                   "directory is mounted; give a --model-dir that holds it"};
    }
  }
  return Ok{};
}

std::vector<std::string> DescribeImages(const SweepManifest& m, const PathExists& exists) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const PlannedEntry& e : m.plan.entries) {
    if (e.image.empty() || !seen.insert(e.image).second) continue;
    if (m.container.squash_dir.empty()) {
      out.push_back("image " + e.image + ": no --squash-dir; Pyxis imports it on each node");
    } else if (exists(SquashPath(m.container.squash_dir, e.image))) {
      out.push_back("image " + e.image + ": " + SquashPath(m.container.squash_dir, e.image));
    } else {
      out.push_back("image " + e.image + ": " + SquashPath(m.container.squash_dir, e.image) +
                    " is missing, so Pyxis imports the image on each node; `ixsubmit images import --squash-dir " +
                    m.container.squash_dir + " " + e.image + "` imports it once");
    }
  }
  return out;
}

const char kHeadOnlyScript[] =
    "[ \"${SLURM_NODEID:-0}\" = 0 ] && [ \"${IX_NODE_RANK:-0}\" = 0 ] || exit 0; exec \"$@\"";

std::vector<std::string> HeadOnly(const std::vector<std::string>& client) {
  std::vector<std::string> argv = {"/bin/sh", "-c", kHeadOnlyScript, "ix-head-only"};
  argv.insert(argv.end(), client.begin(), client.end());
  return argv;
}

std::vector<std::string> StepSrunArgv(const SweepManifest& m, const PlannedEntry& e, const PathExists& exists,
                                      const std::vector<std::string>& client_argv) {
  std::vector<std::string> argv = {"srun"};
  if (e.nodes > 1) {
    // One task per node; a task that fails ends the step on every node.
    argv.insert(argv.end(), {"-N" + std::to_string(e.nodes), "--ntasks-per-node=1", "--kill-on-bad-exit=1"});
  } else {
    argv.push_back("--ntasks=1");
  }
  argv.push_back("--gres=gpu:" + std::to_string(e.gpus));
  if (m.container.enabled && !e.image.empty()) {
    for (std::string& a : ContainerSrunArgs(m.container, e.image, e.model_path, TaskResultDir(m, e.index), exists)) {
      argv.push_back(std::move(a));
    }
  }
  argv.push_back("--inferencex-recipe=" + e.recipe);
  argv.push_back("--inferencex-arm=" + e.arm);
  argv.push_back("--inferencex-conc=" + std::to_string(e.conc));
  if (e.eval_only) argv.push_back("--inferencex-eval-only");
  for (std::string& a : KvOffloadOptions(e)) argv.push_back(std::move(a));
  if (!m.hang_after.empty()) argv.push_back("--inferencex-hang-after=" + m.hang_after);
  const std::vector<std::string> client = e.nodes > 1 ? HeadOnly(client_argv) : client_argv;
  argv.insert(argv.end(), client.begin(), client.end());
  return argv;
}

}  // namespace ix
