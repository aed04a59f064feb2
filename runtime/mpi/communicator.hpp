#pragma once
/// @file communicator.hpp
/// Thin typed wrappers over the MPI collectives the distributed KPM needs
/// (docs/scaling.md): sums of doubles and complex numbers (the KPM moments, reduced
/// once at the end), maxima (the slowest rank's time), gathers of per-rank results of
/// different lengths (gatherv, or allgatherv on every rank: checkpoint CRC pieces) and of
/// one value per rank (allgather: the measured rates that become `auto` weights). All work on MPI_COMM_WORLD unless a communicator
/// is passed. Errors: MPI's default handler (MPI_ERRORS_ARE_FATAL) aborts the job; a
/// non-success return under another handler throws Error naming the call.

#include <mpi.h>

#include <chrono>
#include <complex>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/base/error.hpp"

namespace topokpm::mpi {

/// The MPI datatype of T (double, complex<double>, complex<float>, int, int64, uint64).
template <typename T>
MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<double>() { return MPI_DOUBLE; }
template <>
inline MPI_Datatype datatype<std::complex<double>>() { return MPI_C_DOUBLE_COMPLEX; }
template <>
inline MPI_Datatype datatype<std::complex<float>>() { return MPI_C_FLOAT_COMPLEX; }
template <>
inline MPI_Datatype datatype<int>() { return MPI_INT; }
template <>
inline MPI_Datatype datatype<std::int64_t>() { return MPI_INT64_T; }
template <>
inline MPI_Datatype datatype<std::uint64_t>() { return MPI_UINT64_T; }

/// Throws Error "<call> failed: <MPI error string>" unless rc is MPI_SUCCESS.
inline void check(int rc, const char* call)
{
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw Error(detail::concat(call, " failed: ", std::string(text, static_cast<std::size_t>(length))));
}

/// Element-wise sum over all ranks, in place: every rank ends with the same values.
/// Collective; every rank passes the same length.
template <typename T>
void allreduce_sum(std::vector<T>& values, MPI_Comm comm = MPI_COMM_WORLD)
{
    check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), datatype<T>(), MPI_SUM,
                        comm),
          "MPI_Allreduce(MPI_SUM)");
}

/// Sum of one value over all ranks.
template <typename T>
T allreduce_sum(T value, MPI_Comm comm = MPI_COMM_WORLD)
{
    T result{};
    check(MPI_Allreduce(&value, &result, 1, datatype<T>(), MPI_SUM, comm), "MPI_Allreduce(MPI_SUM)");
    return result;
}

/// Maximum of one value over all ranks (real types only).
template <typename T>
T allreduce_max(T value, MPI_Comm comm = MPI_COMM_WORLD)
{
    T result{};
    check(MPI_Allreduce(&value, &result, 1, datatype<T>(), MPI_MAX, comm), "MPI_Allreduce(MPI_MAX)");
    return result;
}

/// One value per rank, gathered on every rank (index = rank).
template <typename T>
std::vector<T> allgather(T value, MPI_Comm comm = MPI_COMM_WORLD)
{
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    std::vector<T> all(static_cast<std::size_t>(ranks));
    check(MPI_Allgather(&value, 1, datatype<T>(), all.data(), 1, datatype<T>(), comm), "MPI_Allgather");
    return all;
}

/// The displacements of MPI_Gatherv/MPI_Allgatherv: offsets[r] = sizes[0] + ... + sizes[r-1].
inline std::vector<int> displacements(const std::vector<int>& sizes)
{
    std::vector<int> offsets(sizes.size(), 0);
    for (std::size_t r = 1; r < sizes.size(); ++r) offsets[r] = offsets[r - 1] + sizes[r - 1];
    return offsets;
}

/// Concatenation of every rank's `local` (any length, zero included) in rank order,
/// returned on `root`; other ranks get an empty vector. Collective. `counts`, when not
/// null, receives each rank's length on root.
template <typename T>
std::vector<T> gatherv(const std::vector<T>& local, int root = 0, std::vector<int>* counts = nullptr,
                       MPI_Comm comm = MPI_COMM_WORLD)
{
    int me = 0, ranks = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &ranks);
    const int mine = static_cast<int>(local.size());
    std::vector<int> sizes(me == root ? static_cast<std::size_t>(ranks) : 0);
    check(MPI_Gather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm), "MPI_Gather(counts)");
    const std::vector<int> offsets = displacements(sizes);
    std::vector<T> all(offsets.empty() ? 0 : static_cast<std::size_t>(offsets.back()) + std::size_t(sizes.back()));
    check(MPI_Gatherv(local.data(), mine, datatype<T>(), all.data(), sizes.data(), offsets.data(), datatype<T>(),
                      root, comm),
          "MPI_Gatherv");
    if (counts != nullptr) *counts = sizes;
    return all;
}

/// Concatenation of every rank's `local` (any length, zero included) in rank order, on
/// every rank. Collective.
template <typename T>
std::vector<T> allgatherv(const std::vector<T>& local, MPI_Comm comm = MPI_COMM_WORLD)
{
    const std::vector<int> sizes = allgather(static_cast<int>(local.size()), comm);
    const std::vector<int> offsets = displacements(sizes);
    std::vector<T> all(offsets.empty() ? 0 : static_cast<std::size_t>(offsets.back()) + std::size_t(sizes.back()));
    check(MPI_Allgatherv(local.data(), static_cast<int>(local.size()), datatype<T>(), all.data(), sizes.data(),
                         offsets.data(), datatype<T>(), comm),
          "MPI_Allgatherv");
    return all;
}

/// Completes a nonblocking request, sleeping `pause` between MPI_Test calls: a blocking
/// MPI call polls on its core (OpenMPI does unless the job is oversubscribed), which a
/// master thread sharing cores with task workers takes from them (docs/dense.md).
inline void wait_sleeping(MPI_Request& request, const char* call,
                          std::chrono::microseconds pause = std::chrono::microseconds(50))
{
    for (int done = 0;;) {
        check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
        if (done) return;
        std::this_thread::sleep_for(pause);
    }
}

}  // namespace topokpm::mpi
