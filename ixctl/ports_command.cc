#include "ixctl/ports_command.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <ctime>
#include <iostream>
#include <sstream>

#include "core/node/ports.h"

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

}  // namespace

int RunPortsCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kUsage << "  (run with a subcommand and --help for its options)\n";
    return args.empty() ? 2 : 0;
  }
  const std::string sub = args[0];
  if (sub != "lease" && sub != "release" && sub != "list") {
    std::cerr << "ixctl ports: unknown subcommand '" << sub << "'; subcommands: lease, release, list\n";
    return 2;
  }
  std::string owner, names, range = "20000-29999", resv;
  std::vector<std::string> blocks;
  PortBrokerConfig config;
  int pid = static_cast<int>(::getppid());
  po::options_description opts;
  opts.add_options()
      ("owner", po::value(&owner)->value_name("ID"), "lease owner, e.g. the step JOB.STEP")
      ("names", po::value(&names)->value_name("A,B,..."), "names of single ports to lease (lease)")
      ("block", po::value(&blocks)->value_name("NAME=K")->composing(), "a contiguous block of K ports (lease; repeatable)")
      ("range", po::value(&range)->value_name("LO-HI"), "port range (default 20000-29999; must not overlap the ephemeral range)")
      ("resv-ports", po::value(&resv)->value_name("LIST"), "ports Slurm reserved for the step, tried first (default $SLURM_STEP_RESV_PORTS)")
      ("pid", po::value(&pid)->value_name("PID"), "process the lease lives as long as (lease; default: ixctl's parent)")
      ("lease-dir", po::value(&config.lease_dir)->value_name("DIR"), "lease directory (default /run/inferencex/ports)")
      ("json", po::bool_switch(), "print JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(std::vector<std::string>(args.begin() + 1, args.end())).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "ixctl ports " << sub << ": " << e.what() << "\nTry 'ixctl ports " << sub << " --help'.\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << kUsage << opts;
    return 0;
  }
  const bool json = vm["json"].as<bool>();
  Result<PortRange> r = ParsePortRange(range);
  if (!r) {
    std::cerr << "ixctl ports " << sub << ": --range: " << r.error().message << "\n";
    return 2;
  }
  config.range = r.value();
  std::vector<PortWant> wants;
  if (sub == "lease" || sub == "release") {
    if (owner.empty()) {
      std::cerr << "ixctl ports " << sub << ": --owner is required\n";
      return 2;
    }
  }
  if (sub == "lease") {
    for (const auto& n : SplitComma(names)) wants.push_back({n, 1});
    for (const auto& b : blocks) {
      const size_t eq = b.find('=');
      int k = 0;
      try {
        k = eq == std::string::npos ? 0 : std::stoi(b.substr(eq + 1));
      } catch (const std::exception&) {
        k = 0;
      }
      if (eq == std::string::npos || eq == 0 || k < 1) {
        std::cerr << "ixctl ports lease: --block expects NAME=K with K >= 1, got '" << b << "'\n";
        return 2;
      }
      wants.push_back({b.substr(0, eq), k});
    }
    if (wants.empty()) {
      std::cerr << "ixctl ports lease: give --names and/or --block\n";
      return 2;
    }
  }
  BindProber prober;
  ProcessLiveness liveness;
  Result<PortBroker> broker = PortBroker::Open(config, prober, liveness);
  if (!broker) {
    std::cerr << "ixctl ports " << sub << ": " << broker.error().message << "\n";
    return 1;
  }
  if (sub == "lease") {
    if (!vm.count("resv-ports")) {
      if (const char* env = std::getenv("SLURM_STEP_RESV_PORTS")) resv = env;
    }
    std::vector<int> reserved;
    if (!resv.empty()) {
      Result<std::vector<int>> p = ParsePortList(resv);
      if (!p) {
        std::cerr << "ixctl ports lease: reserved ports: " << p.error().message << "\n";
        return 2;
      }
      reserved = p.value();
    }
    Result<std::vector<PortLease>> got =
        broker.value().Lease(MakeOwner(owner, static_cast<pid_t>(pid)), wants, reserved);
    if (!got) {
      std::cerr << "ixctl ports lease: " << got.error().message << "\n";
      return 1;
    }
    if (json) {
      std::cout << LeasesJson(owner, got.value()) << "\n";
    } else {
      for (const auto& l : got.value()) {
        std::cout << l.name << "=" << l.first;
        if (l.count > 1) std::cout << "-" << (l.first + l.count - 1);
        std::cout << "\n";
      }
    }
    return 0;
  }
  if (sub == "release") {
    Result<int> n = broker.value().Release(owner);
    if (!n) {
      std::cerr << "ixctl ports release: " << n.error().message << "\n";
      return 1;
    }
    std::cout << "released " << n.value() << " lease(s) of " << owner << "\n";
    return 0;
  }
  Result<std::vector<PortLease>> all = broker.value().List();
  if (!all) {
    std::cerr << "ixctl ports list: " << all.error().message << "\n";
    return 1;
  }
  std::cout << (json ? LeasesJson("", all.value()) + "\n" : LeasesTable(all.value()));
  return 0;
}

}  // namespace ix
