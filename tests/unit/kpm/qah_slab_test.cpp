// The quantum anomalous Hall slab of docs/physics.md: a ti slab (models.md §2) with the
// exchange mass M_ex s0 (x) sz on both z faces. Three independent numbers:
//
//   C       the Chern number of the slab's occupied Bloch bands, from the test's own Bloch
//           Hamiltonian H(k) (built here from the Dirac matrices of models.md §2, not from the
//           library), by the lattice method of Fukui, Hatsugai and Suzuki (exactly an integer
//           wherever the gap is open), in the convention C = (1/2pi) int Omega_xy,
//           Omega = d_kx A_y - d_ky A_x, A = i <u|grad_k u>;
//   sigma_L the Kubo formula of the same bands summed over the L x L momenta of the L x L
//           torus (sum_k Omega(k) (2 pi / L)^2 / (2 pi), Omega from <n|dH/dk|m>): what an exact
//           trace on that torus converges to as the kernel narrows;
//   sigma   the library's Kubo-Bastin sigma_xy(mu) (numerics/kpm/two_index, analysis/
//           conductivity) on the real-space L x L x Nz slab, exact trace, Jackson kernel.
//
// Parameters: Nz = 3, M_ex = 1 (gap [-0.62, 0.62] t from the Bloch bands), L = 8: sigma_L =
// 1.022, within 0.03 of C (the Riemann sum of a smooth Omega on an 8 x 8 grid), and M = 128.
#include <gtest/gtest.h>

#include <lapacke.h>

#include <array>
#include <cmath>
#include <complex>
#include <memory>
#include <vector>

#include "analysis/conductivity.hpp"
#include "hamiltonians/model.hpp"
#include "hamiltonians/velocity.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/two_index.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "tests/unit/hamiltonians/spec_reference.hpp"

namespace topokpm {
namespace {

using cplx = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;
constexpr int kNz = 3;
constexpr int kDim = 4 * kNz;
constexpr int kOcc = 2 * kNz;  // half filling: the gap at E = 0

/// Column-major kDim x kDim matrix.
using Matrix = std::vector<cplx>;

/// The slab's Bloch Hamiltonian H(k) of models.md §2 (t = 1, m = 2, V = 0), x and y
/// periodic, z open, plus M_ex s0 (x) sz on the layers 0 and Nz - 1 (derivative = 0, 1:
/// dH/dk_x, dH/dk_y instead). Bloch phases: psi(n) = e^{i k.n} u, so the block T_j from site n
/// to n + e_j enters as T_j e^{-i k_j} and T_j^dag as T_j^dag e^{+i k_j}.
Matrix bloch(double kx, double ky, double exchange, int derivative = -1)
{
    const auto g = testing::spec::dirac();
    Matrix h(kDim * kDim);
    auto at = [&](int r, int c) -> cplx& { return h[static_cast<std::size_t>(r + kDim * c)]; };
    const double k[2] = {kx, ky};
    for (int z = 0; z < kNz; ++z) {
        const int b = 4 * z;
        for (int j = 1; j <= 2; ++j) {
            if (derivative >= 0 && derivative != j - 1) continue;
            const auto t = testing::spec::hopping_block(j, 1.0);
            const cplx forward = std::polar(1.0, -k[j - 1]), backward = std::conj(forward);
            // d/dk of e^{-ik} is -i e^{-ik}, of e^{ik} is i e^{ik}.
            const cplx f = derivative >= 0 ? cplx(0.0, -1.0) * forward : forward;
            const cplx bw = derivative >= 0 ? cplx(0.0, 1.0) * backward : backward;
            for (int r = 0; r < 4; ++r)
                for (int c = 0; c < 4; ++c) at(b + r, b + c) += t[r][c] * f + std::conj(t[c][r]) * bw;
        }
        if (derivative >= 0) continue;
        for (int o = 0; o < 4; ++o) {
            at(b + o, b + o) += 2.0 * g[1][o][o];
            if (z == 0 || z == kNz - 1) at(b + o, b + o) += o % 2 == 0 ? exchange : -exchange;
        }
        if (z + 1 < kNz) {
            const auto tz = testing::spec::hopping_block(3, 1.0);
            for (int r = 0; r < 4; ++r)
                for (int c = 0; c < 4; ++c) {
                    at(b + 4 + r, b + c) += tz[r][c];  // column layer z, row layer z + 1
                    at(b + r, b + 4 + c) += std::conj(tz[c][r]);
                }
        }
    }
    return h;
}

/// Eigenvalues (ascending) and eigenvectors (columns) of H(k).
std::pair<std::vector<double>, Matrix> eigen(double kx, double ky, double exchange)
{
    Matrix u = bloch(kx, ky, exchange);
    std::vector<double> e(kDim);
    EXPECT_EQ(LAPACKE_zheev(LAPACK_COL_MAJOR, 'V', 'U', kDim, reinterpret_cast<lapack_complex_double*>(u.data()), kDim,
                            e.data()),
              0);
    return {e, u};
}

/// det(U_a^H U_b) over the occupied columns: the link variable before normalisation.
cplx overlap_det(const Matrix& a, const Matrix& b)
{
    std::vector<cplx> s(kOcc * kOcc);
    for (int i = 0; i < kOcc; ++i)
        for (int j = 0; j < kOcc; ++j)
            for (int r = 0; r < kDim; ++r) s[i + kOcc * j] += std::conj(a[r + kDim * i]) * b[r + kDim * j];
    std::vector<lapack_int> piv(kOcc);
    EXPECT_EQ(LAPACKE_zgetrf(LAPACK_COL_MAJOR, kOcc, kOcc, reinterpret_cast<lapack_complex_double*>(s.data()), kOcc,
                             piv.data()),
              0);
    cplx det = 1.0;
    for (int i = 0; i < kOcc; ++i) det *= (piv[i] != i + 1 ? -1.0 : 1.0) * s[i + kOcc * i];
    return det;
}

/// The Fukui-Hatsugai-Suzuki Chern number on an n x n grid; also the smallest direct gap.
/// The product of the four links around a plaquette is exp(-i Berry phase) for A = i<u|du>,
/// hence the minus sign.
double chern_number(double exchange, int n, double* gap)
{
    std::vector<Matrix> u(static_cast<std::size_t>(n) * n);
    *gap = 1e300;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            auto [e, v] = eigen(2 * kPi * i / n, 2 * kPi * j / n, exchange);
            *gap = std::min(*gap, e[kOcc] - e[kOcc - 1]);
            u[static_cast<std::size_t>(i * n + j)] = std::move(v);
        }
    auto at = [&](int i, int j) -> const Matrix& { return u[static_cast<std::size_t>((i % n) * n + (j % n))]; };
    double sum = 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            sum += std::arg(overlap_det(at(i, j), at(i + 1, j)) * overlap_det(at(i + 1, j), at(i + 1, j + 1)) *
                            overlap_det(at(i + 1, j + 1), at(i, j + 1)) * overlap_det(at(i, j + 1), at(i, j)));
    return -sum / (2 * kPi);
}

/// sum over the L x L torus momenta of Omega(k) (2 pi / L)^2 / (2 pi), Omega = -2 Im sum over
/// occupied n, empty m of <n|dH/dkx|m><m|dH/dky|n> / (E_m - E_n)^2.
double torus_kubo(double exchange, int l)
{
    double sum = 0.0;
    for (int i = 0; i < l; ++i)
        for (int j = 0; j < l; ++j) {
            const double kx = 2 * kPi * i / l, ky = 2 * kPi * j / l;
            const auto [e, u] = eigen(kx, ky, exchange);
            const Matrix dx = bloch(kx, ky, exchange, 0), dy = bloch(kx, ky, exchange, 1);
            auto element = [&](const Matrix& d, int a, int b) {  // <a| d |b>
                cplx s = 0.0;
                for (int r = 0; r < kDim; ++r)
                    for (int c = 0; c < kDim; ++c) s += std::conj(u[r + kDim * a]) * d[r + kDim * c] * u[c + kDim * b];
                return s;
            };
            for (int n = 0; n < kOcc; ++n)
                for (int m = kOcc; m < kDim; ++m)
                    sum += -2.0 * (element(dx, n, m) * element(dy, m, n)).imag() / ((e[m] - e[n]) * (e[m] - e[n]));
        }
    return sum * 2 * kPi / (double(l) * l);
}

/// The library's sigma_xy(mu) of the l x l x Nz slab: exact trace, M moments, Jackson.
analysis::Spectrum library_sigma(double exchange, int l, int m)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = p.ny = l;
    p.nz = kNz;
    p.boundary = "ppo";
    p.exchange_mass = exchange;
    const auto model = hamiltonians::make_model(p);
    const global_index n = model->num_rows();
    numerics::OperatorSpec crs;
    crs.kind = numerics::OperatorKind::Crs;
    const numerics::BuiltOperator h = numerics::make_operator(crs, hamiltonians::operator_source(*model));
    std::array<std::unique_ptr<hamiltonians::VelocityRows>, 2> rows;
    std::array<numerics::BuiltOperator, 2> v;
    for (int a = 0; a < 2; ++a) {
        rows[a] = std::make_unique<hamiltonians::VelocityRows>(*model, a);
        numerics::OperatorSource source;
        source.rows = rows[a].get();
        source.estimated_nonzeros = static_cast<double>(model->estimated_nonzeros());
        v[a] = numerics::make_operator(crs, source);
    }
    const SpectralBounds bounds = gershgorin_bounds(*model);
    const auto plan = numerics::exact_trace_plan(n);
    numerics::TwoIndexTrace t;
    t.h = h.op.get();
    t.va = v[0].op.get();
    t.vb = v[1].op.get();
    t.plan = plan.get();
    t.num_moments = m;
    t.block_width = 16;
    t.scaling = numerics::kpm_scaling(bounds, 0.01);
    const std::vector<cplx> gamma = numerics::two_index_moments(t).gamma;
    analysis::ConductivityGridInput in;
    in.gamma = &gamma;
    in.num_moments = m;
    in.damping = analysis::damping_factors(analysis::DampingKernel::Jackson, m, 0.0);
    in.num_points = 4 * m;
    in.scale_a = t.scaling.a;
    in.scale_b = t.scaling.b;
    in.lower = bounds.lower;
    in.upper = bounds.upper;
    in.rows_per_measure = double(n) / hamiltonians::conductivity_measure(*model).value;
    return analysis::reconstruct_conductivity(in);
}

}  // namespace

// The Bloch bands alone: an integer Chern number +-1 whose sign follows M_ex, with the gap
// open on the whole grid (without the exchange the surface cones close it: no integer).
TEST(QahSlab, ExchangeMassGivesChernNumberOne)
{
    for (const double exchange : {1.0, -1.0, 0.4}) {
        double gap = 0.0;
        const double c = chern_number(exchange, 24, &gap);
        EXPECT_GT(gap, 0.5) << "M_ex " << exchange;
        EXPECT_NEAR(c, exchange > 0 ? 1.0 : -1.0, 1e-9) << "M_ex " << exchange;
    }
    double gap = 0.0;
    chern_number(0.0, 24, &gap);
    EXPECT_LT(gap, 1e-8) << "the surface Dirac cones of the clean slab touch at k = 0";
}

// The library's Kubo-Bastin sigma_xy inside the gap equals the torus' Kubo sum, which is
// within 0.03 of C: the quantized anomalous Hall plateau, and it flips with M_ex (time
// reversal maps M_ex to -M_ex). Tolerance: the Jackson kernel broadens each level by
// pi a / M = 0.13 t (a = 5.3 t, M = 128); at |mu| <= 0.1 t the band edges (+-0.62 t) are
// >= 0.52 t away, and the broadened edges' share of the Bastin integrand is of order
// (0.13 / 0.52)^2 = 0.06. Measured: 1.0440 against sigma_L = 1.0223.
TEST(QahSlab, KuboBastinPlateauIsTheChernNumber)
{
    constexpr int kL = 8, kM = 128;
    const double sigma_l = torus_kubo(1.0, kL);
    EXPECT_NEAR(sigma_l, 1.0, 0.03);
    for (const double exchange : {1.0, -1.0}) {
        const analysis::Spectrum s = library_sigma(exchange, kL, kM);
        int checked = 0;
        for (std::size_t j = 0; j < s.energy.size(); ++j) {
            if (std::abs(s.energy[j]) > 0.1) continue;
            EXPECT_NEAR(s.rho[j], exchange > 0 ? sigma_l : -sigma_l, 0.06) << "M_ex " << exchange << ", mu " << s.energy[j];
            ++checked;
        }
        EXPECT_GE(checked, 4);
    }
}

}  // namespace topokpm
