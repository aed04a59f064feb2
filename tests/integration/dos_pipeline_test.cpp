// The whole kpm-dos pipeline (parse -> model -> operator -> bounds -> moments -> DOS ->
// HDF5) on tiny inputs, against the dense LAPACK oracle and against itself across
// storage formats and thread counts.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/result_file.hpp"
#include "app/cli/run_config.hpp"
#include "app/run/run_dos.hpp"
#include "hamiltonians/model.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/app_runner.hpp"
#include "tests/support/dense_oracle.hpp"

namespace fs = std::filesystem;
using namespace topokpm;

namespace {

const std::string kInputs = TOPOKPM_SOURCE_DIR "/inputs/test/";

fs::path scratch(const std::string& name) { return topokpm::testing::scratch_path("pipeline", name); }

app::RunConfig parse(std::vector<std::string> args) { return topokpm::testing::parse_kpm_dos(std::move(args)); }

std::vector<double> run_and_read_moments(std::vector<std::string> args, const fs::path& out)
{
    args.push_back("--output");
    args.push_back(out.string());
    app::run_dos(parse(args));
    analysis::ResultReader reader(out.string());
    return reader.read_doubles("/kpm/moments");
}

/// Exact moments from LAPACK eigenvalues of the same model, scaled with the a, b the
/// run recorded (so the comparison is independent of the bounds method).
std::vector<double> oracle_moments(const std::string& input, const fs::path& result)
{
    const app::RunConfig cfg = parse({"--config", input});
    const auto model = hamiltonians::make_model(cfg.model);
    analysis::ResultReader reader(result.string());
    const double a = reader.read_double_attribute("/kpm", "scale_a");
    const double b = reader.read_double_attribute("/kpm", "scale_b");
    const auto m = reader.read_int64_attribute("/kpm", "num_moments");
    return topokpm::testing::exact_moments(topokpm::testing::dense_eigenvalues(*model), static_cast<int>(m), a, b);
}

}  // namespace

// Exact trace through every operator equals (1/N) sum_i T_n(x_i) from zheev. Errors:
// eigenvalues are accurate to ~N eps ||H||, the recurrence adds ~n eps per moment, both
// far below 1e-11 for N <= 192, M = 64.
TEST(DosPipeline, ExactTraceMatchesLapackForEveryOperator)
{
    for (const std::string& input : {kInputs + "ti_tiny.ini", kInputs + "graphene_tiny.ini"}) {
        for (const char* matrix : {"sell", "crs", "free", "naive"}) {
            const fs::path out = scratch(std::string("exact_") + matrix + ".h5");
            const std::vector<double> mu =
                run_and_read_moments({"--config", input, "--trace", "exact", "--matrix", matrix, "--sell-C", "8", "--sell-sigma", "16"}, out);
            const std::vector<double> ref = oracle_moments(input, out);
            ASSERT_EQ(mu.size(), ref.size());
            for (size_t k = 0; k < mu.size(); ++k)
                EXPECT_NEAR(mu[k], ref[k], 1e-11) << input << " " << matrix << " k=" << k;
        }
    }
}

// Same seed -> same moments, whatever stores or applies the matrix and however many
// threads run it: only the summation order differs (relative 1e-12 is ~10^4 eps).
TEST(DosPipeline, StochasticMomentsIndependentOfOperatorAndThreads)
{
    for (const std::string& input : {kInputs + "ti_tiny.ini", kInputs + "graphene_tiny.ini"}) {
        const std::vector<double> ref =
            run_and_read_moments({"--config", input, "--matrix", "crs", "--threads", "1", "--energy-range", "-8:8"}, scratch("ref.h5"));
        for (const char* matrix : {"sell", "crs", "free", "naive"})
            for (const char* threads : {"1", "2"}) {
                const std::vector<double> mu = run_and_read_moments(
                    {"--config", input, "--matrix", matrix, "--threads", threads, "--energy-range", "-8:8"}, scratch("s.h5"));
                ASSERT_EQ(mu.size(), ref.size());
                for (size_t k = 0; k < mu.size(); ++k)
                    EXPECT_NEAR(mu[k], ref[k], 1e-12 * std::max(1.0, std::abs(ref[k])))
                        << input << " " << matrix << " threads=" << threads << " k=" << k;
            }
    }
}

// --block-width splits the R random vectors into narrower sweeps; every vector's moments
// are the same numbers computed in another block, so they agree to rounding (1e-12 as
// above), the last block padded with zero columns included (4 = 3 + 1).
TEST(DosPipeline, BlockWidthDoesNotChangeTheMoments)
{
    const std::string input = kInputs + "ti_tiny.ini";
    const std::vector<double> ref = run_and_read_moments({"--config", input, "--vectors", "4"}, scratch("ref.h5"));
    for (const char* w : {"1", "3", "4"}) {
        const std::vector<double> mu =
            run_and_read_moments({"--config", input, "--vectors", "4", "--block-width", w}, scratch("bw.h5"));
        ASSERT_EQ(mu.size(), ref.size());
        for (size_t k = 0; k < mu.size(); ++k)
            EXPECT_NEAR(mu[k], ref[k], 1e-12 * std::max(1.0, std::abs(ref[k]))) << "block width " << w << " k=" << k;
    }
    EXPECT_THROW(parse({"--config", input, "--vectors", "4", "--block-width", "5"}),
                 InputError);
}

// Every name of models.md §5 is present with its shape and the values the run used.
TEST(DosPipeline, ResultFileFollowsTheSchema)
{
    const fs::path out = scratch("schema.h5");
    app::run_dos(parse({"--config", kInputs + "ti_tiny.ini", "--output", out.string()}));
    analysis::ResultReader r(out.string());
    EXPECT_EQ(r.read_string_attribute("/model", "name"), "ti");
    EXPECT_EQ(r.read_int64_attribute("/model", "Nx"), 4);
    EXPECT_EQ(r.read_int64_attribute("/model", "Ny"), 4);
    EXPECT_EQ(r.read_int64_attribute("/model", "Nz"), 3);
    EXPECT_EQ(r.read_double_attribute("/model", "t"), 1.0);
    EXPECT_EQ(r.read_double_attribute("/model", "m"), 2.0);
    EXPECT_EQ(r.read_double_attribute("/model", "dot_potential"), 0.5);
    EXPECT_EQ(r.read_double_attribute("/model", "dot_radius"), 1.0);
    EXPECT_EQ(r.read_int64_attribute("/model", "dot_period"), 2);
    EXPECT_EQ(r.read_int64_attribute("/model", "dot_depth"), 1);
    EXPECT_EQ(r.read_double_attribute("/model", "disorder"), 0.7);
    EXPECT_EQ(r.read_uint64_attribute("/model", "disorder_seed"), 5u);
    EXPECT_EQ(r.read_string_attribute("/model", "boundary"), "ppo");
    EXPECT_GT(r.read_double_attribute("/kpm", "scale_a"), 0.0);
    r.read_double_attribute("/kpm", "scale_b");
    EXPECT_EQ(r.read_int64_attribute("/kpm", "num_moments"), 64);
    EXPECT_EQ(r.read_int64_attribute("/kpm", "num_vectors"), 4);
    EXPECT_EQ(r.read_uint64_attribute("/kpm", "vector_seed"), 1u);
    EXPECT_EQ(r.read_int64_attribute("/kpm", "num_rows"), 192);
    EXPECT_EQ(r.read_string_attribute("/kpm", "trace"), "stochastic");
    std::vector<std::uint64_t> dims;
    const auto mu = r.read_doubles("/kpm/moments", &dims);
    EXPECT_EQ(dims, std::vector<std::uint64_t>{64});
    EXPECT_NEAR(mu[0], 1.0, 1e-14);
    r.read_doubles("/kpm/moments_per_vector", &dims);
    EXPECT_EQ(dims, (std::vector<std::uint64_t>{4, 64}));
    const auto energy = r.read_doubles("/dos/energy", &dims);
    EXPECT_EQ(dims, std::vector<std::uint64_t>{128});  // K = 2 M by default
    for (size_t k = 1; k < energy.size(); ++k) EXPECT_LT(energy[k - 1], energy[k]);
    r.read_doubles("/dos/rho", &dims);
    EXPECT_EQ(dims, std::vector<std::uint64_t>{128});
    EXPECT_EQ(r.read_string_attribute("/dos", "kernel"), "jackson");
    EXPECT_EQ(r.read_double_attribute("/dos", "lorentz_lambda"), 4.0);
    EXPECT_NEAR(r.read_double_attribute("/dos", "integral"), 1.0, 1e-12);
    EXPECT_FALSE(r.read_string_attribute("/provenance", "program_version").empty());
    EXPECT_FALSE(r.read_string_attribute("/provenance", "git_revision").empty());
    EXPECT_NE(r.read_string_attribute("/provenance", "command_line").find("kpm-dos"), std::string::npos);
    EXPECT_NE(r.read_string_attribute("/provenance", "input_file_text").find("lattice = 4x4x3"), std::string::npos);
    EXPECT_EQ(r.read_int64_attribute("/provenance", "ranks"), 1);
    EXPECT_GE(r.read_int64_attribute("/provenance", "threads_per_rank"), 1);
    EXPECT_EQ(r.read_string_attribute("/provenance", "devices"), "cpu");
    EXPECT_FALSE(r.read_string_attribute("/provenance", "start_time").empty());
    EXPECT_FALSE(r.read_string_attribute("/provenance", "end_time").empty());
    EXPECT_GE(r.read_double_attribute("/provenance", "seconds_moments"), 0.0);
}

// The DOS of a user grid (Clenshaw) equals the DOS on the Chebyshev grid where they meet.
TEST(DosPipeline, UserEnergyGridIsNormalised)
{
    const fs::path out = scratch("grid.h5");
    app::run_dos(parse({"--config", kInputs + "graphene_tiny.ini", "--energy-grid", "-4:4:2001", "--output", out.string()}));
    analysis::ResultReader r(out.string());
    const auto e = r.read_doubles("/dos/energy");
    ASSERT_EQ(e.size(), 2001u);
    EXPECT_DOUBLE_EQ(e.front(), -4.0);
    EXPECT_DOUBLE_EQ(e.back(), 4.0);
    // Trapezoid on 2001 points over a Jackson-smoothed DOS (width ~ pi a / M ~ 0.15 t,
    // sampled every 0.004 t): integral within 1e-3 of 1.
    EXPECT_NEAR(r.read_double_attribute("/dos", "integral"), 1.0, 1e-3);
}

// Bad input: a clear InputError naming the option, and no result file left behind.
TEST(DosPipeline, BadInputIsRejectedWithoutOutput)
{
    const fs::path out = scratch("never.h5");
    struct Case {
        std::vector<std::string> args;
        std::string mentions;
    };
    const std::vector<Case> cases = {
        {{"--model", "foo", "--lattice", "4x4x4"}, "--model"},
        {{"--lattice", "4x4"}, "--lattice"},
        {{"--lattice", "0x4x4"}, "--lattice"},
        {{"--lattice", "8x8x4", "--dot-period", "3"}, "--dot-period"},
        {{"--lattice", "4x4x4", "--moments", "1"}, "--moments"},
        {{"--lattice", "4x4x4", "--moments", "abc"}, "--moments"},
        {{"--lattice", "4x4x4", "--vectors", "0"}, "--vectors"},
        {{"--lattice", "4x4x4", "--kernel", "gauss"}, "--kernel"},
        {{"--lattice", "4x4x4", "--matrix", "dense"}, "--matrix"},
        {{"--lattice", "4x4x4", "--trace", "full"}, "--trace"},
        {{"--lattice", "4x4x4", "--energy-range", "3:-3"}, "--energy-range"},
        {{"--lattice", "4x4x4", "--energy-points", "10", "--moments", "64"}, "--energy-points"},
        {{"--lattice", "4x4x4", "--disorder-seed", "-3"}, "--disorder-seed"},
        {{"--lattice", "4x4x4", "--sell-C", "0"}, "--sell-C"},
        {{"--lattice", "4x4x4", "--boundary", "pxo"}, "--boundary"},
        {{"--lattice", "4x4x4", "--no-such-option", "1"}, "no-such-option"},
        {{"--config", "/nonexistent/input.ini"}, "--config"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = c.args;
        args.push_back("--output");
        args.push_back(out.string());
        try {
            app::run_dos(parse(args));
            ADD_FAILURE() << "accepted: " << c.mentions;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(c.mentions), std::string::npos) << e.what();
        }
        EXPECT_FALSE(fs::exists(out)) << c.mentions;
    }
}

TEST(DosPipeline, UnwritableOutputFailsBeforeTheRun)
{
    EXPECT_THROW(app::run_dos(parse({"--lattice", "4x4x4", "--output", "/nonexistent-dir/x.h5"})), IoError);
}

// The paper's production input is refused up front with the memory it needs.
TEST(DosPipeline, ProductionInputRefusedWithMemoryNeeded)
{
    try {
        app::run_dos(parse({"--config", TOPOKPM_SOURCE_DIR "/inputs/ti-dots-1600x1600x40.ini", "--memory-limit", "64",
                            "--output", scratch("prod.h5").string()}));
        ADD_FAILURE() << "production input accepted with 64 GiB";
    } catch (const ResourceError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("needs"), std::string::npos) << msg;
        EXPECT_NE(msg.find("GiB"), std::string::npos) << msg;
        EXPECT_NE(msg.find("the limit --memory-limit is 64.0 GiB"), std::string::npos) << msg;
    }
    EXPECT_FALSE(fs::exists(scratch("prod.h5")));
}
