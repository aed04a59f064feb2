// Each phase of the kpm-dos pipeline (app/run/run_dos.hpp, DosRun) on its own, on tiny
// inputs: validate refuses before anything is built, build returns the operator of the
// spec, bounds contain the spectrum of the dense LAPACK reference, moments equal the exact
// ones, bands are eigenvalues of the dense matrix, result writes the schema's datasets,
// report names the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/result_file.hpp"
#include "app/cli/operator_choice.hpp"
#include "app/cli/run_config.hpp"
#include "app/mpi/distribution.hpp"
#include "app/run/run_dos.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/app_runner.hpp"
#include "tests/support/dense_oracle.hpp"

namespace fs = std::filesystem;
using namespace topokpm;

namespace {

const std::string kTiny = TOPOKPM_SOURCE_DIR "/inputs/test/ti_tiny.ini";

fs::path scratch(const std::string& name) { return topokpm::testing::scratch_path("phases", name); }

app::RunConfig parse(std::vector<std::string> args, const std::string& out)
{
    args.push_back("--output");
    args.push_back(scratch(out).string());
    return topokpm::testing::parse_kpm_dos(std::move(args));
}

/// Runs the phases up to and including bands.
void run_to_bands(app::DosRun& run)
{
    run.validate();
    run.build();
    run.bounds();
    run.moments();
    run.bands();
}

}  // namespace

// validate: a run that does not fit the memory limit, or whose output path is a directory,
// is refused before the operator is built or any file is written.
TEST(DosRunPhases, ValidateRefusesBeforeBuildingAnything)
{
    app::Distribution serial;
    {
        const app::RunConfig cfg = parse({"--config", kTiny, "--memory-limit", "1e-6"}, "mem.h5");
        app::DosRun run(cfg, serial);
        EXPECT_THROW(run.validate(), ResourceError);
        EXPECT_EQ(run.op(), nullptr);
        EXPECT_FALSE(fs::exists(cfg.outputs.result_file));
    }
    {
        fs::create_directories(scratch("a_directory.h5"));
        const app::RunConfig cfg = parse({"--config", kTiny}, "a_directory.h5");
        app::DosRun run(cfg, serial);
        EXPECT_THROW(run.validate(), InputError);  // a directory as --output: bad input (exit 2)
        EXPECT_EQ(run.op(), nullptr);
    }
    // A valid run: the model is there, the operator is not built yet.
    const app::RunConfig cfg = parse({"--config", kTiny}, "ok.h5");
    app::DosRun run(cfg, serial);
    run.validate();
    ASSERT_NE(run.model(), nullptr);
    EXPECT_EQ(run.model()->num_rows(), 4 * 4 * 3 * 4);
    EXPECT_EQ(run.op(), nullptr);
}

// build: the operator of the options is the one make_operator builds for their spec:
// same name, and bit for bit the same product.
TEST(DosRunPhases, BuildReturnsTheOperatorOfTheSpec)
{
    app::Distribution serial;
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--matrix", "sell", "--sell-C", "4", "--sell-sigma", "8"},
          {"--matrix", "crs"}, {"--matrix", "free"}, {"--matrix", "naive"},
          {"--matrix", "sell", "--precision", "single"}}) {
        std::vector<std::string> args{"--config", kTiny};
        args.insert(args.end(), extra.begin(), extra.end());
        const app::RunConfig cfg = parse(args, "build.h5");
        app::DosRun run(cfg, serial);
        run.validate();
        run.build();
        ASSERT_NE(run.op(), nullptr);
        const auto want = numerics::make_operator(app::operator_spec(cfg), hamiltonians::operator_source(*run.model())).op;
        EXPECT_EQ(run.op()->name(), want->name());
        const global_index n = want->num_rows();
        ASSERT_EQ(run.op()->num_rows(), n);
        BlockVector x(n, 2), y1(n, 2), y2(n, 2);
        numerics::fill_random_phase_vectors(x, 3, 0, n);
        const AugmentedOps ops{0.5, 0.1, 0.0, false};
        run.op()->apply(x, y1, ops, nullptr);
        want->apply(x, y2, ops, nullptr);
        for (size_t i = 0; i < y1.size(); ++i) ASSERT_EQ(y1.data()[i], y2.data()[i]) << want->name() << " entry " << i;
    }
}

// bounds: every method's bounds contain the LAPACK spectrum of the same matrix. Lanczos
// stops once its residuals fit in the margin m (relative to the width w), so its bounds
// lie at most 2 m w outside the extreme eigenvalues (Ritz value + residual + margin).
TEST(DosRunPhases, BoundsContainTheSpectrumOfTheDenseReference)
{
    app::Distribution serial;
    for (const std::string method : {"lanczos", "gershgorin"}) {
        const app::RunConfig cfg = parse({"--config", kTiny, "--bounds", method}, "bounds.h5");
        app::DosRun run(cfg, serial);
        run.validate();
        run.build();
        run.bounds();
        const std::vector<double> e = topokpm::testing::dense_eigenvalues(*run.model());
        const SpectralBounds b = run.spectral_bounds();
        EXPECT_LE(b.lower, e.front()) << method;
        EXPECT_GE(b.upper, e.back()) << method;
        if (method == "lanczos") {
            const double slack = 2.0 * cfg.kpm.lanczos_margin * (e.back() - e.front()) * (1 + 1e-12);
            EXPECT_GE(b.lower, e.front() - slack);
            EXPECT_LE(b.upper, e.back() + slack);
        }
    }
}

// bounds on the models themselves, clean and disordered, double and single precision:
// the default Lanczos bounds contain the zheev spectrum and lie at most 2 m w outside it
// (Ritz value + residual + margin, the residual at most m w when it stops); with Anderson
// disorder the Gershgorin discs end W/2 beyond the clean ones while the spectrum's edges do
// not (loose: Lanczos must do the work); on clean graphene they are the band edges +-3 t
// exactly and are taken. The moments then stay bounded by 1 (the run checks |mu_n| <= 1).
TEST(DosRunPhases, LanczosBoundsContainTheSpectrumWhereGershgorinIsLooseOrExact)
{
    app::Distribution serial;
    const std::vector<std::vector<std::string>> cases = {
        {"--model", "graphene", "--lattice", "6x5"},
        {"--model", "graphene", "--lattice", "6x5", "--disorder", "2.5"},
        {"--model", "ti", "--lattice", "4x3x3", "--disorder", "4"},
        {"--model", "ti", "--lattice", "4x3x3", "--disorder", "4", "--precision", "single"},
        {"--model", "graphene", "--lattice", "6x5", "--disorder", "2.5", "--precision", "single"},
        // Large enough (N / 4 sweeps >= the steps) that Lanczos runs in its moment form (the
        // enclosure is exact); disordered, it hands over to the three-term recurrence.
        {"--model", "graphene", "--lattice", "16x14"},
        {"--model", "graphene", "--lattice", "16x14", "--precision", "single"},
        {"--model", "graphene", "--lattice", "14x12", "--disorder", "2.5"}};
    for (std::vector<std::string> args : cases) {
        std::string tag;
        for (const auto& a : args) tag += a + " ";
        for (const std::string more : {"--moments", "64", "--vectors", "2"}) args.push_back(more);
        const app::RunConfig cfg = parse(args, "lanczos_bounds.h5");
        app::DosRun run(cfg, serial);
        run.validate();
        run.build();
        run.bounds();
        const std::vector<double> e = topokpm::testing::dense_eigenvalues(*run.model());
        const SpectralBounds g = gershgorin_bounds(*run.model());
        const SpectralBounds b = run.spectral_bounds();
        const double w = e.back() - e.front();
        // zheev's eigenvalues carry ~N eps ||H|| (N <= 448 here): 1e-12 w covers it when
        // the bounds are the exact band edges of clean graphene.
        EXPECT_LE(b.lower, e.front() + 1e-12 * w) << tag;
        EXPECT_GE(b.upper, e.back() - 1e-12 * w) << tag;
        // single: the float matrix moves eigenvalues by <= 1e-6 w (sell_single_test).
        const double slack = 2.0 * cfg.kpm.lanczos_margin * w * (1 + 1e-12) + 1e-5 * w;
        EXPECT_GE(b.lower, e.front() - slack) << tag;
        EXPECT_LE(b.upper, e.back() + slack) << tag;
        if (cfg.model.disorder > 0) EXPECT_LT(g.lower, e.front() - slack) << tag << "(Gershgorin not loose)";
        else EXPECT_EQ(b.lower, g.lower) << tag << "(clean graphene: the exact discs are taken)";
        EXPECT_NO_THROW(run.moments()) << tag;
    }
}

// The bounds take the model's plane-wave shortcut whatever the operator (run_dos, bounds_of):
// clean periodic graphene through the stored (sell, crs) and the matrix-free operator, double
// and single, gets the Gershgorin bounds +-3 t with no Lanczos sweep (lanczos_iterations = 0 in
// the result file), and its moments stay bounded (the run checks |mu_n| <= 1).
TEST(DosRunPhases, PlaneWaveBoundsServeEveryOperator)
{
    app::Distribution serial;
    for (const std::string matrix : {"sell", "crs", "free"})
        for (const std::string precision : {"double", "single"}) {
            const std::string tag = matrix + " " + precision;
            const app::RunConfig cfg = parse({"--model", "graphene", "--lattice", "16x14", "--matrix", matrix,
                                              "--precision", precision, "--moments", "64", "--vectors", "2"},
                                             "plane_wave_bounds.h5");
            app::DosRun run(cfg, serial);
            run_to_bands(run);
            run.result();
            EXPECT_EQ(run.spectral_bounds().lower, -3.0) << tag;
            EXPECT_EQ(run.spectral_bounds().upper, 3.0) << tag;
            analysis::ResultReader r(cfg.outputs.result_file);
            EXPECT_EQ(r.read_int64_attribute("/kpm", "lanczos_iterations"), 0) << tag;
        }
}

// moments: the exact trace through the run's operator equals (1/N) sum_i T_n(x_i) from
// zheev's eigenvalues with the run's scaling (errors ~N eps ||H|| + n eps, far below 1e-11
// for N = 192, M = 64; dos_pipeline_test derives the same bound).
TEST(DosRunPhases, MomentsEqualTheExactMomentsOfTheDenseReference)
{
    app::Distribution serial;
    const app::RunConfig cfg = parse({"--config", kTiny, "--trace", "exact", "--vectors", "8"}, "moments.h5");
    app::DosRun run(cfg, serial);
    run.validate();
    run.build();
    run.bounds();
    run.moments();
    ASSERT_EQ(run.slot_moments().size(), 1u);
    const std::vector<double>& mu = run.slot_moments()[0];
    ASSERT_EQ(mu.size(), static_cast<size_t>(cfg.kpm.num_moments));
    const SpectralBounds b = run.spectral_bounds();
    const double a = (b.upper - b.lower) / (2.0 - cfg.kpm.epsilon), c = (b.upper + b.lower) / 2.0;
    const std::vector<double> want =
        topokpm::testing::exact_moments(topokpm::testing::dense_eigenvalues(*run.model()), cfg.kpm.num_moments, a, c);
    for (int k = 0; k < cfg.kpm.num_moments; ++k) EXPECT_NEAR(mu[k], want[k], 1e-11) << "moment " << k;
}

// bands: for A(k, E) of a clean lattice every band energy at a lattice momentum is an
// eigenvalue of the whole (periodic in x, y) matrix, and there are states-per-cell of them
// per momentum (4 Nz for ti).
TEST(DosRunPhases, BandsAreEigenvaluesOfTheDenseMatrix)
{
    app::Distribution serial;
    const app::RunConfig cfg = parse({"--model", "ti", "--lattice", "4x4x2", "--moments", "32", "--vectors", "2",
                                      "--k-points", "0,0;1,0;1,1;2,1"},
                                     "bands.h5");
    app::DosRun run(cfg, serial);
    run_to_bands(run);
    const std::vector<double>& bands = run.band_energies();
    ASSERT_EQ(bands.size(), 4u * 4 * 2);
    const std::vector<double> e = topokpm::testing::dense_eigenvalues(*run.model());
    for (const double x : bands) {
        const auto it = std::lower_bound(e.begin(), e.end(), x);
        double d = 1e300;
        if (it != e.end()) d = std::min(d, std::abs(*it - x));
        if (it != e.begin()) d = std::min(d, std::abs(*(it - 1) - x));
        EXPECT_LT(d, 1e-10) << "band energy " << x << " is no eigenvalue";
    }
}

// result and report: the file holds the schema's DOS datasets with the run's sizes and
// bounds, and the report names it.
TEST(DosRunPhases, ResultWritesTheSchemaAndReportNamesIt)
{
    app::Distribution serial;
    const app::RunConfig cfg = parse({"--config", kTiny}, "result.h5");
    fs::remove(cfg.outputs.result_file);
    app::DosRun run(cfg, serial);
    run_to_bands(run);
    EXPECT_FALSE(fs::exists(cfg.outputs.result_file));
    run.result();
    ASSERT_TRUE(fs::exists(cfg.outputs.result_file));
    analysis::ResultReader r(cfg.outputs.result_file);
    const int m = cfg.kpm.num_moments;
    EXPECT_EQ(r.read_doubles("/kpm/moments").size(), static_cast<size_t>(m));
    EXPECT_EQ(r.read_int64_attribute("/kpm", "num_moments"), m);
    EXPECT_EQ(r.read_double_attribute("/kpm", "bounds_lower"), run.spectral_bounds().lower);
    EXPECT_EQ(r.read_double_attribute("/kpm", "bounds_upper"), run.spectral_bounds().upper);
    const std::vector<double> energy = r.read_doubles("/dos/energy"), rho = r.read_doubles("/dos/rho");
    EXPECT_EQ(energy.size(), static_cast<size_t>(cfg.kpm.energy_points));
    EXPECT_EQ(rho.size(), energy.size());
    EXPECT_TRUE(r.exists("/model"));
    EXPECT_TRUE(r.exists("/provenance"));
    ::testing::internal::CaptureStdout();
    run.report();
    EXPECT_NE(::testing::internal::GetCapturedStdout().find("result written to " + cfg.outputs.result_file),
              std::string::npos);
}
