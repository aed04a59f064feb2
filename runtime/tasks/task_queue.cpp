#include "runtime/tasks/task_queue.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "runtime/base/error.hpp"

namespace topokpm::tasks {

TaskQueue::TaskQueue(const topology::Topology& topology, std::vector<unsigned> pus)
    : topology_(topology), pus_(std::move(pus))
{
    std::sort(pus_.begin(), pus_.end());
    pus_.erase(std::unique(pus_.begin(), pus_.end()), pus_.end());
    TOPOKPM_USER_REQUIRE(!pus_.empty(), "a task queue needs at least one PU");
    for (unsigned pu : pus_) pu_numa_.push_back(topology_.numa_node_of(pu));
    busy_.assign(pus_.size(), false);
    for (std::size_t i = 0; i < pus_.size(); ++i) workers_.emplace_back([this] { worker_loop(); });
}

TaskQueue::~TaskQueue()
{
    wait_all();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread& w : workers_) w.join();
}

TaskHandle TaskQueue::enqueue(Task task)
{
    validate(task);
    const std::size_t threads = static_cast<std::size_t>(task.threads);
    TOPOKPM_USER_REQUIRE(threads <= pus_.size(), "a task with ", task.threads, " threads cannot run on a queue of ",
                         pus_.size(), " PUs (", topology::format_pus(pus_), ")");
    if (task.numa_strict) {
        const auto in_node = static_cast<std::size_t>(std::count(pu_numa_.begin(), pu_numa_.end(), task.numa_node));
        TOPOKPM_USER_REQUIRE(threads <= in_node, "a task with ", task.threads, " threads strictly on NUMA node ",
                             task.numa_node, " cannot run: the queue has ", in_node, " PUs there");
    }
    auto handle = std::make_shared<TaskState>();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_.push_back({std::move(task), handle});
    }
    changed_.notify_all();
    return handle;
}

void TaskQueue::wait_all()
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return pending_.empty() && running_ == 0; });
}

int TaskQueue::free_pus() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(std::count(busy_.begin(), busy_.end(), false));
}

std::vector<std::size_t> TaskQueue::try_reserve(const Task& task) const
{
    std::vector<std::size_t> chosen;
    const std::size_t want = static_cast<std::size_t>(task.threads);
    // Preferred NUMA domain first, then (unless strict) the rest, each in PU order.
    for (int pass = 0; pass < 2 && chosen.size() < want; ++pass) {
        if (pass == 1 && task.numa_strict) break;
        for (std::size_t i = 0; i < pus_.size() && chosen.size() < want; ++i) {
            const bool preferred = task.numa_node == any_numa_node || pu_numa_[i] == task.numa_node;
            if (!busy_[i] && (pass == 0) == preferred) chosen.push_back(i);
        }
    }
    if (chosen.size() < want) chosen.clear();
    return chosen;
}

void TaskQueue::worker_loop()
{
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
        std::vector<std::size_t> slots;
        // FIFO: only the head may start, so a wide task is not starved by narrow ones.
        changed_.wait(lock, [&] {
            if (stopping_) return true;
            if (pending_.empty()) return false;
            slots = try_reserve(pending_.front().task);
            return !slots.empty();
        });
        if (stopping_) return;
        Pending job = std::move(pending_.front());
        pending_.pop_front();
        std::vector<unsigned> pus;
        for (std::size_t s : slots) {
            busy_[s] = true;
            pus.push_back(pus_[s]);
        }
        std::sort(pus.begin(), pus.end());
        ++running_;
        lock.unlock();
        changed_.notify_all();  // the next head may fit into what is left

        job.handle->mark_started(pus);
        std::exception_ptr error;
        try {
            // The worker itself covers all reserved PUs (threads it creates inherit
            // that), then each team thread takes one PU.
            topology_.bind_thread(pus);
            const int threads = job.task.threads;
            std::vector<std::string> bind_errors(static_cast<std::size_t>(threads));
            omp_set_num_threads(threads);
#pragma omp parallel num_threads(threads)
            {
                const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
                try {
                    topology_.bind_thread({pus[t]});
                } catch (const std::exception& e) {
                    bind_errors[t] = e.what();
                }
            }
            for (const std::string& e : bind_errors)
                if (!e.empty()) throw Error(e);
            job.task.body();
        } catch (...) {
            error = std::current_exception();
        }
        job.handle->mark_finished(error);

        lock.lock();
        for (std::size_t s : slots) busy_[s] = false;
        --running_;
        changed_.notify_all();
    }
}

}  // namespace topokpm::tasks
