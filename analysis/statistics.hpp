#pragma once
/// @file statistics.hpp
/// Error bars of KPM results from independent samples (random vectors or disorder
/// realizations). A sample is a vector of L numbers (moments, or rho on an energy grid);
/// S samples are stored row-major [S, L].
///
///   mean_l   = (1/S) sum_s x_sl
///   sd_l     = sqrt( sum_s (x_sl - mean_l)^2 / (S - 1) )      (sample standard deviation)
///   stderr_l = sd_l / sqrt(S)                                  (standard error of the mean)
///
/// The DOS reconstruction is linear in the moments, so the standard error of rho(E) is the
/// standard deviation of the per-sample reconstructions over sqrt(S): reconstruct every
/// sample with the same kernel and grid, then call sample_statistics on the rho's.

#include <vector>

namespace topokpm::analysis {

struct SampleStatistics {
    std::vector<double> mean;     ///< [L]
    std::vector<double> stddev;   ///< [L], sample standard deviation (divisor S - 1)
    std::vector<double> stderr_;  ///< [L], stddev / sqrt(S) ("stderr" is a macro in <cstdio>)
};

/// Column statistics of `samples` ([num_samples, length] row-major). Needs num_samples >= 2
/// (one sample has no spread; DimensionMismatch otherwise) and samples.size() == S L.
/// Two passes (mean, then squared deviations): no cancellation for small spreads.
SampleStatistics sample_statistics(const std::vector<double>& samples, int num_samples, int length);

}  // namespace topokpm::analysis
