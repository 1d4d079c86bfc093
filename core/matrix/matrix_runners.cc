#include "core/matrix/matrix_runners.h"

#include "core/yaml/yaml_check.h"

namespace ix {

const RunnerLabel* RunnerConfig::FindLabel(const std::string& name) const {
  auto it = label_index.find(name);
  return it == label_index.end() ? nullptr : &labels[it->second];
}

const RunnerHardware* RunnerConfig::FindHardware(const std::string& name) const {
  auto it = hardware.find(name);
  return it == hardware.end() ? nullptr : &it->second;
}

namespace {

RunnerConfig Load(const YamlDoc& doc) {
  YamlCheck c(doc);
  const uint32_t root = doc.root();
  if (doc.node(root).type == YType::kNull) {
    throw YamlCheckError(doc.name() + ": file is empty, expected a runner config mapping with 'labels'");
  }
  if (doc.node(root).type != YType::kMap) {
    c.Fail(root, "", "a runner config must be a mapping with 'labels' (and 'hardware'), got " +
                         DescribeYaml(doc.node(root)));
  }
  c.CheckKeys(root, "", {"labels", "hardware"});
  RunnerConfig rc;
  rc.file = doc.name();
  const uint32_t labels = c.Required(root, "", "labels");
  c.ForEachEntry(labels, "labels", [&](const std::string& name, const std::string& path, uint32_t list) {
    c.RequireSeq(list, path);
    RunnerLabel label;
    label.name = name;
    const YNode& ln = doc.node(list);
    for (size_t i = 0; i < ln.items.size(); ++i) label.nodes.push_back(c.Str(ln.items[i], FieldIndex(path, i)));
    rc.label_index.emplace(name, rc.labels.size());
    rc.labels.push_back(std::move(label));
  });
  const uint32_t hw = c.Optional(root, "hardware");
  if (hw == YamlDoc::kNoNode) return rc;
  c.ForEachEntry(hw, "hardware", [&](const std::string& name, const std::string& path, uint32_t entry) {
    c.CheckKeys(entry, path, {"available-cpu-dram-mib", "gpus-per-node"});
    RunnerHardware h;
    h.available_cpu_dram_mib = c.Positive(c.Required(entry, path, "available-cpu-dram-mib"),
                                          FieldPath(path, "available-cpu-dram-mib"));
    h.gpus_per_node = c.Positive(c.Required(entry, path, "gpus-per-node"), FieldPath(path, "gpus-per-node"));
    rc.hardware.emplace(name, h);
  });
  return rc;
}

Result<RunnerConfig> LoadParsed(const Result<YamlDoc>& doc) {
  if (!doc) return doc.error();
  try {
    return Load(doc.value());
  } catch (const YamlCheckError& e) {
    return Error{e.what()};
  }
}

}  // namespace

Result<RunnerConfig> LoadRunnerConfigString(std::string_view text, const std::string& name) {
  return LoadParsed(YamlDoc::Parse(text, name));
}

Result<RunnerConfig> LoadRunnerConfigFile(const std::string& path) { return LoadParsed(YamlDoc::ParseFile(path)); }

}  // namespace ix
