#pragma once
/// @file affinity.hpp
/// Where a rank and its OpenMP threads run (docs/scaling.md; seed 000 §4.1):
///
/// - the recommended layout: one rank per NUMA domain plus one per GPU (GHOST's
///   "NUMA domains + GPUs"), so no rank's memory spans a socket interconnect;
/// - each rank of a node gets its own disjoint CPU set: whole cores split as evenly as
///   possible, in hwloc's locality order, except that a rank driving a GPU beside CPU ranks
///   occupies one core, as GHOST's GPU process does, and the CPU ranks share the rest. A
///   binding given from outside (mpirun --bind-to, taskset, the batch system) is
///   respected: when the process is bound to less than the whole machine, that binding is
///   the rank's set;
/// - OpenMP thread t of a rank is pinned to one PU of the set, one per core first
///   (SMT siblings only once every core has a thread), and the binding is read back;
/// - PERFWARNINGs for layouts that cost bandwidth: a rank spanning NUMA domains, more
///   ranks than cores, more threads than the PUs of the rank's set, fewer ranks than
///   the suggested layout.
///
/// The choosing functions are pure (lists in, lists out) and testable on any machine.

#include <string>
#include <vector>

#include "runtime/topology/topology.hpp"

namespace topokpm::topology {

/// GHOST's suggestion: one CPU rank per NUMA domain, one rank per GPU.
struct RecommendedLayout {
    int cpu_ranks = 1;  ///< ranks per node that compute on the CPU (NUMA domains)
    int gpu_ranks = 0;  ///< ranks per node that drive a GPU
    int ranks_per_node() const { return cpu_ranks + gpu_ranks; }
    /// "3 ranks per node (2 NUMA domains + 1 GPU)"
    std::string describe() const;
};
RecommendedLayout recommended_layout(const MachineInfo& machine);

/// The PUs of `cores` (PU lists per core, locality order) that lie in `allowed`; cores
/// with no allowed PU are dropped.
std::vector<std::vector<unsigned>> cores_within(const std::vector<std::vector<unsigned>>& cores,
                                                const std::vector<unsigned>& allowed);

/// CPU set of node-local rank `local_rank` of `local_ranks`: the cores of `cores`
/// (already restricted to what the node allows) cut into `local_ranks` contiguous parts,
/// sizes differing by at most one core, earlier ranks taking the larger parts. With more
/// ranks than cores the PUs are cut instead; with more ranks than PUs, rank r gets PU
/// r mod PUs (shared: layout_warnings() flags it). Sorted ascending.
std::vector<unsigned> split_cpuset(const std::vector<std::vector<unsigned>>& cores, int local_rank, int local_ranks);

/// Every node-local rank's CPU set (index = local rank) when the first `gpu_ranks` of the
/// `local_ranks` ranks drive a GPU each and the others compute on the CPU (seed 000 §4.1:
/// the process that drives a GPU occupies one core of the host, on the GPU's socket, and
/// the CPU processes share the rest). GPU rank g takes one core: the last free one of NUMA
/// domain `gpu_domains[g]` (missing or -1: domain g mod D), or the last free core when that
/// domain has none. The CPU ranks split the free cores: when their count C is a multiple of
/// the D domains and each domain has at least C / D free cores, CPU rank c takes part
/// c mod (C / D) of domain c / (C / D)'s free cores (so no CPU rank spans a domain), else
/// part c of all free cores; parts as split_cpuset() cuts them. `core_domains[i]` is the
/// NUMA domain of cores[i], 0 .. D-1 (empty: one domain). With no GPU rank, no CPU rank, or
/// fewer cores than ranks, every rank's split_cpuset(). Sets sorted ascending.
/// Throws DimensionMismatch when gpu_ranks is not in [0, local_ranks] or the domain list's
/// size is neither 0 nor cores.size().
std::vector<std::vector<unsigned>> node_cpusets(const std::vector<std::vector<unsigned>>& cores,
                                                const std::vector<int>& core_domains, int local_ranks,
                                                int gpu_ranks, const std::vector<int>& gpu_domains);

/// The CPU set rank `local_rank` of `local_ranks` on this node should use, the first
/// `gpu_ranks` of them driving a GPU. If the process binding is narrower than all_pus()
/// (bound from outside), that binding; otherwise node_cpusets() of the machine's cores,
/// their NUMA domains and its GPUs' (MachineInfo::gpus in PCI order, taken as CUDA's
/// device order, which it is for identical GPUs; CUDA_VISIBLE_DEVICES is not consulted).
std::vector<unsigned> rank_cpuset(const Topology& topology, int local_rank, int local_ranks, int gpu_ranks = 0);

/// The PU for each of `threads` threads on the cores `cores_in_set`: thread t goes to
/// core t mod C, taking that core's (t / C)-th PU (wrapping when a core has fewer):
/// one thread per core before any SMT sibling, threads beyond the PUs share.
std::vector<unsigned> thread_pus(const std::vector<std::vector<unsigned>>& cores_in_set, int threads);

/// Pins the `threads` threads of an OpenMP parallel region (num_threads(threads)) to
/// thread_pus(cores of `cpuset`, threads) and sets omp_set_num_threads(threads) so later
/// regions of the calling thread reuse the same, pinned team (GOMP and the LLVM runtime
/// keep their threads). Returns each thread's binding read back (index = thread number).
/// Throws Error when `cpuset` is empty, threads < 1, or binding fails.
std::vector<std::vector<unsigned>> pin_openmp_threads(const Topology& topology, const std::vector<unsigned>& cpuset,
                                                      int threads);

/// What layout_warnings() needs to know about one rank.
struct LayoutFacts {
    int ranks_per_node = 1;
    int threads = 1;           ///< OpenMP threads of this rank
    int cpuset_pus = 1;        ///< PUs in this rank's CPU set
    int cpuset_numa_nodes = 1; ///< NUMA domains this rank's CPU set touches
};

/// The message for log::perf_warning when `threads` OpenMP threads run on the `pus` PUs of
/// `whose` CPU set ("this rank's", "this process's"), "" when threads <= pus. Threads that
/// share PUs wait at every barrier for one that is descheduled, and a spinning waiter holds
/// the PU the other needs (docs/cluster.md: small barrier-heavy runs 20-200x slower).
std::string threads_warning(int threads, int pus, const std::string& whose);

/// Messages for log::perf_warning, empty for a sound layout: a CPU set spanning NUMA
/// domains, more ranks than cores, more threads than the PUs of the rank's set, fewer
/// ranks per node than the recommended layout (an idle GPU or a rank spanning domains).
std::vector<std::string> layout_warnings(const MachineInfo& machine, const LayoutFacts& facts);

/// layout_warnings() printed through log::perf_warning; returns how many were printed.
int warn_about_layout(const MachineInfo& machine, const LayoutFacts& facts);

}  // namespace topokpm::topology
