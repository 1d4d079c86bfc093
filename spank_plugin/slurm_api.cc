#include "spank_plugin/slurm_api.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "core/base/dl_symbol.h"

// The prototypes this file relies on, per Slurm release, as SchedMD's
// slurm/slurm.h declares them. The plugin must be built against the release
// it runs under, and a call through a wrong signature is not a compile error
// but a crash inside slurmstepd (25.11 made slurm_kill_job_step's first
// argument a pointer), so a header that differs from these stops the build.
namespace ix::slurm_prototypes {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
using KillJobStep = int (*)(slurm_step_id_t* step_id, uint16_t signal, uint16_t flags);
#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
using KillJobStep = int (*)(uint32_t job_id, uint32_t step_id, uint16_t signal, uint16_t flags);
#else
using KillJobStep = int (*)(uint32_t job_id, uint32_t step_id, uint16_t signal);
#endif
using LoadNodeSingle = int (*)(node_info_msg_t** resp, char* node_name, uint16_t show_flags);
using FreeNodeInfoMsg = void (*)(node_info_msg_t* msg);
using StrError = char* (*)(int errnum);
static_assert(std::is_same_v<decltype(&::slurm_kill_job_step), KillJobStep>,
              "slurm_kill_job_step in this slurm.h is not the one expected for its SLURM_VERSION_NUMBER");
static_assert(std::is_same_v<decltype(&::slurm_load_node_single), LoadNodeSingle>,
              "slurm_load_node_single in this slurm.h is not the one the plugin calls");
static_assert(std::is_same_v<decltype(&::slurm_free_node_info_msg), FreeNodeInfoMsg>,
              "slurm_free_node_info_msg in this slurm.h is not the one the plugin calls");
static_assert(std::is_same_v<decltype(&::slurm_strerror), StrError>,
              "slurm_strerror in this slurm.h is not the one the plugin calls");
// The node fields read below: strings in every release.
static_assert(std::is_same_v<decltype(node_info_t::name), char*> && std::is_same_v<decltype(node_info_t::node_addr), char*>);
static_assert(std::is_same_v<decltype(node_info_msg_t::record_count), uint32_t>);
}  // namespace ix::slurm_prototypes

namespace ix {
namespace {

// libslurm's function `name`, typed with the prototype of the slurm.h the
// plugin is compiled against. It is looked up in the process (slurmstepd and
// srun have libslurmfull loaded) instead of linked: a libslurm of the
// plugin's own would be a second copy of Slurm's internals in slurmstepd.
#define IX_SLURM_FUNCTION(name) DlSymbol<decltype(&::name)>(RTLD_DEFAULT, #name)

// Slurm's text for a Slurm or system error number (Slurm's own numbers,
// 2000 and up, are "Unknown error" to strerror).
std::string SlurmErrorText(int err) {
  const auto text = IX_SLURM_FUNCTION(slurm_strerror);
  return text ? std::string(text(err)) : std::string(std::strerror(err));
}

// `host` as a numeric address: as is when it is one, else its first IPv4
// address (then IPv6) from the resolver.
Result<std::string> Numeric(const std::string& host, const std::string& node) {
  in_addr a4{};
  in6_addr a6{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1) return host;
  for (int family : {AF_INET, AF_INET6}) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* src = family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr)
                                        : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr);
    const bool ok = ::inet_ntop(family, src, text, sizeof text) != nullptr;
    ::freeaddrinfo(res);
    if (ok) return std::string(text);
  }
  return Error{"node " + node + ": its address '" + host + "' does not resolve"};
}

}  // namespace

Result<std::string> SlurmNodeAddress(const std::string& name) {
  const auto load = IX_SLURM_FUNCTION(slurm_load_node_single);
  const auto release = IX_SLURM_FUNCTION(slurm_free_node_info_msg);
  if (!load || !release) return Error{"libslurm's slurm_load_node_single is not loaded in this process"};
  node_info_msg_t* msg = nullptr;
  std::string copy = name;
  if (load(&msg, copy.data(), SHOW_ALL) != SLURM_SUCCESS || !msg) {
    const int err = errno;
    return Error{"cannot ask slurmctld for node " + name + "'s address: " + SlurmErrorText(err)};
  }
  std::string addr;
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const node_info_t& n = msg->node_array[i];
    if (n.name && name == n.name) addr = n.node_addr && *n.node_addr ? n.node_addr : n.name;
  }
  release(msg);
  if (addr.empty()) return Error{"slurmctld does not know node " + name};
  return Numeric(addr, name);
}

Status SlurmSignalStep(uint32_t job, uint32_t step, int signal) {
  const auto kill_step = IX_SLURM_FUNCTION(slurm_kill_job_step);
  if (!kill_step) return Error{"libslurm's slurm_kill_job_step is not loaded in this process"};
  const auto sig = static_cast<uint16_t>(signal);
  // flags 0: signal the step's tasks, as `scancel --signal` does for a step.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
  slurm_step_id_t id{};  // sluid 0, as Slurm's own slurm_pmi_kill_job_step sends it
  id.job_id = job;
  id.step_id = step;
  id.step_het_comp = NO_VAL;
  const int rc = kill_step(&id, sig, 0);
#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
  const int rc = kill_step(job, step, sig, 0);
#else
  const int rc = kill_step(job, step, sig);
#endif
  if (rc != SLURM_SUCCESS) {
    const int err = errno;
    return Error{"cannot signal step " + std::to_string(job) + "." + std::to_string(step) + ": " + SlurmErrorText(err)};
  }
  return Ok{};
}

}  // namespace ix
