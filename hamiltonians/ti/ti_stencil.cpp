#include "hamiltonians/ti/ti_stencil.hpp"

#include <utility>

namespace topokpm::hamiltonians::ti {

namespace {

using Mat2 = std::array<std::array<complex_type, 2>, 2>;
using Mat4 = std::array<std::array<complex_type, 4>, 4>;

/// (A (x) B)[2 tau + s, 2 tau' + s'] = A[tau, tau'] B[s, s'] (models.md §2).
Mat4 kron(const Mat2& a, const Mat2& b)
{
    Mat4 r{};
    for (int tau = 0; tau < 2; ++tau)
        for (int s = 0; s < 2; ++s)
            for (int taup = 0; taup < 2; ++taup)
                for (int sp = 0; sp < 2; ++sp) r[2 * tau + s][2 * taup + sp] = a[tau][taup] * b[s][sp];
    return r;
}

/// The Dirac matrices G1..G4 of models.md §2 (index 0 = G1).
std::array<Mat4, 4> dirac_matrices()
{
    const complex_type i(0.0, 1.0);
    const Mat2 s0{{{1.0, 0.0}, {0.0, 1.0}}};
    const Mat2 sx{{{0.0, 1.0}, {1.0, 0.0}}};
    const Mat2 sy{{{0.0, -i}, {i, 0.0}}};
    const Mat2 sz{{{1.0, 0.0}, {0.0, -1.0}}};
    return {kron(sz, s0), kron(sx, sx), kron(sx, sy), kron(sx, sz)};
}

/// -0.0 -> +0.0 in both parts, so stored values do not depend on how a zero part arose.
complex_type canonical_zeros(complex_type v) { return {v.real() + 0.0, v.imag() + 0.0}; }

}  // namespace

TiStencil::TiStencil(const ModelParams& p)
    : extent_{p.nx, p.ny, p.nz},
      periodic_{p.boundary[0] == 'p', p.boundary[1] == 'p', p.boundary[2] == 'p'},
      stride_{global_index(p.ny) * p.nz, global_index(p.nz), 1},
      num_sites_(global_index(p.nx) * p.ny * p.nz),
      m_(p.m),
      exchange_mass_(p.exchange_mass),
      onsite_(p),
      flux_(p.flux),
      gauge_(p.flux, p.ny, 1)
{
    const std::array<Mat4, 4> g = dirac_matrices();
    const complex_type i(0.0, 1.0);
    for (int o = 0; o < 4; ++o) g1_diag_[o] = g[0][o][o].real();

    // T_j = -t (G1 - i G_{j+1}) / 2. An entry is structurally non-zero when G1 or
    // G_{j+1} is non-zero there (G1 is diagonal, G2..G4 off-diagonal, so they never
    // cancel); t != 0 is enforced by make_model().
    for (int j = 0; j < 3; ++j) {
        Mat4 tj{};
        std::array<std::array<bool, 4>, 4> structural{};
        for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 4; ++b) {
                tj[a][b] = canonical_zeros(-p.t * (g[0][a][b] - i * g[j + 1][a][b]) / 2.0);
                structural[a][b] = g[0][a][b] != 0.0 || g[j + 1][a][b] != 0.0;
            }
        auto& forward = block_rows_[1 + 2 * j];   // T_j: row site = column site + e_j
        auto& backward = block_rows_[2 + 2 * j];  // T_j^dag: row site = column site - e_j
        for (int o = 0; o < 4; ++o)
            for (int b = 0; b < 4; ++b) {
                if (structural[o][b]) {
                    BlockRow& r = forward[o];
                    r.col[r.count] = b;
                    r.val[r.count++] = tj[o][b];
                }
                if (structural[b][o]) {
                    BlockRow& r = backward[o];
                    r.col[r.count] = b;
                    r.val[r.count++] = canonical_zeros(std::conj(tj[b][o]));
                }
            }
    }
}

int TiStencil::blocks(global_index site, Block* out) const
{
    const global_index z = site % extent_[2];
    const global_index rest = site / extent_[2];
    const std::array<global_index, 3> c{rest / extent_[1], rest % extent_[1], z};

    int count = 0;
    out[count++] = {site, BlockKind::onsite};
    // The neighbour at c + delta e_d, `wraps` periods of the lattice away from its own site
    // column_site; in a field its Peierls phase (models.md §9; a1 = x, a2 = y, z bonds none).
    const auto neighbour = [&](global_index column_site, int kind, int d, int delta, int wraps) {
        Block& b = out[count++];
        b = {column_site, BlockKind(kind)};
        if (!gauge_.active() || d == 2) return;
        const std::int64_t column_x = d == 0 ? c[0] + delta - wraps * std::int64_t(extent_[0]) : c[0];
        b.phase = gauge_.hop(c[1], d == 0 ? delta : 0, d == 1 ? delta : 0, column_x, d == 1 ? wraps : 0);
    };
    for (int d = 0; d < 3; ++d) {
        const global_index n = extent_[d], s = stride_[d];
        // Column site n - e_d couples with T_d (this site is its +e_d neighbour).
        if (c[d] > 0)
            neighbour(site - s, 1 + 2 * d, d, -1, 0);
        else if (periodic_[d])
            neighbour(site + (n - 1) * s, 1 + 2 * d, d, -1, -1);
        // Column site n + e_d couples with T_d^dag.
        if (c[d] < n - 1)
            neighbour(site + s, 2 + 2 * d, d, 1, 0);
        else if (periodic_[d])
            neighbour(site - (n - 1) * s, 2 + 2 * d, d, 1, 1);
    }
    // Insertion sort by column site: wrap-around makes the order depend on the position.
    // Periodic extents >= 3 guarantee distinct sites (make_model()).
    for (int a = 1; a < count; ++a) {
        const Block b = out[a];
        int k = a;
        for (; k > 0 && out[k - 1].site > b.site; --k) out[k] = out[k - 1];
        out[k] = b;
    }
    return count;
}

int TiStencil::row_entries(const Block* blocks, int num_blocks, int orbital, double potential,
                           global_index* cols, complex_type* vals) const
{
    int len = 0;
    for (int b = 0; b < num_blocks; ++b) {
        const global_index first_col = num_orbitals * blocks[b].site;
        if (blocks[b].kind == BlockKind::onsite) {
            // V_n G0 + m G1: V_n first, then the mass term (models.md §2 evaluation order);
            // on a z face with an exchange mass V_n + M_ex sz first (block_stencil()'s potential).
            const double v = has_exchange() ? potential + exchange(blocks[b].site, orbital) : potential;
            cols[len] = first_col + orbital;
            vals[len++] = complex_type(v + m_ * g1_diag_[orbital], 0.0);
            continue;
        }
        const BlockRow& r = block_rows_[static_cast<int>(blocks[b].kind)][orbital];
        const complex_type f = blocks[b].phase;
        for (int e = 0; e < r.count; ++e) {
            cols[len] = first_col + r.col[e];
            // The Peierls factor written out (a c - b d, a d + b c), so that the reverse hop,
            // conj(value) conj(f), is the exact conjugate; without a field f = 1 is not applied.
            const complex_type v = r.val[e];
            vals[len++] = gauge_.active() ? canonical_zeros({v.real() * f.real() - v.imag() * f.imag(),
                                                             v.real() * f.imag() + v.imag() * f.real()})
                                          : v;
        }
    }
    return len;
}

bool TiStencil::inside_dot(int x, int y) const
{
    const ModelParams& dots = onsite_.params();
    if (dots.dot_period == 0) return false;
    const double centre = (dots.dot_period - 1) / 2.0;
    const double dx = (x % dots.dot_period) - centre;
    const double dy = (y % dots.dot_period) - centre;
    return dx * dx + dy * dy < dots.dot_radius * dots.dot_radius + 1e-9;
}

double TiStencil::potential(global_index site) const
{
    const global_index z = site % extent_[2];
    const global_index rest = site / extent_[2];
    const int x = static_cast<int>(rest / extent_[1]);
    const int y = static_cast<int>(rest % extent_[1]);
    // V_d (1 inside) (1 if z < dot_depth) = V_d (1 if both): the same double, zeros' signs included.
    return onsite_(inside_dot(x, y) && z < onsite_.params().dot_depth, static_cast<std::uint64_t>(site));
}

double TiStencil::exchange(global_index site, int orbital) const
{
    const global_index z = site % extent_[2];
    if (exchange_mass_ == 0.0 || (z != 0 && z != extent_[2] - 1)) return 0.0;
    return orbital % 2 == 0 ? exchange_mass_ : -exchange_mass_;  // s0 (x) sz, o = 2 tau + s
}

global_index TiStencil::num_nonzeros() const
{
    // 4 diagonal entries per site; every neighbour block adds 2 entries to each of the
    // 4 rows. Along a line of n sites there are 2n neighbour relations (periodic) or
    // 2(n - 1) (open).
    global_index total = num_orbitals * num_sites_;
    for (int d = 0; d < 3; ++d) {
        const global_index lines = num_sites_ / extent_[d];
        const global_index per_line = periodic_[d] ? 2 * global_index(extent_[d]) : 2 * global_index(extent_[d] - 1);
        total += 8 * lines * per_line;
    }
    return total;
}

BlockStencil TiStencil::block_stencil() const
{
    constexpr int nb = num_orbitals;
    BlockStencil s;
    s.name = "ti";
    s.nx = extent_[0];
    s.ny = extent_[1];
    s.nz = extent_[2];
    s.orbitals = nb;
    s.periodic = periodic_;
    // The potential goes on the diagonal separately, so on-site holds the mass term only;
    // V_n + m G1[o, o] is then evaluated in the order of row_entries().
    s.onsite.assign(nb * nb, complex_type(0.0, 0.0));
    for (int o = 0; o < nb; ++o) s.onsite[o * nb + o] = complex_type(m_ * g1_diag_[o], 0.0);
    for (int d = 0; d < 3; ++d)
        for (int dir = 0; dir < 2; ++dir) {
            // Kind 1 + 2d (T_d) couples column site n - e_d; kind 2 + 2d (T_d^dag) n + e_d.
            StencilTerm t;
            int offset[3] = {0, 0, 0};
            offset[d] = dir == 0 ? -1 : 1;
            t.dx = offset[0];
            t.dy = offset[1];
            t.dz = offset[2];
            t.block.assign(nb * nb, complex_type(0.0, 0.0));
            for (int o = 0; o < nb; ++o) {
                const BlockRow& r = block_rows_[1 + 2 * d + dir][o];
                for (int e = 0; e < r.count; ++e) t.block[o * nb + r.col[e]] = r.val[e];
            }
            s.terms.push_back(std::move(t));
        }
    if (gauge_.active()) {
        // The Peierls factor of each block as blocks() gives it (one per block, the same for
        // its entries): x bonds by the row's y; y bonds by y, or across the y wrap by x;
        // z bonds and the on-site block none (their factor 1 applied as the rows apply it).
        const int ny = extent_[1], nx = extent_[0];
        const std::size_t slots = (1 + s.terms.size()) * nb * nb;
        s.field.along.assign(slots * ny, complex_type(1.0, 0.0));
        s.field.across.assign(slots * nx, complex_type(1.0, 0.0));
        for (int d = 0; d < 2; ++d)
            for (int dir = 0; dir < 2; ++dir) {
                const int slot = 1 + 2 * d + dir, delta = dir == 0 ? -1 : 1;
                for (int e = 0; e < nb * nb; ++e) {
                    const std::size_t k = static_cast<std::size_t>(slot) * nb * nb + e;
                    for (int y = 0; y < ny; ++y)
                        s.field.along[k * ny + y] = gauge_.hop(y, d == 0 ? delta : 0, d == 1 ? delta : 0, 0, 0);
                    if (d == 1)  // the y wrap: from y = Ny - 1 up, or from y = 0 down
                        for (int x = 0; x < nx; ++x)
                            s.field.across[k * nx + x] = gauge_.hop(delta > 0 ? ny - 1 : 0, 0, delta, x, delta);
                }
            }
    }
    const global_index n = num_sites_;
    if (has_exchange()) {  // one value per row: V_n + M_ex sz[o] on the z faces, as row_entries() adds them
        s.potential.resize(static_cast<size_t>(nb * n));
#pragma omp parallel for schedule(static)
        for (global_index site = 0; site < n; ++site) {
            const double v = potential(site);
            for (int o = 0; o < nb; ++o) s.potential[static_cast<size_t>(nb * site + o)] = v + exchange(site, o);
        }
        return s;
    }
    s.potential.resize(static_cast<size_t>(num_sites_));
#pragma omp parallel for schedule(static)
    for (global_index site = 0; site < n; ++site) s.potential[static_cast<size_t>(site)] = potential(site);
    return s;
}


}  // namespace topokpm::hamiltonians::ti
