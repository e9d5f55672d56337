// Which CPUs each GPU's jobs run on: the cores local to the GPU (its PCI
// device's NUMA node), shared out in whole cores among the node's GPUs that
// hang off that same NUMA node.
//
// Why: a judge and its children take turns on the CPU while they time a GPU
// kernel (every launch is host work), and on a node grading one job per GPU
// the jobs' processes would otherwise float over every core: two jobs'
// judges on one core, or a judge on the far socket from its GPU, move a
// timed median. A share is the same whichever worker process asks (it is
// computed over every GPU the driver lists, not over one worker's --gpus), so
// several workers on one node never overlap either.
//
// Read from the host: /proc/driver/nvidia/gpus/<PCI address>/information
// ("Device Minor: N", N being the index --gpus and /dev/nvidiaN use),
// /sys/bus/pci/devices/<PCI address>/local_cpulist, and
// /sys/devices/system/cpu/cpuN/topology/thread_siblings_list (hyperthreads
// of one core always go to the same GPU).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

struct GpuCpuShares {
  std::map<int, std::vector<int>> cpus;  // GPU index -> its CPUs, ascending
  std::vector<std::string> notes;        // where a share had to be wider than its own cores
};

// The shares of every GPU the driver lists, within `allowed` (the CPUs this
// process may use, e.g. sched_getaffinity's). `root` prefixes /proc and /sys
// (tests give a made-up tree). An error when the driver's list or a GPU's
// CPUs cannot be read: then nothing is pinned, and the caller says so.
Result<GpuCpuShares> gpu_cpu_shares(const std::vector<int>& allowed, const std::string& root = "");

// The CPUs this process may run on (sched_getaffinity).
std::vector<int> allowed_cpus();

}  // namespace kzoo::runner
