// DlSymbol: a symbol of a library loaded with dlopen as a function pointer,
// without the cast ISO C++ frowns on (memcpy of the pointer's bytes); null
// when the library lacks it. For NVML, which is loaded at run time where
// the driver is (core/node/topology_nvml.cc, node_agent/nvml_sampler.cc).
#pragma once

#include <dlfcn.h>

#include <cstring>

namespace ix {

template <class Fn>
Fn DlSymbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  Fn fn = nullptr;
  static_assert(sizeof fn == sizeof p);
  std::memcpy(&fn, &p, sizeof fn);
  return fn;
}

}  // namespace ix
