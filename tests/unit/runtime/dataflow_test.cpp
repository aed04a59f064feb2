#include "runtime/tasks/dataflow.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <future>
#include <mutex>
#include <thread>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/base/error.hpp"
#include "tests/support/backends.hpp"

using namespace topokpm::tasks;

namespace {

DataflowRuntime::Options options(int host_workers, int device_workers, std::size_t window)
{
    DataflowRuntime::Options o;
    o.devices = {DeviceConfig{DeviceKind::host, host_workers, {}}};
    if (device_workers > 0) o.devices.push_back(DeviceConfig{DeviceKind::host_memory, device_workers, {}});
    o.window = window;
    return o;
}

}  // namespace

// Writes to one item happen in submission order, whatever the workers or the window;
// readers see the value of the last earlier writer.
TEST(Dataflow, WritesToOneItemFollowSubmissionOrder)
{
    for (std::size_t window : {std::size_t{1}, std::size_t{3}, std::size_t{1000}})
        for (int workers : {1, 2}) {
            std::vector<int> log;
            long value = 0;
            std::vector<long> seen(50, -1);
            DataflowRuntime rt(options(workers, 0, window));
            rt.register_data(1, &log, sizeof log);
            rt.register_data(2, &value, sizeof value);
            for (int t = 0; t < 50; ++t) {
                if (t % 5 == 4)
                    rt.submit({[&seen, t](const TaskContext& c) { seen[t] = *c.as<long>(2); }, {{2, Access::read}}});
                else
                    rt.submit({[t](const TaskContext& c) {
                                   c.as<std::vector<int>>(1)->push_back(t);
                                   *c.as<long>(2) = t;
                               },
                               {{1, Access::read_write}, {2, Access::read_write}}});
            }
            rt.wait_all();
            std::vector<int> expected;
            for (int t = 0; t < 50; ++t)
                if (t % 5 != 4) expected.push_back(t);
            EXPECT_EQ(log, expected) << "window " << window << " workers " << workers;
            for (int t = 4; t < 50; t += 5) EXPECT_EQ(seen[t], t - 1);
            EXPECT_LE(rt.stats().max_window, window);
        }
}

// A task on the host-memory device works on its own copy; the runtime copies the item
// there and back (counted), and a host task after it sees the device's result.
TEST(Dataflow, HostMemoryDeviceUsesItsOwnBuffersAndExplicitCopies)
{
    std::vector<double> a(100, 1.0);
    double sum = 0.0;
    DataflowRuntime rt(options(1, 1, 8));
    rt.register_data(1, a.data(), a.size() * sizeof(double), /*owner=*/1);
    rt.register_data(2, &sum, sizeof sum, 0);
    const double* host = a.data();
    bool on_private_copy = false;
    rt.submit({[&](const TaskContext& c) {
                   double* d = c.as<double>(1);
                   on_private_copy = (d != host) && c.kind == DeviceKind::host_memory;
                   for (int i = 0; i < 100; ++i) d[i] = 2.0 * i;
               },
               {{1, Access::read_write}}});
    rt.submit({[](const TaskContext& c) {
                   const double* d = c.as<double>(1);
                   for (int i = 0; i < 100; ++i) *c.as<double>(2) += d[i];
               },
               {{1, Access::read}, {2, Access::read_write}}});
    rt.wait_all();
    EXPECT_TRUE(on_private_copy);
    EXPECT_EQ(sum, 9900.0);
    EXPECT_EQ(a[99], 198.0);
    const auto s = rt.stats();
    EXPECT_EQ(s.bytes_to_device, 800u);  // first use on the device
    EXPECT_EQ(s.bytes_to_host, 800u);    // the host task's read
}

// Access::overwrite: the device copy is allocated, not staged (no bytes to the device even
// though the host copy is valid), a later task on the device sees the writer's bytes, and a
// host reader gets them back.
TEST(Dataflow, OverwriteAllocatesWithoutStaging)
{
    std::vector<double> a(64, 5.0);
    double sum = 0.0;
    DataflowRuntime rt(options(1, 1, 8));
    rt.register_data(1, a.data(), a.size() * sizeof(double), /*owner=*/1);
    rt.register_data(2, &sum, sizeof sum, 0);
    rt.submit({[](const TaskContext& c) {
                   double* d = c.as<double>(1);
                   for (int i = 0; i < 64; ++i) d[i] = -0.0;
               },
               {{1, Access::overwrite}}});
    rt.submit({[](const TaskContext& c) {
                   double* d = c.as<double>(1);
                   for (int i = 0; i < 64; ++i) d[i] -= i;
               },
               {{1, Access::read_write}}});
    rt.submit({[](const TaskContext& c) {
                   double* d = c.as<double>(1);
                   for (int i = 0; i < 64; ++i) d[i] = 2.0 * d[i];
               },
               {{1, Access::read_write}}});
    rt.submit({[](const TaskContext& c) {
                   const double* d = c.as<double>(1);
                   for (int i = 0; i < 64; ++i) *c.as<double>(2) += d[i];
               },
               {{1, Access::read}, {2, Access::read_write}}});
    rt.wait_all();
    EXPECT_EQ(sum, -2.0 * 2016.0);
    EXPECT_EQ(a[63], -126.0);
    EXPECT_TRUE(std::signbit(a[0])) << "-0.0 - 0 is -0.0: the device's fill, not the host's 5.0";
    const auto s = rt.stats();
    EXPECT_EQ(s.bytes_to_device, 0u);    // never staged
    EXPECT_EQ(s.bytes_to_host, 512u);    // the host read
}

// release(): once the tasks touching an item are done, its device copy is written
// back and freed, and host memory holds the result without wait_all().
TEST(Dataflow, ReleasedItemIsWrittenBackWhenItsVisitsAreDone)
{
    int x = 0;
    DataflowRuntime rt(options(1, 1, 4));
    rt.register_data(7, &x, sizeof x, 1);
    rt.submit({[](const TaskContext& c) { *c.as<int>(7) = 42; }, {{7, Access::read_write}}});
    rt.release(7);
    rt.wait_all();
    EXPECT_EQ(x, 42);
    EXPECT_EQ(rt.stats().bytes_to_host, sizeof x);
    EXPECT_EQ(rt.stats().peak_device_buffers, 1);
    EXPECT_EQ(rt.stats().device_buffers, 0);  // freed before the runtime ends
}

// wait_for(): the master gets a valid host copy of one item (here written on the
// device) once its tasks are done, without waiting for the rest of the graph.
TEST(Dataflow, WaitForOneItemBringsItsDeviceResultHome)
{
    int x = 0, y = 0;
    std::atomic<bool> go{false};
    DataflowRuntime rt(options(1, 1, 8));
    rt.register_data(1, &x, sizeof x, 1);
    rt.register_data(2, &y, sizeof y, 0);
    rt.submit({[](const TaskContext& c) { *c.as<int>(1) = 5; }, {{1, Access::read_write}}});
    rt.submit({[&](const TaskContext& c) {  // still running while the master reads x
                   while (!go) std::this_thread::yield();
                   *c.as<int>(2) = 1;
               },
               {{2, Access::read_write}}});
    rt.wait_for(1);
    EXPECT_EQ(x, 5);
    go = true;
    rt.wait_all();
    EXPECT_EQ(y, 1);
    EXPECT_THROW(rt.wait_for(99), topokpm::InputError);
}

// A window of one task: the master waits for each task before unrolling the next; the
// graph still completes (no deadlock), even with independent tasks on two devices.
TEST(Dataflow, WindowOfOneFinishes)
{
    std::vector<int> v(20, 0);
    DataflowRuntime rt(options(2, 1, 1));
    for (int i = 0; i < 20; ++i) rt.register_data(static_cast<DataId>(i), &v[static_cast<std::size_t>(i)], sizeof(int), i % 2);
    for (int r = 0; r < 3; ++r)
        for (int i = 0; i < 20; ++i)
            rt.submit({[i](const TaskContext& c) { *c.as<int>(static_cast<DataId>(i)) += i; },
                       {{static_cast<DataId>(i), Access::read_write}}});
    rt.wait_all();
    for (int i = 0; i < 20; ++i) EXPECT_EQ(v[static_cast<std::size_t>(i)], 3 * i);
    EXPECT_EQ(rt.stats().max_window, 1u);
}

// Among ready tasks of a device, the higher priority runs first.
TEST(Dataflow, HigherPriorityRunsFirst)
{
    std::atomic<bool> go{false};
    std::vector<int> order;
    int a = 0, b = 0, c = 0;
    DataflowRuntime rt(options(1, 0, 100));
    rt.register_data(1, &a, sizeof a);
    rt.register_data(2, &b, sizeof b);
    rt.register_data(3, &c, sizeof c);
    rt.submit({[&](const TaskContext&) { while (!go) std::this_thread::yield(); }, {{1, Access::read_write}}});
    std::mutex m;
    rt.submit({[&](const TaskContext&) { std::lock_guard<std::mutex> l(m); order.push_back(2); }, {{2, Access::read_write}}, 1.0});
    rt.submit({[&](const TaskContext&) { std::lock_guard<std::mutex> l(m); order.push_back(3); }, {{3, Access::read_write}}, 5.0});
    go = true;
    rt.wait_all();
    EXPECT_EQ(order, (std::vector<int>{3, 2}));
}

// A throwing body: wait_all() rethrows it, later dependent bodies do not run.
TEST(Dataflow, FirstExceptionIsRethrownAndLaterBodiesSkipped)
{
    int x = 0;
    DataflowRuntime rt(options(2, 0, 16));
    rt.register_data(1, &x, sizeof x);
    rt.submit({[](const TaskContext&) { throw std::runtime_error("boom"); }, {{1, Access::read_write}}});
    rt.submit({[](const TaskContext& c) { *c.as<int>(1) = 5; }, {{1, Access::read_write}}});
    EXPECT_THROW(rt.wait_all(), std::runtime_error);
    EXPECT_EQ(x, 0);
    EXPECT_THROW(rt.submit({[](const TaskContext&) {}, {{99, Access::read}}}), topokpm::InputError);
}

TEST(Dataflow, RejectsBadConfiguration)
{
    EXPECT_THROW(DataflowRuntime(options(0, 0, 4)), topokpm::InputError);
    EXPECT_THROW(DataflowRuntime(options(1, 0, 0)), topokpm::InputError);
}

// Task bodies see one OpenMP thread (so an OpenMP-built BLAS inside runs single-threaded),
// whatever the master's setting.
TEST(Dataflow, BodiesRunWithOneOpenMpThread)
{
    omp_set_num_threads(2);
    int seen = -1;
    DataflowRuntime rt(options(2, 1, 8));
    rt.register_data(1, &seen, sizeof seen, 1);
    rt.submit({[](const TaskContext& c) { *c.as<int>(1) = omp_get_max_threads(); }, {{1, Access::read_write}}});
    rt.wait_all();
    EXPECT_EQ(seen, 1);
    EXPECT_EQ(omp_get_max_threads(), 2);
}

// The cost model (dataflow.hpp): a movable task (device -1, flops > 0) goes to the device
// with the earliest estimated finish, backlog / workers + copies + flops / rate. Every body
// waits on a gate until all are submitted, so each placement sees only the model's own
// backlogs (no task finishes in between) and the outcome is the model's, not the clock's.
// Greedy earliest finish keeps the two sides balanced: with t_h, t_d the estimated seconds
// of one task on a host worker and on the one-worker device, a task goes to the device only
// while D t_d + t_d < H t_h / 2 + t_h (2 host workers), and to the host only while
// H t_h / 2 + t_h <= D t_d + t_d, so at the end -t_d <= D t_d - H t_h / 2 <= t_h.
TEST(DataflowPlacement, MovableTasksGoToTheEarliestEstimatedFinishIncludingCopies)
{
    constexpr int tasks = 220;
    constexpr double flops = 1e6, host_rate = 1e9;  // t_h = 1 ms on each of 2 host workers
    constexpr std::size_t bytes = 1024;
    struct Case {
        const char* what;
        double device_rate, link;  // the one device worker's flop/s; bytes/s (0: copies free)
        bool device_most;
    };
    const Case cases[] = {
        {"device 10x all host workers", 20 * host_rate, 0.0, true},
        {"device 1/10 of one host worker", 0.1 * host_rate, 0.0, false},
        {"fast device behind a slow link", 20 * host_rate, bytes / 9.95e-3, false},  // t_d = 10 ms
    };
    for (const Case& c : cases) {
        DataflowRuntime::Options o = options(2, 1, tasks);
        o.devices[0].flops_per_second = host_rate;
        o.devices[1].flops_per_second = c.device_rate;
        o.devices[1].link_bytes_per_second = c.link;
        std::vector<std::vector<char>> data(tasks, std::vector<char>(bytes, 0));
        std::promise<void> gate;
        std::shared_future<void> open = gate.get_future().share();
        long total = 0;
        {
            DataflowRuntime rt(o);
            for (int i = 0; i < tasks; ++i) {
                rt.register_data(static_cast<DataId>(i), data[static_cast<std::size_t>(i)].data(), bytes, 0);
                rt.submit({[open, i](const TaskContext& x) {
                               open.wait();
                               x.as<char>(static_cast<DataId>(i))[0] = 1;
                           },
                           {{static_cast<DataId>(i), Access::read_write}}, 0.0, -1, flops});
            }
            gate.set_value();
            rt.wait_all();
            const auto s = rt.stats();
            long on_device = 0, on_host = 0;
            double flops_run = 0;
            for (std::size_t w = 0; w < s.tasks.size(); ++w) {
                (s.worker_device[w] == 0 ? on_host : on_device) += s.tasks[w];
                flops_run += s.flops[w];
            }
            total = on_device + on_host;
            ::testing::Test::RecordProperty(c.what, std::to_string(on_device) + " of " + std::to_string(tasks) +
                                                        " tasks on the device");
            EXPECT_EQ(flops_run, tasks * flops) << c.what;
            const double t_h = flops / host_rate, t_d = flops / c.device_rate + (c.link > 0 ? bytes / c.link : 0.0);
            const double gap = on_device * t_d - on_host * t_h / 2;
            EXPECT_GE(gap, -t_d - 1e-12) << c.what << ": device " << on_device << ", host " << on_host;
            EXPECT_LE(gap, t_h + 1e-12) << c.what << ": device " << on_device << ", host " << on_host;
            if (c.device_most) {
                EXPECT_GT(on_device, tasks / 2) << c.what;
            } else {
                EXPECT_LT(on_device, tasks / 2) << c.what;
            }
        }
        EXPECT_EQ(total, tasks);
        for (const auto& d : data) EXPECT_EQ(d[0], 1) << c.what;  // the device's writes came home
    }
}

// The device's ready queue runs higher priorities first, so the model counts ahead of a
// task only the running tasks and the queued ones of its priority or higher: behind 100
// queued priority-0 tasks fixed on a fast device (5 ms of estimated work), a movable
// priority-1 task still goes to the device (0.05 ms), a movable priority-0 one to the idle
// host (1 ms < 5 ms). A model that ignored priorities would send both to the host.
TEST(DataflowPlacement, HigherPriorityTasksSeeOnlyTheWorkAheadOfThem)
{
    DataflowRuntime::Options o = options(2, 1, 200);
    o.devices[0].flops_per_second = 1e9;
    o.devices[1].flops_per_second = 2e10;
    std::vector<int> v(102, -1);
    std::promise<void> gate;
    std::shared_future<void> open = gate.get_future().share();
    DataflowRuntime rt(o);
    for (int i = 0; i < 102; ++i) rt.register_data(static_cast<DataId>(i), &v[static_cast<std::size_t>(i)], sizeof(int), 0);
    auto task = [&](int i, double priority, int device) {
        rt.submit({[open, i](const TaskContext& c) {
                       open.wait();
                       *c.as<int>(static_cast<DataId>(i)) = c.device;
                   },
                   {{static_cast<DataId>(i), Access::read_write}}, priority, device, 1e6});
    };
    for (int i = 0; i < 100; ++i) task(i, 0.0, 1);
    task(100, 1.0, -1);
    task(101, 0.0, -1);
    gate.set_value();
    rt.wait_all();
    EXPECT_EQ(v[100], 1);
    EXPECT_EQ(v[101], 0);
}

// Without rates on every device (or with flops 0, or a fixed device) a task stays with the
// owner of what it writes, as before the cost model.
TEST(DataflowPlacement, UnratedOrFixedTasksStayWithTheirOwner)
{
    for (int variant = 0; variant < 3; ++variant) {
        DataflowRuntime::Options o = options(2, 1, 64);
        o.devices[1].flops_per_second = 1e12;  // a fast device...
        if (variant == 0) o.devices[0].flops_per_second = 0.0;  // ...but the host is not rated
        else o.devices[0].flops_per_second = 1e9;
        std::vector<int> v(40, 0);
        DataflowRuntime rt(o);
        for (int i = 0; i < 40; ++i) rt.register_data(static_cast<DataId>(i), &v[static_cast<std::size_t>(i)], sizeof(int), 0);
        for (int i = 0; i < 40; ++i)
            rt.submit({[i](const TaskContext& c) { *c.as<int>(static_cast<DataId>(i)) = i; },
                       {{static_cast<DataId>(i), Access::read_write}}, 0.0, variant == 2 ? 0 : -1,
                       variant == 1 ? 0.0 : 1e6});
        rt.wait_all();
        const auto s = rt.stats();
        for (std::size_t w = 0; w < s.tasks.size(); ++w)
            if (s.worker_device[w] == 1) {
                EXPECT_EQ(s.tasks[w], 0) << "variant " << variant;
            }
        for (int i = 0; i < 40; ++i) EXPECT_EQ(v[static_cast<std::size_t>(i)], i);
    }
}

TEST(DataflowPlacement, NegativeRatesAreAnInputError)
{
    DataflowRuntime::Options o = options(1, 1, 4);
    o.devices[1].link_bytes_per_second = -1.0;
    EXPECT_THROW(DataflowRuntime{o}, topokpm::InputError);
}

// ---- DeviceKind::cuda (runtime/device/cuda_memory_space.cpp) ----

namespace {

DataflowRuntime::Options with_gpu(int gpu_workers)
{
    DataflowRuntime::Options o;
    o.devices = {DeviceConfig{DeviceKind::host, 1, {}}, DeviceConfig{DeviceKind::cuda, gpu_workers, {}, 0}};
    return o;
}

}  // namespace

// One management thread per GPU: its stream orders the staging copies before the kernels.
TEST(DataflowCuda, MoreThanOneWorkerPerGpuIsAnInputError)
{
    EXPECT_THROW(DataflowRuntime(with_gpu(2)), topokpm::InputError);
}

// Without a GPU the cuda device is refused with the CUDA runtime's reason (CUDA build) or
// NotCompiled (CPU-only build), never a crash in a worker.
TEST(DataflowCuda, WithoutAGpuTheDeviceIsRefusedWithTheReason)
{
    if (!topokpm::testing::cuda_unavailable_reason())
        GTEST_SKIP() << "a CUDA device is visible: this checks the refusal on machines without one";
    try {
        DataflowRuntime rt(with_gpu(1));
        FAIL() << "a cuda device without a GPU was accepted";
    } catch (const topokpm::NotCompiled& e) {
        EXPECT_FALSE(topokpm::testing::cuda_compiled) << e.what();
    } catch (const topokpm::ResourceError& e) {
        EXPECT_TRUE(topokpm::testing::cuda_compiled);
        EXPECT_NE(std::string(e.what()).find("cudaGetDeviceCount"), std::string::npos) << e.what();
    }
}

// Through the GPU and back: a host write, a GPU task that takes the item read-write (so
// the GPU holds the only valid copy), a host read that must see the host's bytes again
// (copied to the device and back), then a second host write that the GPU must re-stage
// (a stale device copy would be written back over it).
TEST(DataflowCuda, ItemsRoundTripThroughTheGpuAndStaleCopiesAreRestaged)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    std::vector<double> data(1000, 0.0), seen;
    const std::size_t bytes = data.size() * sizeof(double);
    DataflowRuntime rt(with_gpu(1));
    rt.register_data(1, data.data(), bytes, 1);
    rt.submit({[](const TaskContext& c) {
                   auto* p = c.as<double>(1);
                   for (int i = 0; i < 1000; ++i) p[i] = 0.5 * i;
               },
               {{1, Access::read_write}},
               0.0,
               0});
    const void* host = data.data();
    bool on_gpu = false;
    rt.submit({[&on_gpu, host](const TaskContext& c) {
                   on_gpu = c.kind == DeviceKind::cuda && c.queue != nullptr && c.data(1) != host;
               },
               {{1, Access::read_write}}});
    rt.submit({[&seen](const TaskContext& c) { seen.assign(c.as<double>(1), c.as<double>(1) + 1000); },
               {{1, Access::read}},
               0.0,
               0});
    rt.submit({[](const TaskContext& c) { c.as<double>(1)[7] = -1.0; }, {{1, Access::read_write}}, 0.0, 0});
    rt.submit({[](const TaskContext&) {}, {{1, Access::read_write}}});  // on the GPU again
    rt.release(1);
    rt.wait_all();
    EXPECT_TRUE(on_gpu);
    ASSERT_EQ(seen.size(), 1000u);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen[i], 0.5 * i) << i;
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(data[i], i == 7 ? -1.0 : 0.5 * i) << i;
    const auto s = rt.stats();
    EXPECT_EQ(s.bytes_to_device, 2 * bytes);
    EXPECT_EQ(s.bytes_to_host, 2 * bytes);
    EXPECT_EQ(s.device_buffers, 0);
}
