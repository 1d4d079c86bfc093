#include "core/node/topology_json.h"
#include "core/node/topology_writer.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

// Nothing here needs hwloc: the cache is read by programs that do not load
// it (ix_node; topology_hwloc.cc is in ix_node_discovery).
namespace ix {
namespace {

using rapidjson::Value;

constexpr char kFormat[] = "ix-topology";

// ---- reading ----------------------------------------------------------------

// Where a value sits in the document: list[index].key[item], any part absent.
// Turned into text only for an error, so a good document costs no strings.
struct Path {
  const char* list = nullptr;  // "cores"; nullptr for a top-level field
  int index = -1;              // element of `list`
  const char* key = nullptr;   // member of that element, or top-level field
  int item = -1;               // element of that member (id lists, notes)
};

Path Top(const char* key) { return Path{nullptr, -1, key, -1}; }
Path In(const char* list, int index, const char* key = nullptr) { return Path{list, index, key, -1}; }
Path Item(Path p, int item) {
  p.item = item;
  return p;
}

std::string Describe(const Path& p) {
  std::string s;
  if (p.list) {
    s = p.list;
    if (p.index >= 0) s += "[" + std::to_string(p.index) + "]";
  }
  if (p.key) {
    if (!s.empty()) s += ".";
    s += p.key;
  }
  if (p.item >= 0) s += "[" + std::to_string(p.item) + "]";
  return s;
}

// A value as an error shows it: numbers as themselves, anything else by kind.
std::string Shown(const Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsNumber()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v.GetDouble());
    return buf;
  }
  if (v.IsString()) return "a string";
  if (v.IsArray()) return "an array";
  return "an object";
}

// A PCI bus id exactly as FormatBusId writes it (lower-case hex, device
// <= 0x1f, function <= 7: what NormalizeBusId gives back unchanged), as
// {domain, bus, device, function}, the key GPUs are sorted by; nullopt for
// anything else, so a cache cannot hold a spelling NormalizeBusId would not.
std::optional<std::array<unsigned, 4>> CanonicalBusId(std::string_view s) {
  Result<std::string> canonical = NormalizeBusId(s);
  if (!canonical || canonical.value() != s) return std::nullopt;
  std::array<unsigned, 4> v{};
  std::sscanf(canonical.value().c_str(), "%x:%x:%x.%x", &v[0], &v[1], &v[2], &v[3]);
  return v;
}

// string_views (of literals, so data() is NUL-terminated): compared without strlen.
constexpr std::string_view kTopKeys[] = {"format", "version", "source", "numa_nodes", "cores", "gpus", "notes"};
enum { kTFormat, kTVersion, kTSource, kTNumaNodes, kTCores, kTGpus, kTNotes };
constexpr std::string_view kNodeKeys[] = {"os_index", "total_bytes", "cores", "cpus"};
enum { kNOsIndex, kNTotalBytes, kNCores, kNCpus };
constexpr std::string_view kCoreKeys[] = {"os_index", "package", "numa", "cpus"};
enum { kCOsIndex, kCPackage, kCNuma, kCCpus };
constexpr std::string_view kGpuKeys[] = {"index", "bus_id", "vendor_id", "device_id", "class_id", "numa", "local_numa"};
enum { kGIndex, kGBusId, kGVendorId, kGDeviceId, kGClassId, kGNuma, kGLocalNuma };

// Reads a TopologyToCacheJson document into a Topology. Every method returns
// false at the first problem, with error() saying where and what was
// expected; nothing throws.
class Reader {
 public:
  explicit Reader(const std::string& where) : where_(where) {}
  Error error() const { return Error{error_}; }

  bool Read(const Value& d, Topology& t);

 private:
  // "field 'P' is <shown> (expected E)", or "is missing" for no value.
  // Expectations are string_views so a good document builds no strings.
  bool Bad(const Path& p, const Value* v, std::string_view expected) {
    return Fail(p, (v ? "is " + Shown(*v) : std::string("is missing")) + " (expected " + std::string(expected) + ")");
  }
  bool Fail(const Path& p, const std::string& what) {
    error_ = where_ + ": field '" + Describe(p) + "' " + what;
    return false;
  }

  // Each object of `list` (field `name`, each `what` with members `keys`)
  // read by read(members, index, item) and appended to `out`; false at the
  // first that `read` refuses. The nodes, cores and GPUs are read this way.
  template <class T, size_t N, class Read>
  bool ReadObjects(const Value& list, const char* name, const char* what, const std::string_view (&keys)[N],
                   std::vector<T>& out, Read read) {
    out.reserve(list.Size());
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
      const Value* f[N];
      const int at = static_cast<int>(i);
      T item;
      if (!Members(list[i], In(name, at), what, keys, f) || !read(f, at, item)) return false;
      out.push_back(std::move(item));
    }
    return true;
  }

  // The members of object `v` named in `keys` (nullptr where absent); a
  // member the format does not have, or one given twice, is an error.
  template <size_t N>
  bool Members(const Value& v, const Path& at, const char* what, const std::string_view (&keys)[N],
               const Value* (&out)[N]) {
    if (!v.IsObject()) return Bad(at, &v, std::string("an object, ") + what);
    std::fill(std::begin(out), std::end(out), nullptr);
    for (const auto& m : v.GetObject()) {
      const std::string_view name(m.name.GetString(), m.name.GetStringLength());
      size_t k = 0;
      while (k < N && name != keys[k]) ++k;
      Path p = at;
      p.key = k < N ? keys[k].data() : m.name.GetString();
      if (k == N) {
        return Fail(p, name == "free_bytes"
                           ? "is not cached (free memory is measured per step; expected no free_bytes)"
                           : "is not a field of the topology cache format (expected only " + KeyList(keys) + ")");
      }
      if (out[k]) return Fail(p, "is given twice (expected each field once)");
      out[k] = &m.value;
    }
    return true;
  }
  template <size_t N>
  static std::string KeyList(const std::string_view (&keys)[N]) {
    std::string s;
    for (std::string_view k : keys) s += (s.empty() ? "" : ", ") + std::string(k);
    return s;
  }

  bool Int(const Value* v, const Path& p, int lo, std::string_view expected, int* out) {
    if (!v || !v->IsInt() || v->GetInt() < lo) return Bad(p, v, expected);
    *out = v->GetInt();
    return true;
  }
  bool Uint16(const Value* v, const Path& p, std::string_view expected, uint16_t* out) {
    if (!v || !v->IsUint() || v->GetUint() > 0xffff) return Bad(p, v, expected);
    *out = static_cast<uint16_t>(v->GetUint());
    return true;
  }
  bool Uint64(const Value* v, const Path& p, std::string_view expected, uint64_t* out) {
    if (!v || !v->IsUint64()) return Bad(p, v, expected);
    *out = v->GetUint64();
    return true;
  }
  bool String(const Value* v, const Path& p, std::string_view expected, std::string* out) {
    if (!v || !v->IsString()) return Bad(p, v, expected);
    out->assign(v->GetString(), v->GetStringLength());
    return true;
  }
  bool Array(const Value* v, const Path& p, std::string_view expected) {
    if (!v || !v->IsArray()) return Bad(p, v, "an array of " + std::string(expected));
    return true;
  }
  // A list of os indices: integers >= 0, strictly increasing.
  bool Ids(const Value* v, const Path& p, const char* what, std::vector<int>* out) {
    auto expected = [&] { return std::string(what) + " (integers >= 0, sorted, each once)"; };
    if (!v || !v->IsArray()) return Array(v, p, expected());
    out->clear();
    out->reserve(v->Size());
    for (rapidjson::SizeType j = 0; j < v->Size(); ++j) {
      int id = 0;
      if (!Int(&(*v)[j], Item(p, static_cast<int>(j)), 0, what, &id)) return false;
      if (!out->empty() && id <= out->back()) {
        return Fail(Item(p, static_cast<int>(j)), "is " + std::to_string(id) + ", not above the " +
                                                      std::to_string(out->back()) + " before it (expected " +
                                                      expected() + ")");
      }
      out->push_back(id);
    }
    return true;
  }

  bool ReadNodes(const Value& list, Topology& t);
  bool ReadCores(const Value& list, Topology& t);
  bool CheckNodeCpus(const Topology& t);
  bool ReadGpus(const Value& list, Topology& t);

  // Position of NUMA node `os` in t.numa_nodes (sorted by then), or -1.
  static int NodeAt(const Topology& t, int os) {
    auto it = std::lower_bound(t.numa_nodes.begin(), t.numa_nodes.end(), os,
                               [](const NumaNode& n, int x) { return n.os_index < x; });
    return it != t.numa_nodes.end() && it->os_index == os ? static_cast<int>(it - t.numa_nodes.begin()) : -1;
  }
  static std::string NodeList(const Topology& t, bool with_cpus_only) {
    std::string s;
    for (const NumaNode& n : t.numa_nodes) {
      if (!with_cpus_only || !n.cpus.empty()) s += (s.empty() ? "" : ",") + std::to_string(n.os_index);
    }
    return s.empty() ? "none" : s;
  }

  const std::string& where_;
  std::string error_;
};

bool Reader::Read(const Value& d, Topology& t) {
  // Format and version before the strict field check, so a file of another
  // version is refused for its version, not for a field this one lacks.
  const Value* f[std::size(kTopKeys)];
  for (int k : {kTFormat, kTVersion}) {
    auto m = d.FindMember(kTopKeys[k].data());
    f[k] = m == d.MemberEnd() ? nullptr : &m->value;
  }
  std::string format;
  if (!String(f[kTFormat], Top("format"), std::string("\"") + kFormat + "\"", &format)) return false;
  if (format != kFormat) return Fail(Top("format"), "is \"" + format + "\" (expected \"" + kFormat + "\")");
  int version = 0;
  const std::string want_version = std::to_string(kTopologyJsonVersion) + ", the version this build reads";
  if (!Int(f[kTVersion], Top("version"), 0, want_version, &version)) return false;
  if (version != kTopologyJsonVersion) return Bad(Top("version"), f[kTVersion], want_version);
  if (!Members(d, Path{}, "a topology cache document", kTopKeys, f)) return false;
  if (!String(f[kTSource], Top("source"), "a string (the XML path, or \"this machine\")", &t.source)) return false;

  if (!Array(f[kTNumaNodes], Top("numa_nodes"), "NUMA node objects")) return false;
  if (!ReadNodes(*f[kTNumaNodes], t)) return false;
  if (!Array(f[kTCores], Top("cores"), "core objects")) return false;
  if (!ReadCores(*f[kTCores], t)) return false;
  if (!CheckNodeCpus(t)) return false;
  if (!Array(f[kTGpus], Top("gpus"), "GPU objects")) return false;
  if (!ReadGpus(*f[kTGpus], t)) return false;

  if (!Array(f[kTNotes], Top("notes"), "strings")) return false;
  const Value& notes = *f[kTNotes];
  t.notes.reserve(notes.Size());
  for (rapidjson::SizeType i = 0; i < notes.Size(); ++i) {
    std::string note;
    if (!String(&notes[i], Item(Top("notes"), static_cast<int>(i)), "a string", &note)) return false;
    t.notes.push_back(std::move(note));
  }
  return true;
}

// NUMA nodes: sorted by os_index, each once.
bool Reader::ReadNodes(const Value& list, Topology& t) {
  return ReadObjects(list, "numa_nodes", "a NUMA node", kNodeKeys, t.numa_nodes, [&](auto& f, int at, NumaNode& n) {
    if (!Int(f[kNOsIndex], In("numa_nodes", at, "os_index"), 0, "a NUMA node os index, an integer >= 0",
             &n.os_index)) {
      return false;
    }
    if (!t.numa_nodes.empty() && n.os_index <= t.numa_nodes.back().os_index) {
      return Fail(In("numa_nodes", at, "os_index"),
                  "is " + std::to_string(n.os_index) + ", not above the " +
                      std::to_string(t.numa_nodes.back().os_index) +
                      " of the node before it (expected NUMA nodes sorted by os_index, each once)");
    }
    if (!Uint64(f[kNTotalBytes], In("numa_nodes", at, "total_bytes"), "bytes, an integer >= 0", &n.total_bytes)) {
      return false;
    }
    if (!Int(f[kNCores], In("numa_nodes", at, "cores"), 0, "a number of cores, an integer >= 0", &n.cores)) {
      return false;
    }
    return Ids(f[kNCpus], In("numa_nodes", at, "cpus"), "CPU os indices", &n.cpus);
  });
}

// Cores: sorted by first CPU, non-empty, no CPU in two of them, on a node
// present (or -1).
bool Reader::ReadCores(const Value& list, Topology& t) {
  if (list.Empty()) return Fail(Top("cores"), "is empty (expected at least one core: a topology without CPUs is never built)");
  const bool read = ReadObjects(list, "cores", "a core", kCoreKeys, t.cores, [&](auto& f, int at, Core& c) {
    if (!Int(f[kCOsIndex], In("cores", at, "os_index"), -1, "the core's os index, an integer >= -1", &c.os_index) ||
        !Int(f[kCPackage], In("cores", at, "package"), -1, "a package os index, an integer >= -1 (-1 unknown)",
             &c.package) ||
        !Int(f[kCNuma], In("cores", at, "numa"), -1, "a NUMA node os index, an integer >= -1 (-1 unknown)",
             &c.numa) ||
        !Ids(f[kCCpus], In("cores", at, "cpus"), "CPU os indices", &c.cpus)) {
      return false;
    }
    if (c.numa != -1 && NodeAt(t, c.numa) < 0) {
      return Bad(In("cores", at, "numa"), f[kCNuma], "-1 or a NUMA node present: " + NodeList(t, false));
    }
    if (c.cpus.empty()) return Fail(In("cores", at, "cpus"), "is empty (expected a core's CPUs, at least one)");
    if (!t.cores.empty() && c.cpus.front() <= t.cores.back().cpus.front()) {
      return Fail(In("cores", at, "cpus"), "starts at CPU " + std::to_string(c.cpus.front()) + ", not after cores[" +
                                               std::to_string(at - 1) + "]'s " +
                                               std::to_string(t.cores.back().cpus.front()) +
                                               " (expected cores sorted by their first CPU)");
    }
    return true;
  });
  if (!read) return false;
  // Every CPU in exactly one core.
  std::vector<std::pair<int, int>> owners;  // (cpu, core)
  for (size_t i = 0; i < t.cores.size(); ++i) {
    for (int cpu : t.cores[i].cpus) owners.emplace_back(cpu, static_cast<int>(i));
  }
  std::sort(owners.begin(), owners.end());
  for (size_t k = 1; k < owners.size(); ++k) {
    if (owners[k].first != owners[k - 1].first) continue;
    return Fail(In("cores", owners[k].second, "cpus"),
                "has CPU " + std::to_string(owners[k].first) + ", as cores[" + std::to_string(owners[k - 1].second) +
                    "] does (expected every CPU in exactly one core)");
  }
  return true;
}

// A node's CPUs and core count are exactly those of the cores whose `numa`
// it is (how Build makes them: Linux's per-node cpulist).
bool Reader::CheckNodeCpus(const Topology& t) {
  std::vector<std::vector<int>> cpus(t.numa_nodes.size());
  std::vector<int> cores(t.numa_nodes.size(), 0);
  for (const Core& c : t.cores) {
    if (c.numa == -1) continue;
    const int k = NodeAt(t, c.numa);
    cpus[k].insert(cpus[k].end(), c.cpus.begin(), c.cpus.end());
    ++cores[k];
  }
  bool any_cpus = false;
  for (size_t k = 0; k < t.numa_nodes.size(); ++k) {
    const NumaNode& n = t.numa_nodes[k];
    const int at = static_cast<int>(k);
    const std::string expected = " (expected a node's CPUs and cores to be those of the cores whose numa is " +
                                 std::to_string(n.os_index) + ")";
    if (n.cores != cores[k]) {
      return Fail(In("numa_nodes", at, "cores"), "is " + std::to_string(n.cores) + " but " +
                                                     std::to_string(cores[k]) + " cores have numa " +
                                                     std::to_string(n.os_index) + expected);
    }
    std::vector<int>& want = cpus[k];
    std::sort(want.begin(), want.end());
    if (n.cpus != want) {
      // The first CPU in one list and not the other.
      size_t i = 0;
      while (i < n.cpus.size() && i < want.size() && n.cpus[i] == want[i]) ++i;
      const bool extra = i < n.cpus.size() && (i == want.size() || n.cpus[i] < want[i]);
      return Fail(In("numa_nodes", at, "cpus"),
                  extra ? "has CPU " + std::to_string(n.cpus[i]) + ", which none of its cores has" + expected
                        : "lacks CPU " + std::to_string(want[i]) + " of one of its cores" + expected);
    }
    any_cpus = any_cpus || !n.cpus.empty();
  }
  if (!any_cpus) {
    return Fail(Top("numa_nodes"), "has no node with CPUs (expected at least one: a topology without one is never built)");
  }
  return true;
}

// GPUs: NVIDIA, in PCI bus order, gpus[i].index == i; local_numa nodes with
// CPUs; numa, when set, a node with CPUs and the only one in local_numa.
bool Reader::ReadGpus(const Value& list, Topology& t) {
  std::optional<std::array<unsigned, 4>> prev;
  return ReadObjects(list, "gpus", "a GPU", kGpuKeys, t.gpus, [&](auto& f, int at, Gpu& g) {
    const std::string want_index = std::to_string(at) + ", the GPU's place in PCI bus order (gpus[i].index == i)";
    if (!Int(f[kGIndex], In("gpus", at, "index"), 0, want_index, &g.index)) return false;
    if (g.index != at) return Bad(In("gpus", at, "index"), f[kGIndex], want_index);
    const char* want_bus = "a PCI bus id as hwloc's are written, such as \"0000:1b:00.0\" (lower-case hex)";
    if (!String(f[kGBusId], In("gpus", at, "bus_id"), want_bus, &g.bus_id)) return false;
    const std::optional<std::array<unsigned, 4>> key = CanonicalBusId(g.bus_id);
    if (!key) return Fail(In("gpus", at, "bus_id"), "is \"" + g.bus_id + "\" (expected " + want_bus + ")");
    if (prev && *key <= *prev) {
      return Fail(In("gpus", at, "bus_id"), "is " + g.bus_id + ", not after gpus[" + std::to_string(at - 1) + "]'s " +
                                                t.gpus.back().bus_id + " (expected GPUs in PCI bus order, each once)");
    }
    prev = key;
    const char* want_u16 = "an integer 0-65535";
    if (!Uint16(f[kGVendorId], In("gpus", at, "vendor_id"), want_u16, &g.vendor_id) ||
        !Uint16(f[kGDeviceId], In("gpus", at, "device_id"), want_u16, &g.device_id) ||
        !Uint16(f[kGClassId], In("gpus", at, "class_id"), want_u16, &g.class_id)) {
      return false;
    }
    if (g.vendor_id != 0x10de) {
      return Bad(In("gpus", at, "vendor_id"), f[kGVendorId], "4318 (0x10de, NVIDIA): only NVIDIA GPUs are listed");
    }
    if (g.class_id != 0x0302 && g.class_id != 0x0300) {
      return Bad(In("gpus", at, "class_id"), f[kGClassId], "770 (0x0302, 3D controller) or 768 (0x0300, VGA)");
    }
    if (!Ids(f[kGLocalNuma], In("gpus", at, "local_numa"), "NUMA node os indices", &g.local_numa)) return false;
    for (size_t j = 0; j < g.local_numa.size(); ++j) {
      const int k = NodeAt(t, g.local_numa[j]);
      if (k < 0 || t.numa_nodes[k].cpus.empty()) {
        return Bad(Item(In("gpus", at, "local_numa"), static_cast<int>(j)), &(*f[kGLocalNuma])[static_cast<rapidjson::SizeType>(j)],
                   "a NUMA node with CPUs: " + NodeList(t, true));
      }
    }
    const std::string want_numa = "null (unknown or several) or the one node in local_numa";
    if (!f[kGNuma]) return Bad(In("gpus", at, "numa"), nullptr, want_numa);
    if (!f[kGNuma]->IsNull()) {
      int numa = 0;
      if (!Int(f[kGNuma], In("gpus", at, "numa"), 0, want_numa, &numa)) return false;
      if (g.local_numa.size() != 1 || g.local_numa.front() != numa) {
        return Bad(In("gpus", at, "numa"), f[kGNuma], want_numa);
      }
      g.numa = numa;
    }
    return true;
  });
}

}  // namespace

std::string TopologyToCacheJson(const Topology& t) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("format"); w.String(kFormat);
  w.Key("version"); w.Int(kTopologyJsonVersion);
  TopologyWriter<rapidjson::Writer<rapidjson::StringBuffer>>(w, TopologyJsonStyle::kCache).Members(t);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

Result<Topology> TopologyFromCacheJson(std::string_view text, const std::string& where) {
  const std::string expected = " (expected a topology cache file, the JSON TopologyToCacheJson writes)";
  // RapidJSON stops at a NUL as at the end, so "{...}\0junk" would pass.
  if (text.find('\0') != std::string_view::npos) return Error{where + ": has a NUL byte" + expected};
  // Parsed in place in a copy (keys and strings are not copied again, and a
  // NUL-terminated buffer is read faster than a sized one); iterative, so
  // deeply nested input cannot exhaust the stack.
  std::string buffer(text);
  rapidjson::Document d;
  d.ParseInsitu<rapidjson::kParseIterativeFlag>(buffer.data());
  if (d.HasParseError()) {
    return Error{where + ": not JSON: " + rapidjson::GetParseError_En(d.GetParseError()) + " at offset " +
                 std::to_string(d.GetErrorOffset()) + expected};
  }
  if (!d.IsObject()) return Error{where + ": is " + Shown(d) + ", not an object" + expected};
  Reader r(where);
  Topology t;
  if (!r.Read(d, t)) return r.error();
  return t;
}

}  // namespace ix
