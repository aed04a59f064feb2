#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

#include "runtime/base/error.hpp"
#include "runtime/topology/affinity.hpp"
#include "runtime/topology/topology.hpp"

using namespace topokpm::topology;

namespace {

/// Restores the calling thread's binding and the OpenMP team's when a test ends, so
/// later tests in this process see the full set again.
class BindingGuard {
public:
    explicit BindingGuard(const Topology& topo) : topo_(topo), before_(topo.thread_binding()) {}
    ~BindingGuard()
    {
        const std::vector<unsigned> all = topo_.process_binding();
#pragma omp parallel
        topo_.bind_thread(all);
        topo_.bind_thread(before_);
    }

private:
    const Topology& topo_;
    std::vector<unsigned> before_;
};

}  // namespace

TEST(Topology, CountsArePositiveAndConsistent)
{
    const Topology topo;
    const MachineInfo& m = topo.info();
    EXPECT_GE(m.numa_nodes, 1);
    EXPECT_GE(m.cores, m.numa_nodes);
    EXPECT_GE(m.pus, m.cores);
    EXPECT_GE(m.packages, 0);
    EXPECT_GT(m.memory_bytes, 0u);
    EXPECT_EQ(static_cast<int>(topo.all_pus().size()), m.pus);
    EXPECT_EQ(static_cast<int>(topo.cores().size()), m.cores);
    std::size_t pus_in_cores = 0;
    for (const auto& core : topo.cores()) pus_in_cores += core.size();
    EXPECT_EQ(pus_in_cores, static_cast<std::size_t>(m.pus));
    std::set<int> numa_of_pus;
    for (unsigned pu : topo.all_pus()) numa_of_pus.insert(topo.numa_node_of(pu));
    EXPECT_GE(*numa_of_pus.begin(), 0);
    EXPECT_LT(*numa_of_pus.rbegin(), m.numa_nodes);
    for (const GpuInfo& g : m.gpus) {
        EXPECT_FALSE(g.pci_bus.empty());
        EXPECT_LT(g.numa_node, m.numa_nodes);
    }
    EXPECT_FALSE(topo.process_binding().empty());
    std::printf("machine: %s; process bound to PUs %s; suggested %s\n", m.summary().c_str(),
                format_pus(topo.process_binding()).c_str(), recommended_layout(m).describe().c_str());
    for (const GpuInfo& g : m.gpus) std::printf("gpu %s at %s, NUMA %d\n", g.name.c_str(), g.pci_bus.c_str(), g.numa_node);
}

TEST(Topology, BindThreadAndReadBack)
{
    const Topology topo;
    BindingGuard guard(topo);
    for (unsigned pu : topo.process_binding()) {
        EXPECT_EQ(topo.bind_thread({pu}), std::vector<unsigned>{pu});
        EXPECT_EQ(topo.thread_binding(), std::vector<unsigned>{pu});
        EXPECT_EQ(topo.numa_nodes_spanned({pu}), 1);
        EXPECT_GE(topo.numa_node_of(pu), 0);
    }
    EXPECT_THROW(topo.bind_thread({}), topokpm::Error);
}

TEST(Topology, FormatPus) { EXPECT_EQ(format_pus({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11"); }

TEST(Affinity, SplitCpusetGivesDisjointWholeCores)
{
    // 4 cores with 2 SMT siblings each (PU i and i+4 share core i).
    const std::vector<std::vector<unsigned>> cores = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
    EXPECT_EQ(split_cpuset(cores, 0, 1), (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(split_cpuset(cores, 0, 2), (std::vector<unsigned>{0, 1, 4, 5}));
    EXPECT_EQ(split_cpuset(cores, 1, 2), (std::vector<unsigned>{2, 3, 6, 7}));
    // 3 ranks on 4 cores: 2 + 1 + 1 cores.
    EXPECT_EQ(split_cpuset(cores, 0, 3), (std::vector<unsigned>{0, 1, 4, 5}));
    EXPECT_EQ(split_cpuset(cores, 1, 3), (std::vector<unsigned>{2, 6}));
    EXPECT_EQ(split_cpuset(cores, 2, 3), (std::vector<unsigned>{3, 7}));
    // 8 ranks: one PU each (cut by PUs in core order); 9 ranks: shared, wraps.
    EXPECT_EQ(split_cpuset(cores, 1, 8), (std::vector<unsigned>{4}));
    EXPECT_EQ(split_cpuset(cores, 8, 9), (std::vector<unsigned>{0}));
    EXPECT_THROW(split_cpuset(cores, 2, 2), topokpm::DimensionMismatch);
}

TEST(Affinity, AGpuRankOccupiesOneCoreOfItsDomain)
{
    using Sets = std::vector<std::vector<unsigned>>;
    // 8 cores, one PU each, two NUMA domains of 4: cores 0-3 on domain 0, 4-7 on domain 1.
    Sets cores;
    for (unsigned c = 0; c < 8; ++c) cores.push_back({c});
    const std::vector<int> domains = {0, 0, 0, 0, 1, 1, 1, 1};
    // GHOST's layout (1 GPU on domain 1 + one CPU rank per domain): the GPU rank drives
    // from the last core of its domain, each CPU rank keeps to its domain.
    EXPECT_EQ(node_cpusets(cores, domains, 3, 1, {1}), (Sets{{7}, {0, 1, 2, 3}, {4, 5, 6}}));
    // GPU on domain 0, or its domain unknown (-1, or not listed: GPU g on domain g mod 2).
    EXPECT_EQ(node_cpusets(cores, domains, 3, 1, {0}), (Sets{{3}, {0, 1, 2}, {4, 5, 6, 7}}));
    EXPECT_EQ(node_cpusets(cores, domains, 3, 1, {-1}), node_cpusets(cores, domains, 3, 1, {0}));
    EXPECT_EQ(node_cpusets(cores, domains, 4, 2, {}), (Sets{{3}, {7}, {0, 1, 2}, {4, 5, 6}}));
    // One CPU rank for two domains: it takes every free core; three CPU ranks do not divide
    // into the domains, so the free cores are cut in locality order.
    EXPECT_EQ(node_cpusets(cores, domains, 2, 1, {1}), (Sets{{7}, {0, 1, 2, 3, 4, 5, 6}}));
    EXPECT_EQ(node_cpusets(cores, domains, 4, 1, {1}), (Sets{{7}, {0, 1, 2}, {3, 4}, {5, 6}}));
    // One domain, SMT siblings: the GPU rank takes the last whole core.
    const Sets smt = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
    EXPECT_EQ(node_cpusets(smt, {}, 2, 1, {}), (Sets{{3, 7}, {0, 1, 2, 4, 5, 6}}));
    // No GPU rank, only GPU ranks, or fewer cores than ranks: the even split.
    for (int gpus : {0, 2})
        EXPECT_EQ(node_cpusets(smt, {}, 2, gpus, {}), (Sets{{0, 1, 4, 5}, {2, 3, 6, 7}})) << gpus;
    EXPECT_EQ(node_cpusets(smt, {}, 5, 1, {})[4], split_cpuset(smt, 4, 5));
    // A domain without a free core for its GPU: the last free core anywhere.
    EXPECT_EQ(node_cpusets({{0}, {1}, {2}}, {0, 0, 1}, 3, 2, {1, 1}), (Sets{{2}, {1}, {0}}));
    EXPECT_THROW(node_cpusets(smt, {}, 2, 3, {}), topokpm::DimensionMismatch);
    EXPECT_THROW(node_cpusets(smt, {0, 1}, 2, 1, {}), topokpm::DimensionMismatch);
}

TEST(Affinity, ExternalCpusetIsRespected)
{
    const std::vector<std::vector<unsigned>> cores = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
    // A batch system gave PUs 1, 2, 5 only.
    const auto within = cores_within(cores, {1, 2, 5});
    EXPECT_EQ(within, (std::vector<std::vector<unsigned>>{{1, 5}, {2}}));
    EXPECT_EQ(split_cpuset(within, 0, 2), (std::vector<unsigned>{1, 5}));
    EXPECT_EQ(split_cpuset(within, 1, 2), (std::vector<unsigned>{2}));
}

TEST(Affinity, ThreadsGoToSeparateCoresFirst)
{
    const std::vector<std::vector<unsigned>> cores = {{0, 4}, {1, 5}};
    EXPECT_EQ(thread_pus(cores, 1), (std::vector<unsigned>{0}));
    EXPECT_EQ(thread_pus(cores, 2), (std::vector<unsigned>{0, 1}));
    EXPECT_EQ(thread_pus(cores, 4), (std::vector<unsigned>{0, 1, 4, 5}));
    EXPECT_EQ(thread_pus(cores, 5), (std::vector<unsigned>{0, 1, 4, 5, 0}));  // oversubscribed
}

TEST(Affinity, RankCpusetOnThisMachine)
{
    const Topology topo;
    const std::vector<unsigned> all = topo.all_pus();
    const std::vector<unsigned> set0 = rank_cpuset(topo, 0, 1);
    EXPECT_FALSE(set0.empty());
    for (unsigned pu : set0) EXPECT_TRUE(std::binary_search(all.begin(), all.end(), pu)) << pu;
    if (topo.process_binding().size() < all.size())
        GTEST_SKIP() << "process bound from outside to " << format_pus(topo.process_binding())
                     << ": the split is not used";
    if (topo.info().cores < 2) GTEST_SKIP() << "needs 2 cores to give 2 ranks disjoint sets, machine has "
                                            << topo.info().cores;
    std::vector<unsigned> a = rank_cpuset(topo, 0, 2), b = rank_cpuset(topo, 1, 2), both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    EXPECT_TRUE(both.empty()) << format_pus(a) << " and " << format_pus(b) << " overlap";
    EXPECT_FALSE(a.empty());
    EXPECT_FALSE(b.empty());
}

TEST(Affinity, PinOpenMpThreadsAndReadBack)
{
    const Topology topo;
    const std::vector<unsigned> allowed = topo.process_binding();
    if (allowed.size() < 2)
        GTEST_SKIP() << "needs 2 PUs to pin 2 threads apart; this process may use " << allowed.size() << " ("
                     << format_pus(allowed) << ")";
    BindingGuard guard(topo);
    const int old = omp_get_max_threads();
    const std::vector<unsigned> set = {allowed[0], allowed[1]};
    const auto bound = pin_openmp_threads(topo, set, 2);
    ASSERT_EQ(bound.size(), 2u);
    const auto expected = thread_pus(cores_within(topo.cores(), set), 2);
    EXPECT_EQ(bound[0], std::vector<unsigned>{expected[0]});
    EXPECT_EQ(bound[1], std::vector<unsigned>{expected[1]});
    EXPECT_NE(bound[0], bound[1]);
    // A later region of the same thread runs on the same pinned team.
    std::vector<std::vector<unsigned>> again(2);
#pragma omp parallel num_threads(2)
    again[static_cast<std::size_t>(omp_get_thread_num())] = topo.thread_binding();
    EXPECT_EQ(again, bound);
    EXPECT_THROW(pin_openmp_threads(topo, {}, 2), topokpm::Error);
    omp_set_num_threads(old);
}

TEST(LayoutWarnings, FlagsEachBadLayout)
{
    MachineInfo m;
    m.packages = 2;
    m.numa_nodes = 2;
    m.cores = 8;
    m.pus = 16;
    // One rank per NUMA domain, 8 threads on its 8 PUs: sound.
    EXPECT_TRUE(layout_warnings(m, {2, 8, 8, 1}).empty());
    // One rank spanning both domains.
    auto w = layout_warnings(m, {1, 16, 16, 2});
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("spans 2 NUMA domains"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("2 ranks per node (2 NUMA domains + 0 GPUs)"), std::string::npos) << w[0];
    // More ranks than cores (threads fit their one-PU sets).
    w = layout_warnings(m, {12, 1, 1, 1});
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("12 ranks per node on 8 cores"), std::string::npos) << w[0];
    // More threads than the PUs of the rank's set.
    w = layout_warnings(m, {2, 12, 8, 1});
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("12 OpenMP threads on the 8 PUs"), std::string::npos) << w[0];
    // A GPU nobody drives.
    m.gpus.push_back({"NVIDIA 10de:2330", "0000:19:00.0", 0});
    w = layout_warnings(m, {2, 8, 8, 1});
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("below the suggested 3 ranks per node (2 NUMA domains + 1 GPU)"), std::string::npos) << w[0];
    EXPECT_EQ(warn_about_layout(m, {2, 8, 8, 1}), 1);
}

// The team-size warning of one process and of a rank: none while the threads fit the PUs.
TEST(LayoutWarnings, ThreadsBeyondThePusOfTheSet)
{
    EXPECT_EQ(threads_warning(8, 8, "this process's"), "");
    EXPECT_EQ(threads_warning(1, 64, "this rank's"), "");
    const std::string w = threads_warning(3, 2, "this process's");
    EXPECT_NE(w.find("3 OpenMP threads on the 2 PUs of this process's CPU set"), std::string::npos) << w;
    EXPECT_NE(w.find("at most 2"), std::string::npos) << w;
    EXPECT_NE(w.find("OMP_WAIT_POLICY=passive"), std::string::npos) << w;
    EXPECT_NE(threads_warning(2, 1, "this rank's").find("2 OpenMP threads on the 1 PU of this rank's"), std::string::npos);
}

TEST(LayoutWarnings, ThisMachine)
{
    const Topology topo;
    const std::vector<unsigned> set = rank_cpuset(topo, 0, 1);
    const LayoutFacts sound{recommended_layout(topo.info()).ranks_per_node(), 1, static_cast<int>(set.size()),
                            topo.numa_nodes_spanned(set)};
    for (const std::string& w : layout_warnings(topo.info(), sound)) std::printf("note: %s\n", w.c_str());
    // More ranks than cores always warns.
    LayoutFacts crowded = sound;
    crowded.ranks_per_node = topo.info().cores + 1;
    EXPECT_FALSE(layout_warnings(topo.info(), crowded).empty());
}
