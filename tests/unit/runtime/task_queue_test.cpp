#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "runtime/base/error.hpp"
#include "runtime/tasks/task_queue.hpp"
#include "runtime/topology/topology.hpp"

using namespace topokpm;
using namespace topokpm::tasks;

namespace {

/// Spins until `flag` is set or 10 s pass; false on timeout.
bool wait_for(const std::atomic<bool>& flag)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!flag.load()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

}  // namespace

TEST(TaskQueue, RunsTasksAndWaitReturnsAfterThem)
{
    const topology::Topology topo;
    TaskQueue queue(topo, topo.process_binding());
    std::atomic<int> count{0};
    std::vector<TaskHandle> handles;
    for (int i = 0; i < 5; ++i) handles.push_back(queue.enqueue({[&] { ++count; }}));
    for (auto& h : handles) h->wait();
    EXPECT_EQ(count.load(), 5);
    for (auto& h : handles) {
        EXPECT_TRUE(h->done());
        EXPECT_EQ(h->pus().size(), 1u);
    }
    queue.wait_all();
    EXPECT_EQ(queue.free_pus(), static_cast<int>(queue.pus().size()));
}

TEST(TaskQueue, BodyRunsOnRequestedThreadsPinnedToReservedPus)
{
    const topology::Topology topo;
    const std::vector<unsigned> pus = topo.process_binding();
    if (pus.size() < 2) GTEST_SKIP() << "needs 2 PUs for a 2-thread task; this process may use " << pus.size();
    TaskQueue queue(topo, pus);
    int team = 0;
    std::vector<std::vector<unsigned>> bound(2);
    Task task;
    task.threads = 2;
    task.body = [&] {
#pragma omp parallel
        {
#pragma omp single
            team = omp_get_num_threads();
            if (omp_get_thread_num() < 2) bound[static_cast<std::size_t>(omp_get_thread_num())] = topo.thread_binding();
        }
    };
    TaskHandle h = queue.enqueue(task);
    h->wait();
    EXPECT_EQ(team, 2);
    const std::vector<unsigned> reserved = h->pus();
    ASSERT_EQ(reserved.size(), 2u);
    for (const auto& b : bound) {
        ASSERT_EQ(b.size(), 1u);
        EXPECT_TRUE(std::binary_search(reserved.begin(), reserved.end(), b[0])) << b[0];
    }
    EXPECT_NE(bound[0], bound[1]);
}

TEST(TaskQueue, ConcurrentTasksGetDisjointPus)
{
    const topology::Topology topo;
    const std::vector<unsigned> pus = topo.process_binding();
    if (pus.size() < 2) GTEST_SKIP() << "needs 2 PUs for two concurrent tasks; this process may use " << pus.size();
    TaskQueue queue(topo, {pus[0], pus[1]});
    std::atomic<bool> a_started{false}, b_started{false};
    bool a_saw_b = false, b_saw_a = false;
    TaskHandle a = queue.enqueue({[&] { a_started = true; a_saw_b = wait_for(b_started); }});
    TaskHandle b = queue.enqueue({[&] { b_started = true; b_saw_a = wait_for(a_started); }});
    a->wait();
    b->wait();
    EXPECT_TRUE(a_saw_b && b_saw_a) << "the two one-thread tasks did not run at the same time";
    EXPECT_NE(a->pus(), b->pus());
}

TEST(TaskQueue, TasksWaitForFreePus)
{
    const topology::Topology topo;
    TaskQueue queue(topo, {topo.process_binding().front()});  // one PU
    std::atomic<int> running{0}, most{0};
    for (int i = 0; i < 4; ++i)
        queue.enqueue({[&] {
            const int now = ++running;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            --running;
        }});
    queue.wait_all();
    EXPECT_EQ(most.load(), 1);
}

TEST(TaskQueue, ExceptionsPropagateToWait)
{
    const topology::Topology topo;
    TaskQueue queue(topo, topo.process_binding());
    TaskHandle bad = queue.enqueue({[] { throw std::runtime_error("halo exchange failed"); }});
    try {
        bad->wait();
        FAIL() << "no exception from wait()";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "halo exchange failed");
    }
    EXPECT_TRUE(bad->done());
    // The queue keeps working and the PUs came back.
    bool ran = false;
    queue.enqueue({[&] { ran = true; }})->wait();
    EXPECT_TRUE(ran);
}

TEST(TaskQueue, NumaPreferenceAndImpossibleTasks)
{
    const topology::Topology topo;
    const std::vector<unsigned> pus = topo.process_binding();
    TaskQueue queue(topo, pus);
    Task on_node0;
    on_node0.numa_node = 0;
    on_node0.numa_strict = true;
    on_node0.body = [] {};
    if (std::any_of(pus.begin(), pus.end(), [&](unsigned p) { return topo.numa_node_of(p) == 0; })) {
        TaskHandle h = queue.enqueue(on_node0);
        h->wait();
        EXPECT_EQ(topo.numa_node_of(h->pus().front()), 0);
    }
    Task too_wide{[] {}, static_cast<int>(pus.size()) + 1};
    EXPECT_THROW(queue.enqueue(too_wide), InputError);
    Task far_node = on_node0;
    far_node.numa_node = topo.info().numa_nodes;  // no such node
    EXPECT_THROW(queue.enqueue(far_node), InputError);
    EXPECT_THROW(queue.enqueue(Task{}), InputError);                 // no body
    EXPECT_THROW(queue.enqueue(Task{[] {}, 0}), InputError);         // no threads
    EXPECT_THROW(TaskQueue(topo, std::vector<unsigned>{}), InputError);
}
