#include "runtime/topology/affinity.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>

#include "runtime/base/error.hpp"
#include "runtime/base/log.hpp"

namespace topokpm::topology {

namespace {

std::string plural(int n, const char* word)
{
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

std::string RecommendedLayout::describe() const
{
    return detail::concat(plural(ranks_per_node(), "rank"), " per node (", plural(cpu_ranks, "NUMA domain"), " + ",
                          plural(gpu_ranks, "GPU"), ")");
}

RecommendedLayout recommended_layout(const MachineInfo& machine)
{
    RecommendedLayout r;
    r.cpu_ranks = std::max(1, machine.numa_nodes);
    r.gpu_ranks = machine.num_gpus();
    return r;
}

std::vector<std::vector<unsigned>> cores_within(const std::vector<std::vector<unsigned>>& cores,
                                                const std::vector<unsigned>& allowed)
{
    std::vector<std::vector<unsigned>> out;
    for (const auto& core : cores) {
        std::vector<unsigned> kept;
        for (unsigned pu : core)
            if (std::binary_search(allowed.begin(), allowed.end(), pu)) kept.push_back(pu);
        if (!kept.empty()) out.push_back(std::move(kept));
    }
    return out;
}

std::vector<unsigned> split_cpuset(const std::vector<std::vector<unsigned>>& cores, int local_rank, int local_ranks)
{
    TOPOKPM_REQUIRE(local_ranks >= 1 && local_rank >= 0 && local_rank < local_ranks, "local rank ", local_rank,
                    " of ", local_ranks);
    TOPOKPM_REQUIRE(!cores.empty(), "no cores to split");
    // Contiguous parts of `items`, sizes differing by at most one, larger parts first.
    auto part = [&](std::size_t items) {
        const std::size_t n = static_cast<std::size_t>(local_ranks), r = static_cast<std::size_t>(local_rank);
        const std::size_t base = items / n, extra = items % n;
        const std::size_t begin = r * base + std::min(r, extra);
        return std::make_pair(begin, begin + base + (r < extra ? 1 : 0));
    };
    std::vector<unsigned> set;
    if (static_cast<std::size_t>(local_ranks) <= cores.size()) {
        const auto [b, e] = part(cores.size());
        for (std::size_t c = b; c < e; ++c) set.insert(set.end(), cores[c].begin(), cores[c].end());
    } else {
        std::vector<unsigned> pus;
        for (const auto& core : cores) pus.insert(pus.end(), core.begin(), core.end());
        if (static_cast<std::size_t>(local_ranks) <= pus.size()) {
            const auto [b, e] = part(pus.size());
            set.assign(pus.begin() + static_cast<std::ptrdiff_t>(b), pus.begin() + static_cast<std::ptrdiff_t>(e));
        } else {
            set.push_back(pus[static_cast<std::size_t>(local_rank) % pus.size()]);
        }
    }
    std::sort(set.begin(), set.end());
    return set;
}

std::vector<std::vector<unsigned>> node_cpusets(const std::vector<std::vector<unsigned>>& cores,
                                                const std::vector<int>& core_domains, int local_ranks,
                                                int gpu_ranks, const std::vector<int>& gpu_domains)
{
    TOPOKPM_REQUIRE(gpu_ranks >= 0 && gpu_ranks <= local_ranks, "GPU ranks ", gpu_ranks, " of ", local_ranks);
    TOPOKPM_REQUIRE(core_domains.empty() || core_domains.size() == cores.size(), "NUMA domains of ",
                    core_domains.size(), " cores for ", cores.size());
    std::vector<std::vector<unsigned>> sets(static_cast<std::size_t>(local_ranks));
    const int cpu_ranks = local_ranks - gpu_ranks;
    if (gpu_ranks == 0 || cpu_ranks == 0 || cores.size() < static_cast<std::size_t>(local_ranks)) {
        for (int r = 0; r < local_ranks; ++r) sets[r] = split_cpuset(cores, r, local_ranks);
        return sets;
    }
    const auto domain_of = [&](std::size_t i) { return core_domains.empty() ? 0 : core_domains[i]; };
    int domains = 1;
    for (std::size_t i = 0; i < cores.size(); ++i) domains = std::max(domains, domain_of(i) + 1);
    std::vector<bool> taken(cores.size(), false);
    for (int g = 0; g < gpu_ranks; ++g) {
        const int want = static_cast<std::size_t>(g) < gpu_domains.size() && gpu_domains[g] >= 0 ? gpu_domains[g]
                                                                                                : g % domains;
        std::size_t pick = cores.size();
        for (int pass = 0; pass < 2 && pick == cores.size(); ++pass)
            for (std::size_t i = cores.size(); i-- > 0;)
                if (!taken[i] && (pass == 1 || domain_of(i) == want)) {
                    pick = i;
                    break;
                }
        taken[pick] = true;
        sets[g] = cores[pick];
        std::sort(sets[g].begin(), sets[g].end());
    }
    std::vector<std::vector<unsigned>> free_all;
    std::vector<std::vector<std::vector<unsigned>>> free_in(static_cast<std::size_t>(domains));
    for (std::size_t i = 0; i < cores.size(); ++i)
        if (!taken[i]) {
            free_all.push_back(cores[i]);
            free_in[domain_of(i)].push_back(cores[i]);
        }
    const int per_domain = cpu_ranks % domains == 0 ? cpu_ranks / domains : 0;
    const bool by_domain = per_domain > 0 && std::all_of(free_in.begin(), free_in.end(), [&](const auto& f) {
                               return f.size() >= static_cast<std::size_t>(per_domain);
                           });
    for (int c = 0; c < cpu_ranks; ++c)
        sets[gpu_ranks + c] = by_domain ? split_cpuset(free_in[c / per_domain], c % per_domain, per_domain)
                                        : split_cpuset(free_all, c, cpu_ranks);
    return sets;
}

std::vector<unsigned> rank_cpuset(const Topology& topology, int local_rank, int local_ranks, int gpu_ranks)
{
    const std::vector<unsigned> all = topology.all_pus();
    const std::vector<unsigned> bound = topology.process_binding();
    if (!bound.empty() && bound.size() < all.size()) return bound;  // given from outside: keep it
    TOPOKPM_REQUIRE(local_rank >= 0 && local_rank < local_ranks, "local rank ", local_rank, " of ", local_ranks);
    const std::vector<std::vector<unsigned>> cores = cores_within(topology.cores(), all);
    std::vector<int> core_domains, gpu_domains;
    for (const auto& core : cores) core_domains.push_back(topology.numa_node_of(core.front()));
    for (const GpuInfo& g : topology.info().gpus) gpu_domains.push_back(g.numa_node);
    return node_cpusets(cores, core_domains, local_ranks, gpu_ranks, gpu_domains)[local_rank];
}

std::vector<unsigned> thread_pus(const std::vector<std::vector<unsigned>>& cores_in_set, int threads)
{
    TOPOKPM_REQUIRE(!cores_in_set.empty(), "no cores to place threads on");
    TOPOKPM_REQUIRE(threads >= 1, "thread count ", threads, " must be at least 1");
    std::vector<unsigned> out;
    const std::size_t c = cores_in_set.size();
    for (std::size_t t = 0; t < static_cast<std::size_t>(threads); ++t) {
        const auto& core = cores_in_set[t % c];
        out.push_back(core[(t / c) % core.size()]);
    }
    return out;
}

std::vector<std::vector<unsigned>> pin_openmp_threads(const Topology& topology, const std::vector<unsigned>& cpuset,
                                                      int threads)
{
    if (cpuset.empty()) throw Error("cannot pin OpenMP threads to an empty CPU set");
    if (threads < 1) throw Error(detail::concat("cannot pin ", threads, " OpenMP threads"));
    const std::vector<unsigned> targets = thread_pus(cores_within(topology.cores(), cpuset), threads);
    std::vector<std::vector<unsigned>> bound(static_cast<std::size_t>(threads));
    std::vector<std::string> errors(bound.size());
    omp_set_num_threads(threads);
#pragma omp parallel num_threads(threads)
    {
        const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
        try {
            bound[t] = topology.bind_thread({targets[t]});
        } catch (const std::exception& e) {
            errors[t] = e.what();
        }
    }
    for (const std::string& e : errors)
        if (!e.empty()) throw Error(e);
    return bound;
}

std::string threads_warning(int threads, int pus, const std::string& whose)
{
    if (threads <= pus) return "";
    return detail::concat(threads, " OpenMP threads on the ", plural(pus, "PU"), " of ", whose,
                          " CPU set: threads share PUs; set OMP_NUM_THREADS (--threads) to at most ", pus,
                          ", or OMP_WAIT_POLICY=passive if they must share");
}

std::vector<std::string> layout_warnings(const MachineInfo& m, const LayoutFacts& f)
{
    std::vector<std::string> w;
    const RecommendedLayout rec = recommended_layout(m);
    if (f.cpuset_numa_nodes > 1)
        w.push_back(detail::concat("this rank's CPU set spans ", f.cpuset_numa_nodes,
                                   " NUMA domains: part of its memory traffic crosses the socket interconnect; "
                                   "suggested layout: ",
                                   rec.describe()));
    if (f.ranks_per_node > m.cores)
        w.push_back(detail::concat(f.ranks_per_node, " ranks per node on ", plural(m.cores, "core"),
                                   ": ranks share cores (oversubscribed)"));
    if (std::string t = threads_warning(f.threads, f.cpuset_pus, "this rank's"); !t.empty()) w.push_back(std::move(t));
    if (f.ranks_per_node < rec.ranks_per_node() && f.cpuset_numa_nodes <= 1)
        w.push_back(detail::concat("the number of ranks on this node (", f.ranks_per_node,
                                   ") is below the suggested ", rec.describe()));
    return w;
}

int warn_about_layout(const MachineInfo& machine, const LayoutFacts& facts)
{
    const std::vector<std::string> w = layout_warnings(machine, facts);
    for (const std::string& line : w) log::perf_warning(line);
    return static_cast<int>(w.size());
}

}  // namespace topokpm::topology
