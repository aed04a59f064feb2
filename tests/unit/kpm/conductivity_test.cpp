// The Kubo-Bastin conductivity of models.md §9 on a small disordered graphene sheet in a
// magnetic field, against a dense reference the test builds itself: H and the velocities
// v_a = i [H, r_a] as dense matrices (from the model's rows), H = U diag(E) U^H by LAPACK,
// and
//     Gamma_nm = (1/N) sum_kl (v_a)_kl T_n(x_l) (v_b)_lk T_m(x_k),   x = (E - b) / a,
// in the eigenbasis (no Chebyshev recurrence, no sparse operator). The library's moments
// come from the sparse operators through numerics/kpm/two_index.
#include <gtest/gtest.h>

#include <lapacke.h>

#include <array>
#include <cmath>
#include <complex>
#include <memory>
#include <vector>

#include "hamiltonians/model.hpp"
#include "hamiltonians/velocity.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/kpm/two_index.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "tests/support/dense_oracle.hpp"

namespace topokpm {
namespace {

using cplx = std::complex<double>;

/// A 6x6 graphene sheet, PHI = 1/12 (3 flux quanta through the torus), disorder 1: no
/// symmetry makes any entry of Gamma vanish.
struct Sheet {
    hamiltonians::ModelParams params;
    std::unique_ptr<hamiltonians::Model> model;
    std::array<std::unique_ptr<hamiltonians::VelocityRows>, 2> velocity_rows;
    std::array<numerics::BuiltOperator, 2> velocity;
    numerics::BuiltOperator h;
    numerics::KpmScaling scaling;
    global_index n = 0;
    // dense reference
    std::vector<double> energies;              // eigenvalues of H
    std::array<std::vector<cplx>, 2> v_eigen;  // U^H v_a U, column-major

    explicit Sheet(std::int64_t flux_numerator = 1)
    {
        params.name = "graphene";
        params.nx = params.ny = 6;
        params.flux = hamiltonians::MagneticFlux{flux_numerator, 12};
        params.disorder = 1.0;
        params.disorder_seed = 3;
        model = hamiltonians::make_model(params);
        n = model->num_rows();
        numerics::OperatorSpec crs;
        crs.kind = numerics::OperatorKind::Crs;
        h = numerics::make_operator(crs, hamiltonians::operator_source(*model));
        for (int a = 0; a < 2; ++a) {
            velocity_rows[a] = std::make_unique<hamiltonians::VelocityRows>(*model, a);
            numerics::OperatorSource source;
            source.rows = velocity_rows[a].get();
            source.estimated_nonzeros = static_cast<double>(velocity_rows[a]->num_nonzeros(0, n));
            velocity[a] = numerics::make_operator(crs, source);
        }
        // Dense H = U diag(E) U^H.
        std::vector<cplx> u = testing::dense_matrix(*model);
        energies.resize(static_cast<size_t>(n));
        const lapack_int info = LAPACKE_zheev(LAPACK_COL_MAJOR, 'V', 'U', static_cast<lapack_int>(n),
                                              reinterpret_cast<lapack_complex_double*>(u.data()),
                                              static_cast<lapack_int>(n), energies.data());
        EXPECT_EQ(info, 0);
        scaling = numerics::kpm_scaling({energies.front() - 0.1, energies.back() + 0.1}, 0.01);
        for (int a = 0; a < 2; ++a) {
            const std::vector<cplx> v = testing::dense_matrix(*velocity_rows[a]);
            std::vector<cplx> vu(v.size()), out(v.size());
            for (global_index j = 0; j < n; ++j)  // v U
                for (global_index l = 0; l < n; ++l)
                    for (global_index i = 0; i < n; ++i) vu[i + j * n] += v[i + l * n] * u[l + j * n];
            for (global_index j = 0; j < n; ++j)  // U^H (v U)
                for (global_index l = 0; l < n; ++l)
                    for (global_index i = 0; i < n; ++i) out[i + j * n] += std::conj(u[l + i * n]) * vu[l + j * n];
            v_eigen[a] = std::move(out);
        }
    }

    /// Gamma [M x M] row-major of component (a, b) from the eigenbasis.
    std::vector<cplx> dense_gamma(int a, int b, int m) const
    {
        std::vector<double> t(static_cast<size_t>(m) * n);  // t[k m + j] = T_j(x_k)
        for (global_index k = 0; k < n; ++k) {
            const double x = (energies[k] - scaling.b) / scaling.a;
            for (int j = 0; j < m; ++j) t[k * m + j] = std::cos(j * std::acos(x));
        }
        std::vector<cplx> gamma(static_cast<size_t>(m) * m);
        for (global_index k = 0; k < n; ++k)
            for (global_index l = 0; l < n; ++l) {
                const cplx p = v_eigen[a][k + l * n] * v_eigen[b][l + k * n];  // (v_a)_kl (v_b)_lk
                for (int i = 0; i < m; ++i) {
                    const cplx pi = p * t[l * m + i];
                    for (int j = 0; j < m; ++j) gamma[static_cast<size_t>(i) * m + j] += pi * t[k * m + j];
                }
            }
        for (cplx& g : gamma) g /= static_cast<double>(n);
        return gamma;
    }

    std::vector<cplx> moments(int a, int b, const numerics::StartVectorPlan& plan, int m, int width) const
    {
        numerics::TwoIndexTrace t;
        t.h = h.op.get();
        t.va = velocity[a].op.get();
        t.vb = velocity[b].op.get();
        t.plan = &plan;
        t.num_moments = m;
        t.block_width = width;
        t.scaling = scaling;
        return numerics::two_index_moments(t);
    }
};

}  // namespace

// The exact trace is Tr[v_a T_n v_b T_m] / N. Both sides sum the same terms with rounding
// of order (M + N) eps ||v_a|| ||v_b|| (||v|| <= 3 |t| |bond| + disorder-free: 3 here), about
// 1e-12; 1e-10 leaves room for the eigenvectors' orthogonality (N eps).
TEST(TwoIndexMoments, ExactTraceIsTheDenseTrace)
{
    const Sheet sheet;
    const int m = 24;
    for (const auto& [a, b] : {std::array<int, 2>{0, 0}, {0, 1}, {1, 0}, {1, 1}}) {
        const std::vector<cplx> ref = sheet.dense_gamma(a, b, m);
        for (const int width : {1, 8}) {
            const std::vector<cplx> got = sheet.moments(a, b, *numerics::exact_trace_plan(sheet.n), m, width);
            ASSERT_EQ(got.size(), ref.size());
            double worst = 0.0, largest = 0.0;
            for (size_t i = 0; i < ref.size(); ++i) {
                worst = std::max(worst, std::abs(got[i] - ref[i]));
                largest = std::max(largest, std::abs(ref[i]));
            }
            EXPECT_LE(worst, 1e-10) << "component " << a << b << " width " << width;
            EXPECT_GT(largest, 0.1) << "a test that can fail: Gamma is not small";
        }
    }
}

// The stochastic trace is (1/R) sum_r <r|v_a T_n v_b T_m|r> / N over the random-phase
// vectors of models.md §4 (the DOS's), also when W does not divide R (a padded last block).
TEST(TwoIndexMoments, StochasticTraceAveragesTheRandomVectors)
{
    const Sheet sheet;
    const int m = 12, r = 5;
    const std::vector<cplx> va = testing::dense_matrix(*sheet.velocity_rows[0]);
    const std::vector<cplx> vb = testing::dense_matrix(*sheet.velocity_rows[1]);
    const std::vector<cplx> h = testing::dense_matrix(*sheet.model);
    const global_index n = sheet.n;
    auto multiply = [&](const std::vector<cplx>& a, const std::vector<cplx>& x) {
        std::vector<cplx> y(static_cast<size_t>(n));
        for (global_index j = 0; j < n; ++j)
            for (global_index i = 0; i < n; ++i) y[i] += a[i + j * n] * x[j];
        return y;
    };
    // T_n(Ht) x by the dense three-term recurrence.
    auto chebyshev = [&](const std::vector<cplx>& x) {
        std::vector<std::vector<cplx>> t{x};
        std::vector<cplx> hx = multiply(h, x);
        for (global_index i = 0; i < n; ++i) hx[i] = (hx[i] - sheet.scaling.b * x[i]) / sheet.scaling.a;
        t.push_back(hx);
        while (static_cast<int>(t.size()) < m) {
            std::vector<cplx> next = multiply(h, t.back());
            for (global_index i = 0; i < n; ++i)
                next[i] = 2.0 * (next[i] - sheet.scaling.b * t.back()[i]) / sheet.scaling.a - t[t.size() - 2][i];
            t.push_back(next);
        }
        return t;
    };
    std::vector<cplx> ref(static_cast<size_t>(m) * m);
    BlockVector vectors(n, r);
    numerics::fill_random_phase_vectors(vectors, 7, 0, n);
    for (int c = 0; c < r; ++c) {
        std::vector<cplx> x(static_cast<size_t>(n));
        for (global_index i = 0; i < n; ++i) x[i] = vectors(i, c);
        const auto tx = chebyshev(x);
        const auto left = chebyshev(multiply(va, x));
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < m; ++j) {
                const std::vector<cplx> right = multiply(vb, tx[j]);
                cplx dot = 0.0;
                for (global_index k = 0; k < n; ++k) dot += std::conj(left[i][k]) * right[k];
                ref[static_cast<size_t>(i) * m + j] += dot / (double(r) * double(n));
            }
    }
    const auto plan = numerics::random_phase_plan(n, r, 7);
    for (const int width : {2, 5}) {
        const std::vector<cplx> got = sheet.moments(0, 1, *plan, m, width);
        double worst = 0.0;
        for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(got[i] - ref[i]));
        EXPECT_LE(worst, 1e-11) << "width " << width;
    }
}

// The memory of a two-index trace: M kept blocks, a batch of left vectors and four more.
TEST(TwoIndexMoments, MemoryModel)
{
    EXPECT_EQ(numerics::two_index_bytes(1000, 512, 4), (512 + 32 + 4) * 1000.0 * 4 * 16);
    EXPECT_EQ(numerics::two_index_bytes(10, 8, 1), (8 + 8 + 4) * 10.0 * 16);
}

}  // namespace topokpm
