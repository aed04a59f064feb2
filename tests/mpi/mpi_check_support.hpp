#pragma once
/// @file mpi_check_support.hpp
/// What the operator MPI checks (distributed_kpm_check, device_ranks_check) share beyond
/// check.hpp (failure counting, the verdict): the two small test models, equal or weighted
/// row bounds, and the comparison of one distributed augmented sweep with the serial sweep
/// (y to 1e-13; the dot sums, reduced over the ranks, to 1e-12 N: each is a sum of N
/// products of O(1) numbers).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/hetero/work_split.hpp"
#include "tests/mpi/check.hpp"

namespace topokpm::testing::mpi_check {

inline int my_rank = 0;  ///< this rank, set by the check's run()

/// ti 6x3x4 (288 rows, 72 sites: up to 4 ranks with room for uneven shares), dots, disorder.
inline hamiltonians::ModelParams ti_params()
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = 6; p.ny = 3; p.nz = 4;
    p.boundary = "ppo";
    p.dot_potential = 0.4; p.dot_radius = 1.0; p.dot_period = 3; p.dot_depth = 2;
    p.disorder = 0.8; p.disorder_seed = 5;
    return p;
}

/// graphene 8x5 with disorder.
inline hamiltonians::ModelParams graphene_params()
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = 8; p.ny = 5; p.nz = 1;
    p.boundary = "pp";
    p.disorder = 0.5; p.disorder_seed = 7;
    return p;
}

/// Row bounds from the weights: sites never split; with `planes` whole x-planes (a
/// matrix-free local part; the slab must be a box).
inline std::vector<global_index> bounds_for(const hamiltonians::Model& model, const std::vector<double>& weights,
                                            bool planes)
{
    const auto& mp = model.params();
    const std::uint64_t block = static_cast<std::uint64_t>(model.orbitals_per_site()) *
                                (planes ? static_cast<std::uint64_t>(mp.ny) * mp.nz : 1);
    const auto ranges = hetero::split_rows(static_cast<std::uint64_t>(model.num_rows()), block, weights);
    std::vector<global_index> b{0};
    for (const auto& r : ranges) b.push_back(static_cast<global_index>(r.end));
    return b;
}

/// Rows [first, first + count) of a whole block: a rank's part of it.
template <class T>
BasicBlockVector<T> rows_of(const BasicBlockVector<T>& whole, global_index first, global_index count)
{
    BasicBlockVector<T> part(count, whole.num_cols());
    for (global_index i = 0; i < count; ++i)
        for (int c = 0; c < whole.num_cols(); ++c) part(i, c) = whole(first + i, c);
    return part;
}

/// One sweep of `dist` (this rank's rows of the whole matrix) against `serial` on the same
/// random 3-column blocks. `after_apply(x_local, y_local)`, when given, checks the blocks
/// right after the distributed sweep (e.g. where they live).
inline void check_sweep(const hamiltonians::Model& model, const Operator& serial, const Operator& dist,
                        const std::string& tag,
                        const std::function<void(const BlockVector&, const BlockVector&)>& after_apply = {})
{
    const int r = 3;
    const global_index n = model.num_rows();
    BlockVector x(n, r), y(n, r);
    numerics::fill_random_phase_vectors(x, 11, 0, n);
    numerics::fill_random_phase_vectors(y, 12, 0, n);
    const AugmentedOps ops{0.37, 0.2, -1.0, true};
    BlockVector xs = x, ys = y;
    DotSums ref;
    serial.apply(xs, ys, ops, &ref);

    const global_index b = dist.row_begin(), nl = dist.num_rows();
    BlockVector xl = rows_of(x, b, nl), yl = rows_of(y, b, nl);
    DotSums dots;
    dist.apply(xl, yl, ops, &dots);
    if (after_apply) after_apply(xl, yl);
    double err = 0.0;
    for (global_index i = 0; i < nl; ++i)
        for (int c = 0; c < r; ++c) err = std::max(err, std::abs(yl(i, c) - ys(b + i, c)));
    expect(err < 1e-13, tag + ": y differs from the serial sweep by " + std::to_string(err));

    std::vector<double> flat(3 * r);
    for (int c = 0; c < r; ++c) {
        flat[c] = dots.xx[c];
        flat[r + 2 * c] = dots.yx[c].real();
        flat[r + 2 * c + 1] = dots.yx[c].imag();
    }
    if (!dist.dots_reduced()) dist.sum_over_ranks(flat.data(), flat.size());
    for (int c = 0; c < r; ++c) {
        const double tol = 1e-12 * static_cast<double>(n);
        expect(std::abs(flat[c] - ref.xx[c]) < tol, tag + ": <x|x> differs");
        expect(std::abs(complex_type(flat[r + 2 * c], flat[r + 2 * c + 1]) - ref.yx[c]) < tol, tag + ": <y|x> differs");
    }
}

}  // namespace topokpm::testing::mpi_check
