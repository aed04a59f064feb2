#include "analysis/statistics.hpp"

#include <cmath>
#include <cstddef>

#include "runtime/base/error.hpp"

namespace topokpm::analysis {

SampleStatistics sample_statistics(const std::vector<double>& samples, int num_samples, int length)
{
    TOPOKPM_REQUIRE(num_samples >= 2 && length >= 0 &&
                        samples.size() == static_cast<std::size_t>(num_samples) * static_cast<std::size_t>(length),
                    num_samples, " samples of length ", length, " in an array of ", samples.size(),
                    " values (need >= 2 samples)");
    SampleStatistics st;
    st.mean.assign(length, 0.0);
    st.stddev.assign(length, 0.0);
    st.stderr_.assign(length, 0.0);
    for (int s = 0; s < num_samples; ++s)
        for (int l = 0; l < length; ++l) st.mean[l] += samples[static_cast<std::size_t>(s) * length + l];
    for (double& v : st.mean) v /= num_samples;
    for (int s = 0; s < num_samples; ++s)
        for (int l = 0; l < length; ++l) {
            const double d = samples[static_cast<std::size_t>(s) * length + l] - st.mean[l];
            st.stddev[l] += d * d;
        }
    const double root_s = std::sqrt(static_cast<double>(num_samples));
    for (int l = 0; l < length; ++l) {
        st.stddev[l] = std::sqrt(st.stddev[l] / (num_samples - 1));
        st.stderr_[l] = st.stddev[l] / root_s;
    }
    return st;
}

}  // namespace topokpm::analysis
