#include "ixctl/ports_command.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <ctime>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/node/ports.h"
#include "ixctl/command_line.h"

namespace ix {
namespace po = boost::program_options;

namespace {

const char kUsage[] =
    "Usage: ixctl ports lease --owner ID --names A,B,... [--block NAME=K]... [OPTIONS] [--json]\n"
    "       ixctl ports release --owner ID [OPTIONS]\n"
    "       ixctl ports list [OPTIONS] [--json]\n"
    "\n"
    "Lease, release and list ports of this node's port broker. Every port is\n"
    "proven free by a bind probe and recorded under flock in the lease\n"
    "directory; a lease whose holder process has died is reclaimed on the next\n"
    "allocation. A lease made here belongs to --pid (default: the calling\n"
    "process, i.e. ixctl's parent), so it lasts as long as that process.\n"
    "\n"
    "Options:\n";

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string LeasesJson(const std::string& owner, const std::vector<PortLease>& leases) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  if (!owner.empty()) {
    w.Key("owner");
    w.String(owner.c_str());
    w.Key("ports");
    w.StartObject();
    for (const auto& l : leases) {
      w.Key(l.name.c_str());
      w.Int(l.first);
    }
    w.EndObject();
  }
  w.Key("leases");
  w.StartArray();
  for (const auto& l : leases) {
    w.StartObject();
    w.Key("name"); w.String(l.name.c_str());
    w.Key("first"); w.Int(l.first);
    w.Key("count"); w.Int(l.count);
    w.Key("owner"); w.String(l.owner.id.c_str());
    w.Key("pid"); w.Int(l.owner.pid);
    w.Key("boot_id"); w.String(l.owner.boot_id.c_str());
    w.Key("time"); w.Int64(l.owner.time);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

std::string LeasesTable(const std::vector<PortLease>& leases) {
  std::ostringstream o;
  o << "PORTS        NAME                 OWNER                PID      SINCE\n";
  for (const auto& l : leases) {
    std::string ports = std::to_string(l.first);
    if (l.count > 1) ports += "-" + std::to_string(l.first + l.count - 1);
    char since[32] = "?";
    const std::time_t t = static_cast<std::time_t>(l.owner.time);
    std::tm tm{};
    if (::localtime_r(&t, &tm)) std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%S", &tm);
    char line[256];
    std::snprintf(line, sizeof line, "%-12s %-20s %-20s %-8d %s\n", ports.c_str(), l.name.c_str(),
                  l.owner.id.c_str(), static_cast<int>(l.owner.pid), since);
    o << line;
  }
  return o.str();
}

// The command line of `ixctl ports SUB`. Invariant, once parsed: sub is
// lease, release or list; owner is set for lease and release.
struct PortsArgs {
  std::string sub, owner, names, range = "20000-29999", resv;
  bool resv_given = false;  // --resv-ports, even empty: $SLURM_STEP_RESV_PORTS is not read
  std::vector<std::string> blocks;
  PortBrokerConfig config;
  int pid = static_cast<int>(::getppid());
  bool json = false;
};

int Misuse(const PortsArgs& a, const std::string& message) {
  std::cerr << "ixctl ports " << a.sub << ": " << message << "\n";
  return 2;
}

int Failed(const PortsArgs& a, const std::string& message) {
  std::cerr << "ixctl ports " << a.sub << ": " << message << "\n";
  return 1;
}

// The subcommand and its options; the exit status when the command is done
// (help or misuse), nullopt to go on.
std::optional<int> ParsePortsArgs(const std::vector<std::string>& args, PortsArgs& a) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kUsage << "  (run with a subcommand and --help for its options)\n";
    return args.empty() ? 2 : 0;
  }
  a.sub = args[0];
  if (a.sub != "lease" && a.sub != "release" && a.sub != "list") {
    std::cerr << "ixctl ports: unknown subcommand '" << a.sub << "'; subcommands: lease, release, list\n";
    return 2;
  }
  po::options_description opts;
  opts.add_options()
      ("owner", po::value(&a.owner)->value_name("ID"), "lease owner, e.g. the step JOB.STEP")
      ("names", po::value(&a.names)->value_name("A,B,..."), "names of single ports to lease (lease)")
      ("block", po::value(&a.blocks)->value_name("NAME=K")->composing(), "a contiguous block of K ports (lease; repeatable)")
      ("range", po::value(&a.range)->value_name("LO-HI"), "port range (default 20000-29999; must not overlap the ephemeral range)")
      ("resv-ports", po::value(&a.resv)->value_name("LIST"), "ports Slurm reserved for the step, tried first (default $SLURM_STEP_RESV_PORTS)")
      ("pid", po::value(&a.pid)->value_name("PID"), "process the lease lives as long as (lease; default: ixctl's parent)")
      ("lease-dir", po::value(&a.config.lease_dir)->value_name("DIR"), "lease directory (default /run/inferencex/ports)")
      ("json", po::bool_switch(&a.json), "print JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  if (auto rc = ParseCommandOptions("ports " + a.sub, kUsage, opts, {args.begin() + 1, args.end()}, vm)) return rc;
  a.resv_given = vm.count("resv-ports") != 0;
  Result<PortRange> r = ParsePortRange(a.range);
  if (!r) return Misuse(a, "--range: " + r.error().message);
  a.config.range = r.value();
  if ((a.sub == "lease" || a.sub == "release") && a.owner.empty()) return Misuse(a, "--owner is required");
  return std::nullopt;
}

// The ports `ixctl ports lease` asks for: --names, one port each, and
// --block NAME=K. The exit status on misuse, nullopt when there are some.
std::optional<int> WantedPorts(const PortsArgs& a, std::vector<PortWant>& wants) {
  for (const auto& n : SplitComma(a.names)) wants.push_back({n, 1});
  for (const auto& b : a.blocks) {
    const size_t eq = b.find('=');
    int k = 0;
    try {
      k = eq == std::string::npos ? 0 : std::stoi(b.substr(eq + 1));
    } catch (const std::exception&) {
      k = 0;
    }
    if (eq == std::string::npos || eq == 0 || k < 1) {
      return Misuse(a, "--block expects NAME=K with K >= 1, got '" + b + "'");
    }
    wants.push_back({b.substr(0, eq), k});
  }
  if (wants.empty()) return Misuse(a, "give --names and/or --block");
  return std::nullopt;
}

int Lease(PortBroker& broker, PortsArgs& a, const std::vector<PortWant>& wants) {
  if (!a.resv_given) {
    if (const char* env = std::getenv("SLURM_STEP_RESV_PORTS")) a.resv = env;
  }
  std::vector<int> reserved;
  if (!a.resv.empty()) {
    Result<std::vector<int>> p = ParsePortList(a.resv);
    if (!p) return Misuse(a, "reserved ports: " + p.error().message);
    reserved = p.value();
  }
  Result<std::vector<PortLease>> got = broker.Lease(MakeOwner(a.owner, static_cast<pid_t>(a.pid)), wants, reserved);
  if (!got) return Failed(a, got.error().message);
  if (a.json) {
    std::cout << LeasesJson(a.owner, got.value()) << "\n";
    return 0;
  }
  for (const auto& l : got.value()) {
    std::cout << l.name << "=" << l.first;
    if (l.count > 1) std::cout << "-" << (l.first + l.count - 1);
    std::cout << "\n";
  }
  return 0;
}

int Release(PortBroker& broker, const PortsArgs& a) {
  Result<int> n = broker.Release(a.owner);
  if (!n) return Failed(a, n.error().message);
  std::cout << "released " << n.value() << " lease(s) of " << a.owner << "\n";
  return 0;
}

int List(PortBroker& broker, const PortsArgs& a) {
  Result<std::vector<PortLease>> all = broker.List();
  if (!all) return Failed(a, all.error().message);
  std::cout << (a.json ? LeasesJson("", all.value()) + "\n" : LeasesTable(all.value()));
  return 0;
}

}  // namespace

int RunPortsCommand(const std::vector<std::string>& args) {
  PortsArgs a;
  if (auto rc = ParsePortsArgs(args, a)) return *rc;
  std::vector<PortWant> wants;
  if (a.sub == "lease") {
    if (auto rc = WantedPorts(a, wants)) return *rc;
  }
  BindProber prober;
  ProcessLiveness liveness;
  Result<PortBroker> broker = PortBroker::Open(a.config, prober, liveness);
  if (!broker) return Failed(a, broker.error().message);
  if (a.sub == "lease") return Lease(broker.value(), a, wants);
  if (a.sub == "release") return Release(broker.value(), a);
  return List(broker.value(), a);
}

}  // namespace ix
