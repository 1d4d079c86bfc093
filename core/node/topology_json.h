// The topology cache format: a lossless JSON serialization of ix::Topology,
// so a step loads the node's topology in microseconds instead of running
// hwloc (discovery, or parsing hwloc XML) on the critical path of step
// start-up. DiscoverTopologyCached and LoadTopologyXmlCached (topology.h)
// keep it in files; docs/PLACEMENT.md, "The topology cache".
//
// Not the `ixctl topology` rendering (TopologyToJson(topology, host, pretty)
// in topology.h, for people and scripts, with free memory and host facts):
// this one has every field of Topology except NumaNode::free_bytes, which
// changes while a node runs and is measured per step, so it is never written
// and a document that has it is refused.
//
// Invariant: for any Topology t that satisfies the invariants at the top of
// topology.h, TopologyFromCacheJson(TopologyToCacheJson(t)) equals t field by
// field (free_bytes unset).
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/node/topology.h"

namespace ix {

// Bumped whenever the format, or what Build (topology_hwloc.cc) makes of the same
// hardware, changes: a cache file of another version does not load, so it is
// rewritten from hwloc.
inline constexpr int kTopologyJsonVersion = 1;

// One line of JSON, `{"format":"ix-topology","version":1,"source":...,
// "numa_nodes":[{"os_index","total_bytes","cores","cpus":[...]}],
// "cores":[{"os_index","package","numa","cpus":[...]}],
// "gpus":[{"index","bus_id","vendor_id","device_id","class_id","numa"
// (null when unset),"local_numa":[...]}],"notes":[...]}`.
std::string TopologyToCacheJson(const Topology& topology);

// The reverse, for a document from TopologyToCacheJson (or one written by
// hand in that format). Every field is required and typed; fields the format
// does not have are refused; "format" and "version" are checked first. The invariants of topology.h
// are checked again, with those Build guarantees: numa_nodes sorted by
// os_index and unique; every core's CPUs sorted, unique and non-empty;
// cores sorted by first CPU; no CPU in two cores; a node's CPUs and `cores`
// are exactly those of the cores whose `numa` it is; a core's `numa` is -1
// or a node present; gpus[i].index == i, bus ids canonical ("0000:1b:00.0")
// and strictly in PCI bus order; local_numa sorted nodes with CPUs; `numa`,
// when set, a node with CPUs and the only one in local_numa. Bad input is an
// Error "`where`: field 'cores[3].cpus[1]' ... (expected ...)"; never throws,
// whatever the bytes.
Result<Topology> TopologyFromCacheJson(std::string_view text, const std::string& where);

}  // namespace ix
