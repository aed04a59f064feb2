#include "hamiltonians/graphene/graphene_stencil.hpp"

#include <algorithm>
#include <limits>
#include <vector>


namespace topokpm::hamiltonians::graphene {

namespace {

/// v + delta along a direction of `extent` cells; false if it leaves an open edge.
bool step(int v, int delta, int extent, bool periodic, int& out)
{
    int w = v + delta;
    if (w < 0 || w >= extent) {
        if (!periodic) return false;
        w = (w + extent) % extent;
    }
    out = w;
    return true;
}

}  // namespace

GrapheneStencil::GrapheneStencil(const ModelParams& p)
    : extent_{p.nx, p.ny},
      periodic_{p.boundary[0] == 'p', p.boundary[1] == 'p'},
      num_cells_(global_index(p.nx) * p.ny),
      hopping_(-p.t),
      onsite_(p),
      flux_(p.flux),
      gauge_(p.flux, p.ny, 6)
{}

int GrapheneStencil::row_entries(global_index row, double potential, global_index* cols,
                                 complex_type* vals) const
{
    const global_index cell = row / atoms_per_cell;
    const int s = static_cast<int>(row % atoms_per_cell);
    const int m = static_cast<int>(cell / extent_[1]);
    const int n = static_cast<int>(cell % extent_[1]);
    // Bond partners as cell offsets: A(m,n) -> B(m,n), B(m+1,n-1), B(m,n-1); B(m,n) gets
    // the same bonds seen from the other end.
    static constexpr int offsets[2][3][2] = {{{0, 0}, {1, -1}, {0, -1}}, {{0, 0}, {-1, 1}, {0, 1}}};

    int len = 0;
    cols[len] = row;
    vals[len++] = complex_type(potential, 0.0);
    for (const auto& d : offsets[s]) {
        int mm = 0, nn = 0;
        if (!step(m, d[0], extent_[0], periodic_[0], mm) || !step(n, d[1], extent_[1], periodic_[1], nn))
            continue;
        cols[len] = (1 - s) + atoms_per_cell * (nn + global_index(extent_[1]) * mm);
        if (gauge_.active()) {
            // Peierls phase (models.md §9) in sixths of a cell from the gauge origin
            // r0 = -(a1 + a2)/6: A(m, n) at (6m + 1, 6n + 1), B(m, n) at (6m - 1, 6n + 5); the
            // partner's image sits in cell (m + d0, n + d1), its own in (mm, nn), shifted by
            // ky = (n + d1 - nn) / Ny periods along a2.
            const complex_type phase =
                gauge_.hop(6 * std::int64_t(n) + 1 + 4 * s, 6 * d[0] + 4 * s - 2, 6 * d[1] + 4 - 8 * s,
                           6 * std::int64_t(mm) + 1 - 2 * (1 - s), (n + d[1] - nn) / extent_[1]);
            // + 0.0: a zero part is +0 whatever the sign of t (as the field-free entries).
            vals[len++] = complex_type(hopping_ * phase.real() + 0.0, hopping_ * phase.imag() + 0.0);
        } else {
            vals[len++] = complex_type(hopping_, 0.0);
        }
    }
    // Sort by column (wrap-around decides the order); Nx, Ny >= 2 when periodic keeps
    // the columns distinct (make_model()).
    insertion_sort_row(len, cols, vals);
    return len;
}

bool GrapheneStencil::inside_dot(int m, int n, int s) const
{
    const ModelParams& dots = onsite_.params();
    if (dots.dot_period == 0) return false;
    // Work in lattice coordinates (along a1, a2) scaled by 3, where every site and dot
    // centre is an integer point: A sits at (m, n), B at (m - 1/3, n + 2/3) since
    // (0, 1) = -a1/3 + 2 a2/3, and the centre of supercell (i, j) at
    // (i P + h + 1/3, j P + h + 1/3), h = floor(P/2). With |a1| = |a2| = sqrt(3) and a
    // 60 degree angle, |(u a1 + v a2)/3|^2 = (u^2 + u v + v^2) / 3 exactly.
    const std::int64_t p = dots.dot_period, h = p / 2, period = 3 * p;
    std::int64_t u = s == 0 ? 3 * (m - h) - 1 : 3 * (m - h) - 2;
    std::int64_t v = s == 0 ? 3 * (n - h) - 1 : 3 * (n - h) + 1;
    // Minimum image over the superlattice of centres (Nx, Ny are multiples of P, so the
    // periodic copies of the sample add no other centres). Reduce to [-3P/2, 3P/2), then
    // search nearby images: the nearest one is within |k|, |l| <= 2 for this metric.
    u = ((u % period) + period) % period;
    v = ((v % period) + period) % period;
    if (2 * u >= period) u -= period;
    if (2 * v >= period) v -= period;
    std::int64_t q_min = std::numeric_limits<std::int64_t>::max();
    for (int k = -2; k <= 2; ++k)
        for (int l = -2; l <= 2; ++l) {
            const std::int64_t a = u + k * period, b = v + l * period;
            q_min = std::min(q_min, a * a + a * b + b * b);
        }
    return static_cast<double>(q_min) / 3.0 < dots.dot_radius * dots.dot_radius + 1e-9;
}

double GrapheneStencil::potential(global_index row) const
{
    const global_index cell = row / atoms_per_cell;
    const int s = static_cast<int>(row % atoms_per_cell);
    const int m = static_cast<int>(cell / extent_[1]);
    const int n = static_cast<int>(cell % extent_[1]);
    return onsite_(inside_dot(m, n, s), static_cast<std::uint64_t>(row));
}

global_index GrapheneStencil::num_nonzeros() const
{
    // Cells whose partner cell exists along each direction (all of them when periodic).
    const global_index nx = extent_[0], ny = extent_[1];
    const global_index nx_shift = periodic_[0] ? nx : nx - 1;
    const global_index ny_shift = periodic_[1] ? ny : ny - 1;
    const global_index bonds = nx * ny + nx_shift * ny_shift + nx * ny_shift;
    return num_rows() + 2 * bonds;  // diagonal + both ends of every bond
}

BlockStencil GrapheneStencil::block_stencil() const
{
    BlockStencil s;
    s.name = "graphene";
    s.nx = extent_[0];
    s.ny = extent_[1];
    s.nz = 1;
    s.orbitals = atoms_per_cell;
    s.periodic = {periodic_[0], periodic_[1], false};
    const complex_type t(hopping_, 0.0), zero(0.0, 0.0);
    // Row-major 2 x 2 blocks: [A A, A B; B A, B B].
    s.onsite = {zero, t, t, zero};
    const std::vector<complex_type> a_to_b{zero, t, zero, zero};  // row A, column B of the neighbour cell
    const std::vector<complex_type> b_to_a{zero, zero, t, zero};  // row B, column A of the neighbour cell
    s.terms = {{1, -1, 0, a_to_b}, {0, -1, 0, a_to_b}, {-1, 1, 0, b_to_a}, {0, 1, 0, b_to_a}};
    if (gauge_.active()) {
        // Each bond's Peierls factor as row_entries() computes it (sixths of a cell from the
        // gauge origin): slot 0 the in-cell bond (row A column B, row B column A), slots 1-4
        // the terms above; by the row's cell n, or across the n wrap by its cell m.
        const int nm = extent_[0], nn_ext = extent_[1];
        const std::size_t slots = (1 + s.terms.size()) * atoms_per_cell * atoms_per_cell;
        s.field.along.assign(slots * nn_ext, complex_type(1.0, 0.0));
        s.field.across.assign(slots * nm, complex_type(1.0, 0.0));
        struct Bond {
            int slot, row_atom, d0, d1;
        };
        static constexpr Bond bonds[] = {{0, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 1, -1}, {2, 0, 0, -1}, {3, 1, -1, 1}, {4, 1, 0, 1}};
        for (const Bond& b : bonds) {
            const int a = b.row_atom;
            const std::size_t k = (static_cast<std::size_t>(b.slot) * atoms_per_cell + a) * atoms_per_cell + (1 - a);
            const auto factor = [&](int m, int n) {  // the row's cell (m, n), its partner's wrapped cell
                const int mm = ((m + b.d0) % nm + nm) % nm, nn = ((n + b.d1) % nn_ext + nn_ext) % nn_ext;
                return gauge_.hop(6 * std::int64_t(n) + 1 + 4 * a, 6 * b.d0 + 4 * a - 2, 6 * b.d1 + 4 - 8 * a,
                                  6 * std::int64_t(mm) + 1 - 2 * (1 - a), (n + b.d1 - nn) / nn_ext);
            };
            for (int n = 0; n < nn_ext; ++n) s.field.along[k * nn_ext + n] = factor(0, n);
            if (b.d1 != 0)  // the n wrap: from n = Ny - 1 up, or from n = 0 down
                for (int m = 0; m < nm; ++m) s.field.across[k * nm + m] = factor(m, b.d1 > 0 ? nn_ext - 1 : 0);
        }
    }
    s.potential.resize(static_cast<size_t>(num_rows()));
    const global_index n = num_rows();
#pragma omp parallel for schedule(static)
    for (global_index r = 0; r < n; ++r) s.potential[static_cast<size_t>(r)] = potential(r);
    return s;
}


}  // namespace topokpm::hamiltonians::graphene
