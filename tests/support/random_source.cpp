#include "tests/support/random_source.hpp"

#include <algorithm>

#include "numerics/base/counter_rng.hpp"

namespace topokpm::testing {

// Counter-based draws (numerics/base/counter_rng.hpp), one stream per purpose, so a row's
// content depends only on (seed, i, j), never on the order rows are generated in.
namespace {
enum Stream : std::uint64_t { kEmpty = 1, kDensity = 2, kPair = 3, kRe = 4, kIm = 5, kDiag = 6 };
std::uint64_t stream(std::uint64_t seed, Stream s) { return splitmix64(seed, s); }
}  // namespace

RandomSparseSource::RandomSparseSource(global_index num_rows, std::uint64_t seed, double empty_fraction,
                                       double max_density)
    : n_(num_rows), seed_(seed), empty_fraction_(empty_fraction), max_density_(max_density)
{}

bool RandomSparseSource::is_empty_row(global_index i) const
{
    return uniform(stream(seed_, kEmpty), static_cast<std::uint64_t>(i)) < empty_fraction_;
}

double RandomSparseSource::density(global_index i) const
{
    return max_density_ * uniform(stream(seed_, kDensity), static_cast<std::uint64_t>(i));
}

int RandomSparseSource::row(global_index i, global_index* cols, complex_type* values) const
{
    if (is_empty_row(i)) return 0;
    const double di = density(i);
    const auto n = static_cast<std::uint64_t>(n_);
    int len = 0;
    for (global_index j = 0; j < n_; ++j) {
        if (j == i) {
            cols[len] = j;
            values[len++] = complex_type(2.0 * uniform(stream(seed_, kDiag), std::uint64_t(i)) - 1.0, 0.0);
            continue;
        }
        if (is_empty_row(j)) continue;
        const std::uint64_t lo = static_cast<std::uint64_t>(std::min(i, j)), hi = static_cast<std::uint64_t>(std::max(i, j));
        const std::uint64_t pair = lo * n + hi;  // same draw for (i, j) and (j, i): Hermitian pattern
        if (uniform(stream(seed_, kPair), pair) >= std::min(di, density(j))) continue;
        const complex_type v(uniform(stream(seed_, kRe), pair) - 0.5, uniform(stream(seed_, kIm), pair) - 0.5);
        cols[len] = j;
        values[len++] = i < j ? v : std::conj(v);
    }
    return len;
}

}  // namespace topokpm::testing
