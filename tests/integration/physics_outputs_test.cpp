// The physics outputs of kpm-dos (issue 5) through the whole pipeline: LDOS, A(k, E)
// against the slab's Bloch Hamiltonian from LAPACK, error bars, disorder ensembles and
// restart refusals.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/reconstruct.hpp"
#include "analysis/result_file.hpp"
#include "analysis/statistics.hpp"
#include "app/checkpoint/checkpoint.hpp"
#include "app/cli/run_config.hpp"
#include "app/run/run_dos.hpp"
#include "app/run/run_output.hpp"
#include "app/cli/selection.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/base/counter_rng.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/app_runner.hpp"
#include "tests/support/dense_oracle.hpp"

namespace fs = std::filesystem;
using namespace topokpm;

namespace {

const std::string kInputs = TOPOKPM_SOURCE_DIR "/inputs/test/";

fs::path scratch(const std::string& name) { return topokpm::testing::scratch_path("physics", name); }

app::RunConfig parse(std::vector<std::string> args) { return topokpm::testing::parse_kpm_dos(std::move(args)); }

fs::path run(std::vector<std::string> args, const std::string& name)
{
    const fs::path out = scratch(name);
    args.push_back("--output");
    args.push_back(out.string());
    app::run_dos(parse(args));
    return out;
}

/// Row m of a row-major [rows, len] array.
std::vector<double> row(const std::vector<double>& a, size_t m, size_t len)
{
    return {a.begin() + m * len, a.begin() + (m + 1) * len};
}

}  // namespace

// sum_j LDOS_j moments = Tr T_n = N mu_n(exact trace), through SELL on the disordered slab
// with dots. Same block width (4) in both runs, so the per-row numbers are identical and
// only the order of the N additions differs: 1e-13 N.
TEST(Ldos, SumOverAllRowsIsNTimesTheExactTraceMoments)
{
    const std::string input = kInputs + "ti_tiny.ini";
    const fs::path ldos = run({"--config", input, "--ldos", "0-191", "--energy-range", "-6:6"}, "ldos_all.h5");
    const fs::path exact = run({"--config", input, "--trace", "exact", "--energy-range", "-6:6"}, "exact_all.h5");
    const analysis::ResultReader l(ldos.string()), e(exact.string());
    std::vector<std::uint64_t> dims;
    const std::vector<double> lm = l.read_doubles("/ldos/moments", &dims);
    const std::vector<double> mu = e.read_doubles("/kpm/moments");
    ASSERT_EQ(dims, (std::vector<std::uint64_t>{192, 64}));
    EXPECT_EQ(l.read_string_attribute("/kpm", "trace"), "ldos");
    EXPECT_EQ(l.read_int64("/ldos/rows").size(), 192u);
    for (size_t n = 0; n < 64; ++n) {
        double sum = 0.0;
        for (size_t j = 0; j < 192; ++j) sum += lm[j * 64 + n];
        EXPECT_NEAR(sum, 192.0 * mu[n], 1e-13 * 192) << "n = " << n;
    }
    // Each row's LDOS is normalised per state: mu_0 = 1 and the integral of rho is 1.
    std::vector<std::uint64_t> rd;
    const std::vector<double> rho = l.read_doubles("/ldos/rho", &rd);
    const std::vector<double> energy = l.read_doubles("/ldos/energy");
    const double a = l.read_double_attribute("/kpm", "scale_a"), b = l.read_double_attribute("/kpm", "scale_b");
    for (size_t j : {0u, 77u, 191u}) {
        EXPECT_EQ(lm[j * 64], 1.0);
        EXPECT_NEAR(analysis::integral_chebyshev_grid({energy, row(rho, j, rd[1])}, a, b), 1.0, 1e-12);
    }
}

// layer:0 selects every orbital of the z = 0 sites in canonical order; the map is the sum
// over each site's 4 orbitals of rho at the map energy.
TEST(Ldos, SurfaceLayerMapIsThePerSiteSumAtTheEnergy)
{
    const fs::path out = run({"--config", kInputs + "ti_tiny.ini", "--ldos", "layer:0", "--ldos-map-energy", "0.25"},
                             "ldos_map.h5");
    const analysis::ResultReader r(out.string());
    const std::vector<std::int64_t> rows = r.read_int64("/ldos/rows");
    ASSERT_EQ(rows.size(), 4u * 4 * 4);
    // site(x, y, 0) = 3 (y + 4 x) on the 4x4x3 slab; row = o + 4 site
    EXPECT_EQ(rows[4], 4 * 3);
    EXPECT_EQ(rows[63], 3 + 4 * 3 * (3 + 4 * 3));
    std::vector<std::uint64_t> dims;
    const std::vector<double> map = r.read_doubles("/ldos_map/rho", &dims);
    ASSERT_EQ(dims, (std::vector<std::uint64_t>{4, 4}));
    const std::vector<double> mom = r.read_doubles("/ldos/moments");
    const double a = r.read_double_attribute("/kpm", "scale_a"), b = r.read_double_attribute("/kpm", "scale_b");
    const auto g = analysis::damping_factors(analysis::DampingKernel::Jackson, 64, 4.0);
    for (size_t site = 0; site < 16; ++site) {
        double sum = 0.0;
        for (size_t o = 0; o < 4; ++o) sum += analysis::reconstruct_at(row(mom, 4 * site + o, 64), g, {0.25}, a, b)[0];
        EXPECT_NEAR(map[site], sum, 1e-12) << site;
    }
    EXPECT_DOUBLE_EQ(r.read_double_attribute("/ldos_map", "energy"), 0.25);
}

// A(k, E) of the clean slab: its moments are exactly those of the 4 Nz eigenvalues of the
// Bloch Hamiltonian H_k = P^dag H P, P the N x 4Nz plane waves of models.md §4, built here
// from the dense matrix of a small lattice and diagonalised by LAPACK (independent of the
// program's own projection). Errors: eigenvalues ~ 4Nz eps ||H||, recurrence ~ n eps: 1e-12.
TEST(Spectral, CleanSlabMomentsAreThoseOfTheBlochHamiltonian)
{
    struct Case {
        std::vector<std::string> args;
        int nx, ny, s;
    };
    const std::vector<Case> cases = {
        {{"--model", "ti", "--lattice", "5x4x3", "--m", "2", "--k-points", "0,0;1,0;2,3;-1,2"}, 5, 4, 12},
        {{"--model", "ti", "--lattice", "4x4x4", "--m", "-2.5", "--k-path", "M-G-X", "--vectors", "5"}, 4, 4, 16},
        {{"--model", "graphene", "--lattice", "6x6", "--k-path", "G-K-M-G"}, 6, 6, 2},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = c.args;
        for (const char* extra : {"--moments", "48", "--energy-range", "-6:6"}) args.push_back(extra);
        const fs::path out = run(args, "spectral.h5");
        const analysis::ResultReader r(out.string());
        EXPECT_EQ(r.read_string_attribute("/kpm", "trace"), "spectral");
        const double a = r.read_double_attribute("/kpm", "scale_a"), b = r.read_double_attribute("/kpm", "scale_b");
        const std::vector<std::int64_t> mk = r.read_int64("/spectral/m");
        const std::vector<double> kk = r.read_doubles("/spectral/k");
        std::vector<std::uint64_t> dims;
        const std::vector<double> mom = r.read_doubles("/spectral/moments", &dims);
        const std::vector<double> bands = r.read_doubles("/spectral/bands");
        const size_t nk = mk.size() / 2;
        ASSERT_EQ(dims, (std::vector<std::uint64_t>{nk, 48}));

        const app::RunConfig cfg = parse(args);
        const auto model = hamiltonians::make_model(cfg.model);
        const global_index n = model->num_rows();
        const std::vector<complex_type> h = topokpm::testing::dense_matrix(*model);
        for (size_t ik = 0; ik < nk; ++ik) {
            const double k1 = 2 * M_PI * mk[2 * ik] / c.nx, k2 = 2 * M_PI * mk[2 * ik + 1] / c.ny;
            EXPECT_NEAR(kk[2 * ik], k1, 1e-15);
            EXPECT_NEAR(kk[2 * ik + 1], k2, 1e-15);
            // P[row, s] = exp(i (k1 x + k2 y)) / sqrt(Nx Ny) at row = s + S (y + Ny x)
            std::vector<complex_type> p(static_cast<size_t>(n) * c.s, 0.0);
            for (int x = 0; x < c.nx; ++x)
                for (int y = 0; y < c.ny; ++y)
                    for (int s = 0; s < c.s; ++s)
                        p[(s + c.s * (y + c.ny * x)) + n * s] = std::polar(1.0 / std::sqrt(c.nx * c.ny), k1 * x + k2 * y);
            // hp = H P, hk = P^dag H P
            std::vector<complex_type> hp(static_cast<size_t>(n) * c.s, 0.0), hk(static_cast<size_t>(c.s) * c.s, 0.0);
            for (int s = 0; s < c.s; ++s)
                for (global_index j = 0; j < n; ++j)
                    if (p[j + n * s] != 0.0)
                        for (global_index i = 0; i < n; ++i) hp[i + n * s] += h[i + n * j] * p[j + n * s];
            for (int s = 0; s < c.s; ++s)
                for (int t = 0; t < c.s; ++t)
                    for (global_index i = 0; i < n; ++i) hk[t + c.s * s] += std::conj(p[i + n * t]) * hp[i + n * s];
            // The projection is exact for the clean lattice: H P = P H_k (residual at rounding).
            for (int s = 0; s < c.s; ++s)
                for (global_index i = 0; i < n; ++i) {
                    complex_type php = 0.0;
                    for (int t = 0; t < c.s; ++t) php += p[i + n * t] * hk[t + c.s * s];
                    ASSERT_NEAR(std::abs(hp[i + n * s] - php), 0.0, 1e-13);
                }
            const std::vector<double> e = topokpm::testing::dense_eigenvalues(hk, c.s);
            const std::vector<double> ref = topokpm::testing::exact_moments(e, 48, a, b);
            for (int m = 0; m < 48; ++m) EXPECT_NEAR(mom[ik * 48 + m], ref[m], 1e-12) << "k " << ik << " n " << m;
            for (int s = 0; s < c.s; ++s) EXPECT_NEAR(bands[ik * c.s + s], e[s], 1e-12) << "band " << s;
        }
    }
}

// The strong TI (1 < m < 3) has a surface Dirac cone at G: the slab Bloch Hamiltonian of a
// thick enough slab has states deep inside the bulk gap [-1, 1] at G (|E| < 0.1 for Nz = 12)
// that the trivial phase (m = 4, gap [-1, 1] too) lacks; the bands written with A(k, E) show it.
TEST(Spectral, StrongTopologicalPhaseHasInGapSurfaceStatesAtGamma)
{
    for (const char* m : {"2", "4"}) {
        const fs::path out = run({"--model", "ti", "--lattice", "4x4x12", "--m", m, "--k-points", "0,0", "--moments", "16",
                                  "--energy-range", "-8:8"},
                                 "cone.h5");
        const analysis::ResultReader r(out.string());
        double smallest = 1e9;
        for (double e : r.read_doubles("/spectral/bands")) smallest = std::min(smallest, std::abs(e));
        if (std::string(m) == "2") EXPECT_LT(smallest, 0.1);
        else EXPECT_GT(smallest, 0.9);
    }
}

// Error bars: /kpm/moments_stderr is the standard error over the per-vector moments and
// /dos/rho_stderr the standard error over the per-vector reconstructions (spec §4 linear
// reconstruction); the stochastic moments lie within 6 standard errors of the exact ones.
TEST(ErrorBars, StandardErrorsFromPerVectorMomentsAndWithinReach)
{
    const std::string input = kInputs + "ti_tiny.ini";
    const fs::path st = run({"--config", input, "--vectors", "16", "--energy-range", "-6:6"}, "stderr.h5");
    const fs::path ex = run({"--config", input, "--trace", "exact", "--energy-range", "-6:6"}, "stderr_exact.h5");
    const analysis::ResultReader r(st.string()), e(ex.string());
    const std::vector<double> pv = r.read_doubles("/kpm/moments_per_vector");
    const std::vector<double> se = r.read_doubles("/kpm/moments_stderr");
    const std::vector<double> rho_se = r.read_doubles("/dos/rho_stderr");
    const auto ms = analysis::sample_statistics(pv, 16, 64);
    for (int n = 0; n < 64; ++n) EXPECT_NEAR(se[n], ms.stderr_[n], 1e-15) << n;
    const auto g = analysis::damping_factors(analysis::DampingKernel::Jackson, 64, 4.0);
    const double a = r.read_double_attribute("/kpm", "scale_a"), b = r.read_double_attribute("/kpm", "scale_b");
    std::vector<double> rhos;
    for (int v = 0; v < 16; ++v) {
        const auto sp = analysis::reconstruct_chebyshev_grid(row(pv, v, 64), g, 128, a, b);
        rhos.insert(rhos.end(), sp.rho.begin(), sp.rho.end());
    }
    const auto rs = analysis::sample_statistics(rhos, 16, 128);
    for (int k = 0; k < 128; ++k) EXPECT_NEAR(rho_se[k], rs.stderr_[k], 1e-13) << k;
    const std::vector<double> mu = r.read_doubles("/kpm/moments"), exact = e.read_doubles("/kpm/moments");
    for (int n = 1; n < 64; ++n) EXPECT_LE(std::abs(mu[n] - exact[n]), 6.0 * se[n] + 1e-14) << n;
}

// Disorder ensembles: realization 0 is the single run with the given seeds bit for bit
// (same scaling via --energy-range); realization k >= 1 uses splitmix64(seed, 1000 + k);
// the mean and the standard error over realizations are written.
TEST(Realizations, RealizationZeroIsTheSingleRunAndSeedsFollowTheRule)
{
    const std::string input = kInputs + "ti_tiny.ini";
    const fs::path single = run({"--config", input, "--energy-range", "-6:6"}, "single.h5");
    const fs::path ens = run({"--config", input, "--energy-range", "-6:6", "--realizations", "3"}, "ensemble.h5");
    const analysis::ResultReader s(single.string()), r(ens.string());
    const std::vector<double> one = s.read_doubles("/kpm/moments");
    std::vector<std::uint64_t> dims;
    const std::vector<double> per = r.read_doubles("/realizations/moments", &dims);
    ASSERT_EQ(dims, (std::vector<std::uint64_t>{3, 64}));
    EXPECT_EQ(row(per, 0, 64), one);
    EXPECT_NE(row(per, 1, 64), one);
    const std::vector<std::uint64_t> seeds = r.read_uint64("/realizations/disorder_seeds");
    EXPECT_EQ(seeds, (std::vector<std::uint64_t>{5, splitmix64(5, 1001), splitmix64(5, 1002)}));
    const std::vector<std::uint64_t> vseeds = r.read_uint64("/realizations/vector_seeds");
    EXPECT_EQ(vseeds, (std::vector<std::uint64_t>{1, splitmix64(1, 1001), splitmix64(1, 1002)}));
    const std::vector<double> mean = r.read_doubles("/kpm/moments");
    const auto st = analysis::sample_statistics(per, 3, 64);
    const std::vector<double> se = r.read_doubles("/kpm/moments_stderr");
    for (int n = 0; n < 64; ++n) {
        EXPECT_NEAR(mean[n], st.mean[n], 1e-15);
        EXPECT_NEAR(se[n], st.stderr_[n], 1e-15);
    }
    EXPECT_TRUE(r.exists("/dos/rho_spread"));
    EXPECT_EQ(r.read_int64_attribute("/kpm", "num_realizations"), 3);
}

// Restart refusals happen before anything runs, with a message that lists every
// difference or says why the file is unusable.
TEST(Restart, MismatchedParametersAndCorruptFilesAreRefused)
{
    const app::RunConfig a = parse({"--config", kInputs + "ti_tiny.ini"});
    app::RunConfig b = a;
    b.kpm.num_moments = 128;
    b.model.disorder = 0.25;
    b.runtime.threads = a.runtime.threads + 1;  // does not change the moments: not a difference
    const auto diff = app::parameter_differences(app::run_parameters(a, {}, {}), app::run_parameters(b, {}, {}));
    ASSERT_EQ(diff.size(), 2u);
    EXPECT_NE(std::string(diff[0] + diff[1]).find("--moments: checkpoint 64, this run 128"), std::string::npos);
    EXPECT_NE(std::string(diff[0] + diff[1]).find("--disorder: checkpoint"), std::string::npos);

    const fs::path junk = scratch("junk.checkpoint.h5");
    std::ofstream(junk) << "not an HDF5 file";
    try {
        app::run_dos(parse({"--config", kInputs + "ti_tiny.ini", "--restart", junk.string(), "--output",
                            scratch("never.h5").string()}));
        ADD_FAILURE() << "a corrupt checkpoint was accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("not a usable topokpm checkpoint"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(scratch("never.h5")));
    // A result file is not a checkpoint.
    const fs::path result = run({"--config", kInputs + "ti_tiny.ini"}, "result.h5");
    EXPECT_THROW(app::read_checkpoint_header(result.string()), InputError);
}

TEST(Selections, ParseAndRefuseBadInput)
{
    const app::RunConfig cfg = parse({"--config", kInputs + "ti_tiny.ini"});
    const auto model = hamiltonians::make_model(cfg.model);
    EXPECT_EQ(app::resolve_ldos_selection("0,5,8-10", *model).rows, (std::vector<global_index>{0, 5, 8, 9, 10}));
    EXPECT_EQ(app::resolve_ldos_selection("site:1,2,0", *model).rows,
              (std::vector<global_index>{72, 73, 74, 75}));  // site = 0 + 3 (2 + 4 * 1) = 18
    EXPECT_THROW(app::resolve_ldos_selection("layer:3", *model), InputError);
    EXPECT_THROW(app::resolve_ldos_selection("192", *model), InputError);
    EXPECT_THROW(app::resolve_ldos_selection("rows:a", *model), InputError);
    const auto path = app::resolve_momenta("", "M-G-X", *model);
    EXPECT_EQ(path.momenta.size(), 5u);  // (2,2) (1,1) (0,0) (1,0) (2,0)
    EXPECT_EQ(path.ticks, (std::vector<std::int64_t>{0, 2, 4}));
    EXPECT_EQ(path.tick_labels, "M,G,X");
    EXPECT_NEAR(path.path_distance.back(), M_PI * std::sqrt(2.0) + M_PI, 1e-14);
    EXPECT_THROW(app::resolve_momenta("", "G-K", *model), InputError);  // K is graphene's
    EXPECT_THROW(app::resolve_momenta("1;2", "", *model), InputError);
}

// The LDOS rows a rank writes under mpirun (app/run/run_output.hpp, ldos_share): for ranks
// that hold several runs of rows (a 2-D decomposition) and a selection in any order with
// repeats, every selection index is written by exactly one rank, the one holding its row,
// and each rank's runs are its indices, increasing, with consecutive ones merged.
TEST(LdosShare, EveryIndexWrittenOnceByTheRankHoldingItsRow)
{
    const std::vector<global_index> rows{40, 3, 3, 17, 18, 19, 0, 55, 20, 21, 8};
    using Runs = std::vector<std::pair<global_index, global_index>>;
    const std::vector<Runs> ranks{{{0, 4}, {16, 20}}, {{4, 16}, {40, 44}}, {{20, 40}, {44, 60}}};
    std::vector<int> writer(rows.size(), -1);
    for (size_t q = 0; q < ranks.size(); ++q) {
        const app::LdosShare share = app::ldos_share(rows, ranks[q]);
        std::vector<std::size_t> from_runs;
        std::uint64_t end = 0;
        for (const auto& run : share.runs) {
            EXPECT_GT(run.count, 0u);
            EXPECT_TRUE(from_runs.empty() || run.begin > end) << "runs not increasing or not merged";
            for (std::uint64_t i = run.begin; i < run.begin + run.count; ++i) from_runs.push_back(i);
            end = run.begin + run.count;
        }
        EXPECT_EQ(from_runs, share.slots);
        for (const std::size_t i : share.slots) {
            EXPECT_EQ(writer[i], -1) << "index " << i << " written twice";
            writer[i] = static_cast<int>(q);
            bool held = false;
            for (const auto& [b, e] : ranks[q]) held = held || (rows[i] >= b && rows[i] < e);
            EXPECT_TRUE(held) << "rank " << q << " writes row " << rows[i] << " it does not hold";
        }
    }
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_NE(writer[i], -1) << "index " << i << " written by no rank";
    // Rank 1 holds rows 8 (index 10) and 40 (index 0); rank 0: 3, 3, 17, 18, 19, 0 = indices 1-6.
    const app::LdosShare r0 = app::ldos_share(rows, ranks[0]);
    ASSERT_EQ(r0.runs.size(), 1u);
    EXPECT_EQ(r0.runs[0].begin, 1u);
    EXPECT_EQ(r0.runs[0].count, 6u);
}
