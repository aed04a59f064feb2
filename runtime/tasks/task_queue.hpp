#pragma once
/// @file task_queue.hpp
/// A queue of affinity-aware tasks over a fixed map of PUs (seed 000 §4.2): one
/// persistent worker ("shepherd") thread per PU waits for work; enqueue() returns at
/// once; a task starts, in FIFO order, as soon as `threads` PUs of the map are free
/// (those of its preferred NUMA domain first; with numa_strict only those). The worker
/// binds itself to the reserved PUs, opens one OpenMP region that pins thread i to the
/// i-th PU, sets omp_set_num_threads(threads) and calls the body. Because OpenMP
/// runtimes keep a worker's team between regions, the body's own parallel regions run
/// on the same pinned threads. The PUs are free again when the body returns.
///
/// Limits (kept small on purpose): no dependencies between tasks (wait on the handles);
/// a task that waits for another task it enqueued must leave it enough free PUs.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/tasks/task.hpp"
#include "runtime/topology/topology.hpp"

namespace topokpm::tasks {

class TaskQueue {
public:
    /// A queue over `pus` (e.g. this rank's CPU set from topology::rank_cpuset). The
    /// topology must outlive the queue. Throws InputError for an empty PU map.
    TaskQueue(const topology::Topology& topology, std::vector<unsigned> pus);
    /// Waits for every enqueued task, then stops the workers.
    ~TaskQueue();
    TaskQueue(const TaskQueue&) = delete;
    TaskQueue& operator=(const TaskQueue&) = delete;

    /// Queues `task` and returns at once. Throws InputError (naming the numbers) when the
    /// task can never run here: more threads than PUs in the map (or in its NUMA domain
    /// with numa_strict), or an invalid task (validate()).
    TaskHandle enqueue(Task task);

    /// Blocks until every task enqueued so far has finished (errors stay in the handles).
    void wait_all();

    /// PUs of the map, and how many are not reserved now.
    const std::vector<unsigned>& pus() const { return pus_; }
    int free_pus() const;

private:
    struct Pending {
        Task task;
        TaskHandle handle;
    };
    void worker_loop();
    /// PUs for the task at the head of the queue, or empty when they are not free now.
    std::vector<std::size_t> try_reserve(const Task& task) const;

    const topology::Topology& topology_;
    std::vector<unsigned> pus_;
    std::vector<int> pu_numa_;   ///< NUMA domain of pus_[i]
    std::vector<bool> busy_;     ///< pus_[i] reserved
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Pending> pending_;
    int running_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace topokpm::tasks
