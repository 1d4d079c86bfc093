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
  c.RequireMap(labels, "labels");
  const YNode& lm = doc.node(labels);
  for (size_t k = 0; k < lm.items.size(); k += 2) {
    const std::string name = c.Str(lm.items[k], "labels");
    const std::string path = FieldPath("labels", name);
    const uint32_t list = lm.items[k + 1];
    c.RequireSeq(list, path);
    RunnerLabel label;
    label.name = name;
    const YNode& ln = doc.node(list);
    for (size_t i = 0; i < ln.items.size(); ++i) label.nodes.push_back(c.Str(ln.items[i], FieldIndex(path, i)));
    rc.label_index.emplace(name, rc.labels.size());
    rc.labels.push_back(std::move(label));
  }
  const uint32_t hw = c.Optional(root, "hardware");
  if (hw != YamlDoc::kNoNode) {
    c.RequireMap(hw, "hardware");
    const YNode& hm = doc.node(hw);
    for (size_t k = 0; k < hm.items.size(); k += 2) {
      const std::string name = c.Str(hm.items[k], "hardware");
      const std::string path = FieldPath("hardware", name);
      const uint32_t entry = hm.items[k + 1];
      c.CheckKeys(entry, path, {"available-cpu-dram-mib", "gpus-per-node"});
      RunnerHardware h;
      h.available_cpu_dram_mib = c.Positive(c.Required(entry, path, "available-cpu-dram-mib"),
                                            FieldPath(path, "available-cpu-dram-mib"));
      h.gpus_per_node = c.Positive(c.Required(entry, path, "gpus-per-node"), FieldPath(path, "gpus-per-node"));
      rc.hardware.emplace(name, h);
    }
  }
  return rc;
}

}  // namespace

Result<RunnerConfig> LoadRunnerConfigString(std::string_view text, const std::string& name) {
  Result<YamlDoc> doc = YamlDoc::Parse(text, name);
  if (!doc) return doc.error();
  try {
    return Load(doc.value());
  } catch (const YamlCheckError& e) {
    return Error{e.what()};
  }
}

Result<RunnerConfig> LoadRunnerConfigFile(const std::string& path) {
  Result<YamlDoc> doc = YamlDoc::ParseFile(path);
  if (!doc) return doc.error();
  try {
    return Load(doc.value());
  } catch (const YamlCheckError& e) {
    return Error{e.what()};
  }
}

}  // namespace ix
