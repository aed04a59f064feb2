#pragma once
/// @file topology.hpp
/// Machine discovery through hwloc (docs/scaling.md): packages (sockets), NUMA domains,
/// cores, PUs, GPUs (PCI 3-D/display controllers of NVIDIA or AMD, and CUDA/OpenCL OS
/// devices where hwloc's plugins see them) and memory; the process's and the calling
/// thread's CPU binding, and binding the calling thread. CPU sets are lists of
/// operating-system PU indices in ascending order (as taskset and hwloc cpusets use).
/// Pinning OpenMP teams and choosing a rank's CPU set are in affinity.hpp.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace topokpm::topology {

/// One GPU as hwloc sees it.
struct GpuInfo {
    std::string name;      ///< "NVIDIA 10de:2330" (PCI vendor:device) or the OS device name
    std::string pci_bus;   ///< "0000:19:00.0"
    int numa_node = -1;    ///< logical index of the nearest NUMA domain, -1 unknown
};

struct MachineInfo {
    int packages = 0;                 ///< sockets (0 where a VM reports none)
    int numa_nodes = 1;               ///< at least 1
    int cores = 1;                    ///< at least 1 (PUs where no core objects exist)
    int pus = 1;                      ///< hardware threads
    std::vector<GpuInfo> gpus;        ///< empty without GPUs
    std::uint64_t memory_bytes = 0;   ///< hwloc's total (less than `free` reports)
    int num_gpus() const { return static_cast<int>(gpus.size()); }
    /// "1 package, 1 NUMA node, 2 cores, 2 PUs, 0 GPUs, 5.3 GiB"
    std::string summary() const;
};

/// The loaded hwloc topology of this machine (I/O devices included, for the GPUs).
/// Not copyable. Reading is thread-safe; binding changes only the calling thread.
class Topology {
public:
    /// Throws Error when hwloc cannot load the topology.
    Topology();
    ~Topology();
    Topology(const Topology&) = delete;
    Topology& operator=(const Topology&) = delete;

    const MachineInfo& info() const { return info_; }

    /// Every PU this process may use (the topology's cpuset: hwloc already leaves out
    /// PUs outside the cgroup/cpuset a batch system gives the job).
    std::vector<unsigned> all_pus() const;
    /// The PUs of each core, cores in hwloc's logical order (locality order).
    std::vector<std::vector<unsigned>> cores() const;
    /// Logical index of the NUMA domain holding PU `pu`; 0 when hwloc knows none.
    int numa_node_of(unsigned pu) const;
    /// How many NUMA domains the PUs of `pus` touch.
    int numa_nodes_spanned(const std::vector<unsigned>& pus) const;

    /// The process binding (hwloc_get_cpubind, HWLOC_CPUBIND_PROCESS): what mpirun,
    /// taskset or the batch system gave this process.
    std::vector<unsigned> process_binding() const;
    /// The calling thread's binding (hwloc_get_cpubind, HWLOC_CPUBIND_THREAD).
    std::vector<unsigned> thread_binding() const;
    /// Binds the calling thread to `pus` and returns the binding read back. Throws Error
    /// for an empty set or when the system refuses (PUs outside the allowed set).
    std::vector<unsigned> bind_thread(const std::vector<unsigned>& pus) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    MachineInfo info_;
};

/// "0-3,8,10-11" style text of a PU list.
std::string format_pus(const std::vector<unsigned>& pus);

}  // namespace topokpm::topology
