// TopologyWriter: the one RapidJSON writer of a Topology, for its two JSON
// forms. The report (TopologyToJson, `ixctl topology --json`) is for people
// and scripts: CPU lists as text ("0-3,8"), free memory, PCI ids as hex. The
// cache format (topology_json.h) is lossless and is read back: CPU lists as
// arrays, the PCI ids as numbers, no free memory (measured per step). Both
// list the same objects in the same order; the style decides the few fields
// that differ, so a field added to Topology is written in one place.
// Internal to ix_node (topology_render.cc, topology_json.cc).
#pragma once

#include <rapidjson/rapidjson.h>

#include <cstdio>
#include <optional>
#include <type_traits>
#include <string>
#include <vector>

#include "core/node/topology.h"

namespace ix {

enum class TopologyJsonStyle { kReport, kCache };

template <class Writer>
class TopologyWriter {
 public:
  TopologyWriter(Writer& w, TopologyJsonStyle style) : w_(w), report_(style == TopologyJsonStyle::kReport) {}

  // The members of the topology's object, "source" to "notes"; the caller
  // opens and closes the object (and adds its own members around them).
  void Members(const Topology& t) {
    w_.Key("source"); Str(t.source);
    w_.Key("numa_nodes");
    List(t.numa_nodes, &TopologyWriter::Node);
    w_.Key("cores");
    List(t.cores, &TopologyWriter::CoreObject);
    w_.Key("gpus");
    List(t.gpus, &TopologyWriter::GpuObject);
    w_.Key("notes"); Strings(t.notes);
  }

  void Str(const std::string& s) { w_.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }
  void Strings(const std::vector<std::string>& list) {
    w_.StartArray();
    for (const std::string& s : list) Str(s);
    w_.EndArray();
  }
  void Ids(const std::vector<int>& ids) {
    w_.StartArray();
    for (int i : ids) w_.Int(i);
    w_.EndArray();
  }
  // CPU lists: "0-3,8" in the report, [0,1,2,3,8] in the cache.
  void Cpus(const std::vector<int>& cpus) {
    if (report_) {
      Str(FormatIdList(cpus));
    } else {
      Ids(cpus);
    }
  }
  template <class T>
  void IntOrNull(const std::optional<T>& v) {
    if (!v) {
      w_.Null();
    } else if constexpr (std::is_same_v<T, int>) {
      w_.Int(*v);
    } else {
      w_.Uint64(*v);
    }
  }

 private:
  template <class T>
  void List(const std::vector<T>& items, void (TopologyWriter::*write)(const T&)) {
    w_.StartArray();
    for (const T& x : items) (this->*write)(x);
    w_.EndArray();
  }

  void Node(const NumaNode& n) {
    w_.StartObject();
    w_.Key("os_index"); w_.Int(n.os_index);
    w_.Key("total_bytes"); w_.Uint64(n.total_bytes);
    if (report_) {
      w_.Key("free_bytes"); IntOrNull(n.free_bytes);
      w_.Key("cpus"); Cpus(n.cpus);
      w_.Key("cores"); w_.Int(n.cores);
      w_.Key("placement_target"); w_.Bool(n.HasCpus());
    } else {  // free_bytes left out: measured per step
      w_.Key("cores"); w_.Int(n.cores);
      w_.Key("cpus"); Cpus(n.cpus);
    }
    w_.EndObject();
  }

  void CoreObject(const Core& c) {
    w_.StartObject();
    w_.Key("os_index"); w_.Int(c.os_index);
    w_.Key("package"); w_.Int(c.package);
    w_.Key("numa"); w_.Int(c.numa);
    w_.Key("cpus"); Cpus(c.cpus);
    w_.EndObject();
  }

  void GpuObject(const Gpu& g) {
    w_.StartObject();
    w_.Key("index"); w_.Int(g.index);
    w_.Key("bus_id"); Str(g.bus_id);
    if (report_) {
      char pci_id[16], cls[8];
      std::snprintf(pci_id, sizeof pci_id, "%04x:%04x", g.vendor_id, g.device_id);
      std::snprintf(cls, sizeof cls, "%04x", g.class_id);
      w_.Key("pci_id"); w_.String(pci_id);
      w_.Key("class"); w_.String(cls);
    } else {
      w_.Key("vendor_id"); w_.Uint(g.vendor_id);
      w_.Key("device_id"); w_.Uint(g.device_id);
      w_.Key("class_id"); w_.Uint(g.class_id);
    }
    w_.Key("numa"); IntOrNull(g.numa);
    w_.Key("local_numa"); Ids(g.local_numa);
    w_.EndObject();
  }

  Writer& w_;
  const bool report_;
};

}  // namespace ix
