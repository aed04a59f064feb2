#include "numerics/base/row_source.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace topokpm {

global_index RowSource::num_nonzeros(global_index row_begin, global_index row_end) const
{
    std::vector<global_index> cols(max_row_length());
    std::vector<complex_type> vals(max_row_length());
    global_index count = 0;
    for (global_index r = row_begin; r < row_end; ++r) count += row(r, cols.data(), vals.data());
    return count;
}

SpectralBounds gershgorin_bounds(const RowSource& source) { return gershgorin_bounds(source, 0, source.num_rows()); }

SpectralBounds gershgorin_bounds(const RowSource& source, global_index row_begin, global_index row_end)
{
    double lower = std::numeric_limits<double>::infinity();
    double upper = -std::numeric_limits<double>::infinity();
    const global_index n = row_end;
#pragma omp parallel
    {
        std::vector<global_index> cols(source.max_row_length());
        std::vector<complex_type> vals(source.max_row_length());
        double lo = std::numeric_limits<double>::infinity();
        double hi = -std::numeric_limits<double>::infinity();
#pragma omp for schedule(static)
        for (global_index r = row_begin; r < n; ++r) {
            const int len = source.row(r, cols.data(), vals.data());
            double centre = 0.0, radius = 0.0;
            for (int k = 0; k < len; ++k) {
                if (cols[k] == r)
                    centre = vals[k].real();
                else
                    radius += std::abs(vals[k]);
            }
            lo = std::min(lo, centre - radius);
            hi = std::max(hi, centre + radius);
        }
#pragma omp critical
        {
            lower = std::min(lower, lo);
            upper = std::max(upper, hi);
        }
    }
    return {lower, upper};
}

}  // namespace topokpm
