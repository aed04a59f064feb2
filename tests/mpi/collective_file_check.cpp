// Collective HDF5 writes of analysis::ResultWriter (parallel HDF5, MPI-IO) and the row reads
// of ResultReader, run by run_mpi_check.sh with 1-4 ranks ("files" mode):
//   - a [30, 2, 2] float64 dataset whose rows are dealt out in runs of 3 rows round robin
//     (rank r holds rows 3k..3k+2 for k % P == r: several runs per rank, as a 2-D
//     decomposition would have), each rank writing only its own rows;
//   - a small dataset and attributes that all ranks pass and rank 0's values are stored;
//   - after commit: rank 0 reads the whole file with the serial reader, every rank reads
//     back its own runs with read_rows, both compared exactly with value(row, j) below;
//   - a run list out of order is refused (DimensionMismatch) on every rank.
// Prints "files check on P ranks: ok".
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "analysis/result_file.hpp"
#include "runtime/base/error.hpp"
#include "runtime/mpi/environment.hpp"
#include "tests/mpi/check.hpp"

namespace mpi = topokpm::mpi;
using topokpm::analysis::ResultReader;
using topokpm::analysis::ResultWriter;
using topokpm::analysis::RowRun;
const topokpm::analysis::Meaning kMeaning{"1", "A value of the check."};

namespace {

using topokpm::testing::mpi_check::expect;
using topokpm::testing::mpi_check::verdict;

double value(std::uint64_t row, int j) { return 1000.0 * double(row) + j + 0.25; }

int check_files(const std::string& path)
{
    const int r = mpi::rank(), p = mpi::size();
    constexpr std::uint64_t kRows = 30, kRowLen = 4;
    std::vector<RowRun> runs;
    std::vector<double> local;
    for (std::uint64_t k = 0; 3 * k < kRows; ++k)
        if (int(k % std::uint64_t(p)) == r) {
            runs.push_back({3 * k, 3});
            for (std::uint64_t row = 3 * k; row < 3 * k + 3; ++row)
                for (int j = 0; j < int(kRowLen); ++j) local.push_back(value(row, j));
        }
    {
        ResultWriter out(path, p > 1);
        out.write_attributes("/check", kMeaning, {{"ranks", std::int64_t(p)}, {"name", std::string("files")}});
        out.write_rows("/check/vectors", kMeaning, local.data(), local.size(), runs, {kRows, 2, 2});
        out.write_doubles("/check/small", kMeaning, std::vector<double>{1.5, -2.5, 3.5}, {3});
        bool refused = false;
        try {
            std::vector<RowRun> backwards{{6, 3}, {0, 3}};
            std::vector<double> six(6 * kRowLen, 0.0);
            out.write_rows("/check/bad", kMeaning, six.data(), six.size(), backwards, {kRows, 2, 2});
        } catch (const topokpm::DimensionMismatch&) {
            refused = true;
        }
        expect(refused, "runs out of order were accepted");
        out.commit();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const ResultReader in(path);
    if (r == 0) {
        const std::vector<double> all = in.read_doubles("/check/vectors", std::vector<std::uint64_t>{kRows, 2, 2});
        for (std::uint64_t row = 0; row < kRows; ++row)
            for (int j = 0; j < int(kRowLen); ++j)
                expect(all[row * kRowLen + j] == value(row, j), "row " + std::to_string(row) + " of the file");
        expect(in.read_doubles("/check/small") == std::vector<double>{1.5, -2.5, 3.5}, "/check/small");
        expect(in.read_int64_attribute("/check", "ranks") == p, "attribute ranks");
    }
    std::vector<double> mine(local.size(), -1.0);
    in.read_rows("/check/vectors", {kRows, 2, 2}, runs, mine.data(), mine.size());
    expect(mine == local, "read_rows of this rank's runs");
    const int rc = verdict("files check");  // collective: every rank has read the file
    if (r == 0) std::remove(path.c_str());
    return rc;
}

}  // namespace

int main(int argc, char** argv)
{
    return topokpm::testing::mpi_check::run_check(argc, argv, mpi::ThreadLevel::funneled, [] {
        // One file per job (ctest may run the rank counts at once in this directory).
        long pid = long(::getpid());
        MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        return check_files("collective_file_check-" + std::to_string(pid) + ".h5");
    });
}
