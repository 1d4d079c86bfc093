#include "spank_plugin/slurm_api.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace ix {
namespace {

template <typename F>
F Lookup(const char* symbol) {
  return reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, symbol));
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
  using LoadNode = int (*)(node_info_msg_t**, char*, uint16_t);
  using FreeNodes = void (*)(node_info_msg_t*);
  using StrError = char* (*)(int);
  const auto load = Lookup<LoadNode>("slurm_load_node_single");
  const auto release = Lookup<FreeNodes>("slurm_free_node_info_msg");
  const auto strerror_fn = Lookup<StrError>("slurm_strerror");
  if (!load || !release) return Error{"libslurm's slurm_load_node_single is not loaded in this process"};
  node_info_msg_t* msg = nullptr;
  std::string copy = name;
  if (load(&msg, copy.data(), SHOW_ALL) != SLURM_SUCCESS || !msg) {
    const int err = errno;
    return Error{"cannot ask slurmctld for node " + name + "'s address: " +
                 (strerror_fn ? std::string(strerror_fn(err)) : std::string(std::strerror(err)))};
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
  using KillStep = int (*)(uint32_t, uint32_t, uint16_t);
  const auto kill_step = Lookup<KillStep>("slurm_kill_job_step");
  if (!kill_step) return Error{"libslurm's slurm_kill_job_step is not loaded in this process"};
  if (kill_step(job, step, static_cast<uint16_t>(signal)) != SLURM_SUCCESS) {
    return Error{"cannot signal step " + std::to_string(job) + "." + std::to_string(step) + ": " + std::strerror(errno)};
  }
  return Ok{};
}

}  // namespace ix
