#include "app/run/run_output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/statistics.hpp"
#include "app/mpi/distribution.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/log.hpp"

namespace topokpm::app {
namespace {

using Rows = std::vector<std::vector<double>>;

/// /kpm/moments, /dos/energy and /dos/rho: written by write_dos and by write_projected_dos.
namespace meaning {
const analysis::Meaning moments{"1", "Chebyshev moments of the normalised trace, averaged over vectors and realizations."};
const analysis::Meaning energy{"t", "Energies of the density of states, ascending."};
const analysis::Meaning rho{"1/t", "Density of states per state and unit energy."};
}  // namespace meaning

/// Row i of a row-major [rows, len] array.
std::vector<double> row_of(const std::vector<double>& a, std::size_t i, std::size_t len)
{
    return std::vector<double>(a.begin() + i * len, a.begin() + (i + 1) * len);
}

std::vector<double> flatten(const Rows& rows)
{
    std::vector<double> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    return flat;
}

/// Mean over realizations of [slots, M] arrays (exactly the single array when K = 1).
std::vector<double> realization_mean(const Rows& per_realization)
{
    if (per_realization.size() == 1) return per_realization.front();
    std::vector<double> mean(per_realization.front().size(), 0.0);
    for (const auto& r : per_realization)
        for (std::size_t i = 0; i < r.size(); ++i) mean[i] += r[i];
    for (double& v : mean) v /= static_cast<double>(per_realization.size());
    return mean;
}

/// Mean over the slots of a [slots, M] array.
std::vector<double> slot_mean(const std::vector<double>& slots, std::size_t num_slots, std::size_t m)
{
    std::vector<double> mean(m, 0.0);
    for (std::size_t s = 0; s < num_slots; ++s)
        for (std::size_t n = 0; n < m; ++n) mean[n] += slots[s * m + n];
    for (double& v : mean) v /= static_cast<double>(num_slots);
    return mean;
}

/// Moments and rho of per-slot quantities (LDOS rows, momenta), averaged over realizations,
/// with standard errors over the realizations when there are >= 2: of the slots `slots`
/// (this rank's share, increasing), in that order.
struct SlotResult {
    std::vector<double> moments, rho, moments_stderr, rho_stderr;  // [slots, M] / [slots, K]
    std::vector<double> energy;
};

SlotResult per_slot(const Rows& per_realization, const std::vector<std::size_t>& slots, std::size_t m,
                    const Reconstructor& rec)
{
    SlotResult r;
    const std::vector<double> mean = realization_mean(per_realization);
    r.energy = rec.energies();
    const int k = static_cast<int>(per_realization.size());
    for (const std::size_t s : slots) {
        const std::vector<double> mu = row_of(mean, s, m);
        r.moments.insert(r.moments.end(), mu.begin(), mu.end());
        const analysis::Spectrum sp = rec(mu);
        r.rho.insert(r.rho.end(), sp.rho.begin(), sp.rho.end());
        if (k >= 2) {
            std::vector<double> mu_samples, rho_samples;
            for (const auto& real : per_realization) {
                const std::vector<double> mu_k = row_of(real, s, m);
                mu_samples.insert(mu_samples.end(), mu_k.begin(), mu_k.end());
                const std::vector<double> rho = rec(mu_k).rho;
                rho_samples.insert(rho_samples.end(), rho.begin(), rho.end());
            }
            const auto ms = analysis::sample_statistics(mu_samples, k, static_cast<int>(m));
            const auto rs = analysis::sample_statistics(rho_samples, k, static_cast<int>(r.energy.size()));
            r.moments_stderr.insert(r.moments_stderr.end(), ms.stderr_.begin(), ms.stderr_.end());
            r.rho_stderr.insert(r.rho_stderr.end(), rs.stderr_.begin(), rs.stderr_.end());
        }
    }
    return r;
}

std::vector<std::size_t> all_slots(std::size_t n)
{
    std::vector<std::size_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = i;
    return v;
}

/// /kpm/moments and /dos/* of the mean over all `num_slots` slots (the DOS projected on the
/// selection) from the moments of this rank's slots `local` [local slots, M]; with `dist`
/// the other ranks hold the other slots (summed over the ranks), else `local` is all of them.
DosSummary write_projected_dos(RunResult& out, const RunConfig& cfg, const Reconstructor& rec,
                               const std::vector<double>& local, std::size_t num_slots, const Distribution* dist)
{
    DosSummary s;
    const std::size_t m = static_cast<std::size_t>(cfg.kpm.num_moments);
    s.moments.assign(m, 0.0);
    for (std::size_t i = 0; i < local.size() / m; ++i)
        for (std::size_t n = 0; n < m; ++n) s.moments[n] += local[i * m + n];
    if (dist != nullptr) dist->sum(s.moments);
    for (double& v : s.moments) v /= static_cast<double>(num_slots);
    s.dos = rec(s.moments);
    s.integral = rec.integral(s.dos);
    out.write_doubles("/kpm/moments", meaning::moments, s.moments, {m});
    out.write_doubles("/dos/energy", meaning::energy, s.dos.energy, {s.dos.energy.size()});
    out.write_doubles("/dos/rho", meaning::rho, s.dos.rho, {s.dos.rho.size()});
    return s;
}

void write_seeds(RunResult& out, const MomentsOutcome& m)
{
    if (m.disorder_seeds.size() < 2) return;
    out.write_uint64("/realizations/disorder_seeds", {"1", "The disorder seed of each realization."}, m.disorder_seeds, {m.disorder_seeds.size()});
    out.write_uint64("/realizations/vector_seeds", {"1", "The random-vector seed of each realization."}, m.vector_seeds, {m.vector_seeds.size()});
    out.write_attributes("/realizations", {{"num_realizations", std::int64_t(m.disorder_seeds.size())},
                                           {"seed_rule", std::string("k = 0: the given seed; k >= 1: splitmix64(seed, 1000 + k)")}});
}

}  // namespace

Reconstructor::Reconstructor(const RunConfig& config, const numerics::KpmScaling& scaling)
    : config_(&config), scaling_(scaling),
      g_(analysis::damping_factors(config.kpm.kernel, config.kpm.num_moments, config.kpm.lorentz_lambda))
{}

analysis::Spectrum Reconstructor::operator()(const std::vector<double>& moments) const
{
    if (config_->kpm.energy_grid) {
        const EnergyGrid& eg = *config_->kpm.energy_grid;
        analysis::Spectrum s;
        s.energy.resize(eg.num_points);
        for (int k = 0; k < eg.num_points; ++k) s.energy[k] = eg.lower + (eg.upper - eg.lower) * k / (eg.num_points - 1);
        s.rho = analysis::reconstruct_at(moments, g_, s.energy, scaling_.a, scaling_.b);
        return s;
    }
    return analysis::reconstruct_chebyshev_grid(moments, g_, config_->kpm.energy_points, scaling_.a, scaling_.b);
}

std::vector<double> Reconstructor::energies() const
{
    // The grid does not depend on the moments: reconstruct mu = (1, 0, ...) and keep its energies.
    std::vector<double> unit(static_cast<std::size_t>(config_->kpm.num_moments), 0.0);
    unit[0] = 1.0;
    return (*this)(unit).energy;
}

double Reconstructor::at(const std::vector<double>& moments, double energy) const
{
    return analysis::reconstruct_at(moments, g_, {energy}, scaling_.a, scaling_.b).front();
}

double Reconstructor::integral(const analysis::Spectrum& spectrum) const
{
    return config_->kpm.energy_grid ? analysis::integral_trapezoid(spectrum.energy, spectrum.rho)
                                : analysis::integral_chebyshev_grid(spectrum, scaling_.a, scaling_.b);
}

DosSummary write_dos(RunResult& out, const RunConfig& cfg, const Reconstructor& rec,
                     const MomentsOutcome& mo)
{
    const int m = cfg.kpm.num_moments;
    const int k_real = static_cast<int>(mo.slot_moments.size());
    const bool stochastic = cfg.kpm.trace == TraceKind::Stochastic;
    const std::size_t slots = mo.slot_moments.front().size() / m;  // R (stochastic) or 1 (exact)
    DosSummary s;
    // DOS moments of each realization: the mean over its vectors (the slot itself for exact).
    Rows per_real;
    for (const auto& sm : mo.slot_moments) per_real.push_back(slot_mean(sm, slots, m));
    s.moments = realization_mean(per_real);
    s.dos = rec(s.moments);
    s.integral = rec.integral(s.dos);
    out.write_doubles("/kpm/moments", meaning::moments, s.moments, {std::uint64_t(m)});
    out.write_doubles("/dos/energy", meaning::energy, s.dos.energy, {s.dos.energy.size()});
    out.write_doubles("/dos/rho", meaning::rho, s.dos.rho, {s.dos.rho.size()});
    if (stochastic) {
        const std::vector<double> pv = flatten(mo.slot_moments);
        if (static_cast<std::int64_t>(pv.size()) <= cfg.outputs.per_vector_limit)
            out.write_doubles("/kpm/moments_per_vector", {"1", "Chebyshev moments of each random vector, realization-major."}, pv, {std::uint64_t(k_real * slots), std::uint64_t(m)});
    }
    // Independent samples: the vectors of the one realization, or the realizations (their
    // vectors share one disorder configuration, so only realization means are independent).
    Rows samples;
    if (k_real >= 2) samples = per_real;
    else if (stochastic && slots >= 2)
        for (std::size_t r = 0; r < slots; ++r) samples.push_back(row_of(mo.slot_moments.front(), r, m));
    if (samples.size() >= 2) {
        const int ns = static_cast<int>(samples.size());
        const auto ms = analysis::sample_statistics(flatten(samples), ns, m);
        Rows rhos;
        for (const auto& smp : samples) rhos.push_back(rec(smp).rho);
        const auto rs = analysis::sample_statistics(flatten(rhos), ns, static_cast<int>(s.dos.rho.size()));
        out.write_doubles("/kpm/moments_stderr", {"1", "Standard error of the averaged moments."}, ms.stderr_, {std::uint64_t(m)});
        out.write_doubles("/dos/rho_stderr", {"1/t", "Standard error of the density of states."}, rs.stderr_, {rs.stderr_.size()});
        out.write_attributes("/dos", {{"stderr_samples", std::string(k_real >= 2 ? "realizations" : "vectors")},
                                      {"stderr_num_samples", std::int64_t(ns)}});
        s.has_stderr = true;
        if (k_real >= 2) {
            out.write_doubles("/realizations/moments", {"1", "Chebyshev moments of each disorder realization."}, flatten(per_real), {std::uint64_t(k_real), std::uint64_t(m)});
            out.write_doubles("/realizations/rho", {"1/t", "Density of states of each disorder realization."}, flatten(rhos), {std::uint64_t(k_real), s.dos.rho.size()});
            out.write_doubles("/dos/rho_spread", {"1/t", "Standard deviation of the realizations' density of states."}, rs.stddev, {rs.stddev.size()});
        }
    }
    write_seeds(out, mo);
    return s;
}

LdosShare ldos_share(const std::vector<global_index>& rows,
                     const std::vector<std::pair<global_index, global_index>>& row_runs)
{
    LdosShare share;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        // The run holding rows[i], if this rank has it (runs sorted, disjoint).
        const auto it = std::upper_bound(row_runs.begin(), row_runs.end(), rows[i],
                                         [](global_index r, const auto& run) { return r < run.second; });
        if (it == row_runs.end() || rows[i] < it->first) continue;
        share.slots.push_back(i);
        if (!share.runs.empty() && share.runs.back().begin + share.runs.back().count == i) ++share.runs.back().count;
        else share.runs.push_back({std::uint64_t(i), 1});
    }
    return share;
}

DosSummary write_ldos(RunResult& out, const RunConfig& cfg, const Reconstructor& rec,
                      const MomentsOutcome& mo, const LdosSelection& sel, const LdosShare& share,
                      const Distribution& dist, const std::vector<double>* map_rows)
{
    const std::size_t m = static_cast<std::size_t>(cfg.kpm.num_moments);
    const std::size_t nr = sel.rows.size();
    const SlotResult r = per_slot(mo.slot_moments, share.slots, m, rec);
    const std::size_t kp = r.energy.size();
    out.write_int64("/ldos/rows", {"1", "The selected Hamiltonian rows (0-based, canonical order)."}, std::vector<std::int64_t>(sel.rows.begin(), sel.rows.end()), {nr});
    out.write_doubles("/ldos/energy", {"t", "Energies of the local density of states."}, r.energy, {kp});
    // Each rank its own rows (collective hyperslabs under mpirun).
    out.write_rows("/ldos/rho", {"1/t", "Local density of states of each selected row."}, r.rho.data(), r.rho.size(), share.runs, {nr, kp});
    out.write_rows("/ldos/moments", {"1", "Chebyshev moments of each selected row."}, r.moments.data(), r.moments.size(), share.runs, {nr, m});
    if (mo.slot_moments.size() >= 2) {
        out.write_rows("/ldos/rho_stderr", {"1/t", "Standard error of each row's local density of states."}, r.rho_stderr.data(), r.rho_stderr.size(), share.runs, {nr, kp});
        out.write_rows("/ldos/moments_stderr", {"1", "Standard error of each row's moments."}, r.moments_stderr.data(), r.moments_stderr.size(), share.runs, {nr, m});
    }
    out.write_attributes("/ldos", {{"selection", cfg.kpm.ldos},
                                   {"kernel", analysis::to_string(cfg.kpm.kernel)},
                                   {"normalisation", std::string("per row: the integral of rho over E is 1")}});
    if (sel.layer && cfg.kpm.ldos_map_energy) {
        // Per site: the sum over its orbitals (consecutive rows of the layer selection); each
        // rank adds its rows, the map is summed over the ranks.
        const double e = *cfg.kpm.ldos_map_energy;
        std::vector<double> map(static_cast<std::size_t>(sel.nx) * sel.ny, 0.0);
        for (std::size_t j = 0; j < share.slots.size(); ++j)
            map[share.slots[j] / sel.orbitals] += map_rows ? (*map_rows)[share.slots[j]] : rec.at(row_of(r.moments, j, m), e);
        dist.sum(map);
        out.write_doubles("/ldos_map/rho", {"1/t", "Local density of states per site of the layer at one energy, summed over its orbitals."}, map, {std::uint64_t(sel.nx), std::uint64_t(sel.ny)});
        out.write_attributes("/ldos_map", {{"energy", e},
                                           {"layer", std::int64_t(*sel.layer)},
                                           {"orbitals_summed", std::int64_t(sel.orbitals)},
                                           {"Nx", std::int64_t(sel.nx)},
                                           {"Ny", std::int64_t(sel.ny)},
                                           {"model", cfg.model.name},
                                           {"units", std::string("states per site per unit t")}});
    }
    write_seeds(out, mo);
    return write_projected_dos(out, cfg, rec, r.moments, nr, &dist);
}

DosSummary write_spectral(RunResult& out, const RunConfig& cfg, const Reconstructor& rec,
                          const MomentsOutcome& mo, const MomentumList& ml, int states_per_k,
                          const std::vector<double>& bands)
{
    const std::size_t m = static_cast<std::size_t>(cfg.kpm.num_moments);
    const std::size_t nk = ml.momenta.size();
    const SlotResult r = per_slot(mo.slot_moments, all_slots(nk), m, rec);
    const std::size_t kp = r.energy.size();
    std::vector<std::int64_t> mi;
    for (const auto& k : ml.momenta) {
        mi.push_back(k.mx);
        mi.push_back(k.my);
    }
    out.write_doubles("/spectral/k", {"1/a", "Momenta (kx, ky) in radians per lattice spacing."}, ml.k, {nk, 2});
    out.write_int64("/spectral/m", {"1", "Integer momenta (mx, my)."}, mi, {nk, 2});
    out.write_doubles("/spectral/path_distance", {"1/a", "Cumulative distance along the momentum path."}, ml.path_distance, {nk});
    out.write_doubles("/spectral/energy", {"t", "Energies of the spectral function."}, r.energy, {kp});
    out.write_doubles("/spectral/A", {"1/t", "Spectral function A(k, E) of each momentum."}, r.rho, {nk, kp});
    out.write_doubles("/spectral/moments", {"1", "Chebyshev moments of each momentum."}, r.moments, {nk, m});
    if (!r.rho_stderr.empty()) {
        out.write_doubles("/spectral/A_stderr", {"1/t", "Standard error of the spectral function."}, r.rho_stderr, {nk, kp});
        out.write_doubles("/spectral/moments_stderr", {"1", "Standard error of each momentum's moments."}, r.moments_stderr, {nk, m});
    }
    if (!ml.ticks.empty()) out.write_int64("/spectral/ticks", {"1", "Indices of the path's high-symmetry points among the momenta."}, ml.ticks, {ml.ticks.size()});
    if (!bands.empty()) out.write_doubles("/spectral/bands", {"t", "Eigenvalues of the clean Bloch Hamiltonian at each momentum."}, bands, {nk, std::uint64_t(states_per_k)});
    out.write_attributes("/spectral", {{"path", cfg.kpm.k_path.empty() ? std::string("points") : cfg.kpm.k_path},
                                       {"tick_labels", ml.tick_labels},
                                       {"states_per_k", std::int64_t(states_per_k)},
                                       {"kernel", analysis::to_string(cfg.kpm.kernel)},
                                       {"model", cfg.model.name},
                                       {"normalisation", std::string("per state: the integral of A over E is 1")}});
    write_seeds(out, mo);
    return write_projected_dos(out, cfg, rec, r.moments, nk, nullptr);
}

std::unique_ptr<sparse_direct::SparseLU> analyse_sparse_lu(const hamiltonians::Model& model)
{
    sparse_direct::AnalyseOptions a;
    a.site_size = model.kind().lu_site_blocks ? model.orbitals_per_site() : 1;
    return std::make_unique<sparse_direct::SparseLU>(sparse_direct::csr_from_rows(model), a);
}

std::string fmt(const char* format, double v)
{
    // In full, however long ("%.6f" of 1e100 has 108 characters).
    const int length = std::snprintf(nullptr, 0, format, v);
    std::string out(static_cast<std::size_t>(std::max(length, 0)), '\0');
    std::snprintf(out.data(), out.size() + 1, format, v);
    return out;
}

std::string phase_times(const PhaseTimers& timers, double total_seconds)
{
    std::string out;
    for (const auto& [phase, seconds] : timers.phases()) out += " " + phase + " " + fmt("%.3f", seconds) + " s,";
    return out + " total " + fmt("%.3f", total_seconds) + " s";
}

}  // namespace topokpm::app
