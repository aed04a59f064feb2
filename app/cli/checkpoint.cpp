#include "app/cli/checkpoint.hpp"

#include <cstdio>
#include <ctime>
#include <map>

#include "analysis/result_file.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::app {
namespace {

constexpr const char* kFormat = "topokpm-checkpoint";
constexpr std::int64_t kFormatVersion = 1;

std::string exact(double v)
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

/// FNV-1a over 64-bit values: a digest that tells two row or momentum lists apart.
std::string digest(const std::vector<std::int64_t>& values)
{
    std::uint64_t h = 1469598103934665603ULL;
    for (const std::int64_t v : values)
        for (int b = 0; b < 8; ++b) {
            h ^= (static_cast<std::uint64_t>(v) >> (8 * b)) & 0xffU;
            h *= 1099511628211ULL;
        }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%zu values, fnv1a %016llx", values.size(), static_cast<unsigned long long>(h));
    return buf;
}

std::string utc_now()
{
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return buf;
}

void write_block(analysis::ResultWriter& out, const std::string& name, const BlockVector& b)
{
    // complex<double> is layout-compatible with double[2] ([complex.numbers.general]).
    out.write_doubles(name, reinterpret_cast<const double*>(b.data()), 2 * b.size(),
                      {std::uint64_t(b.num_rows()), std::uint64_t(b.num_cols()), 2});
}

}  // namespace

RunParameters run_parameters(const RunConfig& c, int threads, const std::vector<global_index>& ldos_rows,
                             const std::vector<numerics::Momentum>& momenta)
{
    const auto& m = c.model;
    RunParameters p = {
        {"model", m.name},
        {"lattice", std::to_string(m.nx) + "x" + std::to_string(m.ny) + "x" + std::to_string(m.nz)},
        {"t", exact(m.t)},
        {"m", exact(m.m)},
        {"dot-potential", exact(m.dot_potential)},
        {"dot-radius", exact(m.dot_radius)},
        {"dot-period", std::to_string(m.dot_period)},
        {"dot-depth", std::to_string(m.dot_depth)},
        {"disorder", exact(m.disorder)},
        {"disorder-seed", std::to_string(m.disorder_seed)},
        {"boundary", m.boundary},
        {"moments", std::to_string(c.num_moments)},
        {"vectors", std::to_string(c.num_vectors)},
        {"block-width", std::to_string(c.block_width)},
        {"vector-seed", std::to_string(c.vector_seed)},
        {"trace", to_string(c.trace)},
        {"quantity", to_string(quantity(c))},
        {"realizations", std::to_string(c.realizations)},
        {"bounds", to_string(c.bounds_method)},
        {"energy-range", c.bounds_method == BoundsMethod::User
                             ? exact(c.energy_range.lower) + ":" + exact(c.energy_range.upper)
                             : std::string("none")},
        {"epsilon", exact(c.epsilon)},
        {"lanczos-steps", std::to_string(c.lanczos_steps)},
        {"matrix", to_string(c.matrix)},
        {"sell-C", std::to_string(c.sell_chunk_height)},
        {"sell-sigma", std::to_string(c.sell_sigma)},
        {"threads", std::to_string(threads)},
        {"device", to_string(c.device)},
        {"precision", to_string(c.precision)},
    };
    if (!c.ldos.empty()) p.push_back({"ldos", digest(std::vector<std::int64_t>(ldos_rows.begin(), ldos_rows.end()))});
    if (!momenta.empty()) {
        std::vector<std::int64_t> flat;
        for (const auto& k : momenta) {
            flat.push_back(k.mx);
            flat.push_back(k.my);
        }
        p.push_back({"k-points", digest(flat)});
    }
    return p;
}

std::vector<std::string> parameter_differences(const RunParameters& saved, const RunParameters& now)
{
    std::map<std::string, std::string> a(saved.begin(), saved.end()), b(now.begin(), now.end());
    std::vector<std::string> diff;
    for (const auto& [key, value] : b) {
        const auto it = a.find(key);
        if (it == a.end()) diff.push_back("--" + key + ": not in the checkpoint, this run " + value);
        else if (it->second != value) diff.push_back("--" + key + ": checkpoint " + it->second + ", this run " + value);
    }
    for (const auto& [key, value] : a)
        if (!b.count(key)) diff.push_back("--" + key + ": checkpoint " + value + ", not in this run");
    return diff;
}

void write_checkpoint(const std::string& path, const CheckpointData& d, const numerics::BlockTrace* trace)
{
    analysis::ResultWriter out(path);
    const numerics::ChebyshevState* block = trace ? trace->block_state() : (d.trace.block ? &*d.trace.block : nullptr);
    const std::vector<double>& sums = trace ? trace->sums() : d.trace.sums;
    const std::int64_t blocks_done = trace ? trace->blocks_done() : d.trace.blocks_done;
    out.write_attributes("/checkpoint", {{"format", std::string(kFormat)},
                                         {"format_version", kFormatVersion},
                                         {"command_line", d.command_line},
                                         {"realization", std::int64_t(d.realization)},
                                         {"num_realizations", std::int64_t(d.num_realizations)},
                                         {"num_moments", std::int64_t(d.num_moments)},
                                         {"num_slots", d.num_slots},
                                         {"blocks_done", blocks_done},
                                         {"scale_a", d.scaling.a},
                                         {"scale_b", d.scaling.b},
                                         {"bounds_lower", d.bounds.lower},
                                         {"bounds_upper", d.bounds.upper},
                                         {"written_at", utc_now()}});
    AttributeList params;
    for (const auto& [key, value] : d.parameters) params.push_back({key, value});
    out.write_attributes("/checkpoint/parameters", params);
    const std::uint64_t row_len = std::uint64_t(d.num_slots) * std::uint64_t(d.num_moments);
    if (!d.finished.empty()) {
        std::vector<double> flat;
        flat.reserve(d.finished.size() * row_len);
        for (const auto& f : d.finished) flat.insert(flat.end(), f.begin(), f.end());
        out.write_doubles("/checkpoint/finished", flat, {d.finished.size(), row_len});
    }
    out.write_doubles("/checkpoint/sums", sums, {std::uint64_t(d.num_slots), std::uint64_t(d.num_moments)});
    if (block) {
        write_block(out, "/checkpoint/block/current", block->current);
        write_block(out, "/checkpoint/block/previous", block->previous);
        out.write_doubles("/checkpoint/block/raw", block->raw,
                          {std::uint64_t(block->current.num_cols()), std::uint64_t(d.num_moments)});
        out.write_attributes("/checkpoint/block", {{"sweeps_done", std::int64_t(block->sweeps_done)}});
    }
    out.commit();
}

CheckpointData read_checkpoint(const std::string& path, global_index num_rows)
{
    auto fail = [&](const std::string& why) {
        return InputError(detail::concat("--restart '", path, "': not a usable topokpm checkpoint: ", why,
                                         ". Run without --restart to start afresh"));
    };
    try {
        const analysis::ResultReader in(path);
        if (!in.exists("/checkpoint") ||
            in.read_string_attribute("/checkpoint", "format") != kFormat)
            throw fail("it has no /checkpoint group of format 'topokpm-checkpoint' (a result file?)");
        const std::int64_t version = in.read_int64_attribute("/checkpoint", "format_version");
        if (version != kFormatVersion)
            throw fail(detail::concat("format version ", version, ", this program reads ", kFormatVersion));
        CheckpointData d;
        d.command_line = in.read_string_attribute("/checkpoint", "command_line");
        d.realization = static_cast<int>(in.read_int64_attribute("/checkpoint", "realization"));
        d.num_realizations = static_cast<int>(in.read_int64_attribute("/checkpoint", "num_realizations"));
        d.num_moments = static_cast<int>(in.read_int64_attribute("/checkpoint", "num_moments"));
        d.num_slots = in.read_int64_attribute("/checkpoint", "num_slots");
        d.trace.blocks_done = in.read_int64_attribute("/checkpoint", "blocks_done");
        d.scaling = {in.read_double_attribute("/checkpoint", "scale_a"), in.read_double_attribute("/checkpoint", "scale_b")};
        d.bounds = {in.read_double_attribute("/checkpoint", "bounds_lower"),
                    in.read_double_attribute("/checkpoint", "bounds_upper")};
        if (d.num_moments < 2 || d.num_slots < 1 || d.realization < 0 || d.realization >= d.num_realizations ||
            d.trace.blocks_done < 0 || !(d.scaling.a > 0))
            throw fail("inconsistent header values");
        const char* keys[] = {"model", "lattice", "t", "m", "dot-potential", "dot-radius", "dot-period", "dot-depth",
                              "disorder", "disorder-seed", "boundary", "moments", "vectors", "block-width", "vector-seed", "trace",
                              "quantity", "realizations", "bounds", "energy-range", "epsilon", "lanczos-steps",
                              "matrix", "sell-C", "sell-sigma", "threads", "device", "precision", "ldos", "k-points"};
        for (const char* key : keys)
            if (key == std::string("ldos") || key == std::string("k-points")) {
                try {
                    d.parameters.push_back({key, in.read_string_attribute("/checkpoint/parameters", key)});
                } catch (const IoError&) {
                    // only LDOS / spectral runs record their selection
                }
            } else if (key == std::string("precision")) {
                try {
                    d.parameters.push_back({key, in.read_string_attribute("/checkpoint/parameters", key)});
                } catch (const IoError&) {
                    d.parameters.push_back({key, "double"});  // written before --precision existed
                }
            } else {
                d.parameters.push_back({key, in.read_string_attribute("/checkpoint/parameters", key)});
            }
        const std::size_t row_len = static_cast<std::size_t>(d.num_slots) * d.num_moments;
        std::vector<std::uint64_t> dims;
        if (d.realization > 0) {
            const std::vector<double> flat = in.read_doubles("/checkpoint/finished", &dims);
            if (dims != std::vector<std::uint64_t>{std::uint64_t(d.realization), row_len})
                throw fail("/checkpoint/finished has the wrong shape");
            for (int k = 0; k < d.realization; ++k)
                d.finished.emplace_back(flat.begin() + k * row_len, flat.begin() + (k + 1) * row_len);
        }
        d.trace.sums = in.read_doubles("/checkpoint/sums", &dims);
        if (d.trace.sums.size() != row_len) throw fail("/checkpoint/sums has the wrong shape");
        if (in.exists("/checkpoint/block")) {
            numerics::ChebyshevState st;
            std::vector<std::uint64_t> dc, dp, dr;
            const std::vector<double> cur = in.read_doubles("/checkpoint/block/current", &dc);
            const std::vector<double> prev = in.read_doubles("/checkpoint/block/previous", &dp);
            st.raw = in.read_doubles("/checkpoint/block/raw", &dr);
            st.sweeps_done = static_cast<int>(in.read_int64_attribute("/checkpoint/block", "sweeps_done"));
            if (dc.size() != 3 || dc != dp || dc[0] != std::uint64_t(num_rows) || dc[2] != 2 || dc[1] < 1 ||
                dr != std::vector<std::uint64_t>{dc[1], std::uint64_t(d.num_moments)} || st.sweeps_done < 0)
                throw fail(detail::concat("the saved block vectors do not fit N = ", num_rows, " rows"));
            const int w = static_cast<int>(dc[1]);
            st.current = BlockVector(num_rows, w);
            st.previous = BlockVector(num_rows, w);
            std::copy(cur.begin(), cur.end(), reinterpret_cast<double*>(st.current.data()));
            std::copy(prev.begin(), prev.end(), reinterpret_cast<double*>(st.previous.data()));
            d.trace.block = std::move(st);
        }
        return d;
    } catch (const InputError&) {
        throw;
    } catch (const Error& e) {
        throw fail(e.what());
    }
}

}  // namespace topokpm::app
