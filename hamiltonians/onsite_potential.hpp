#pragma once
/// @file onsite_potential.hpp
/// The on-site potential V_i the lattice models (ti, graphene) add to their diagonal
/// (models.md §2-3): the dot term, V_d on the sites inside a dot (each model decides which
/// sites those are: its lattice and dot shape), then plus the Anderson disorder term
/// W (uniform(S_d, i) - 1/2), i the site (ti) or the row (graphene), S_d the disorder stream
/// of the seed (numerics/base/counter_rng.hpp).

#include <cstdint>

#include "hamiltonians/model.hpp"
#include "numerics/base/counter_rng.hpp"

namespace topokpm::hamiltonians {

class OnsitePotential {
public:
    /// @param params  validated parameters (make_model()): dots, disorder and its seed.
    explicit OnsitePotential(const ModelParams& params)
        : params_(params), disorder_stream_(disorder_stream_seed(params.disorder_seed))
    {
    }

    /// The dot parameters (dot_period, dot_radius, dot_depth) the model's dot test reads.
    const ModelParams& params() const { return params_; }

    /// V of site or row `index`: dot_potential if `in_dot` (else 0, times dot_potential),
    /// then plus the disorder term, in that order.
    double operator()(bool in_dot, std::uint64_t index) const
    {
        const double dot = params_.dot_potential * (in_dot ? 1.0 : 0.0);
        return dot + params_.disorder * (uniform(disorder_stream_, index) - 0.5);
    }

private:
    ModelParams params_;
    std::uint64_t disorder_stream_ = 0;
};

}  // namespace topokpm::hamiltonians
