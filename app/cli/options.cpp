// Boost.Program_options descriptions of every kpm-dos and kpm-eigs option, and their
// translation into a validated RunConfig. Command line and input file share one description, so each key
// means the same in both (`moments = 2048` <-> `--moments 2048`).
#include <boost/program_options.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <typeinfo>

#include "app/cli/operator_choice.hpp"
#include "app/cli/parameter_flags.hpp"
#include "app/cli/build_revision.hpp"
#include "app/cli/run_config.hpp"
#include "app/cli/selection.hpp"
#include "hamiltonians/file_models/hr_positions.hpp"
#include "numerics/base/counter_rng.hpp"
#include "numerics/base/energy_limits.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/files.hpp"
#include "runtime/base/parse.hpp"
#include "topokpm/config.hpp"

namespace po = boost::program_options;

namespace topokpm::app {
namespace {

constexpr std::uintmax_t kMaxInputFileBytes = 16u << 20;  // 16 MiB: far beyond any input file

/// The text of the --config file. It must be a regular, readable file of at most 16 MiB:
/// a directory, a FIFO (which would block), a device (/dev/zero never ends) or a huge file
/// is refused before reading, with InputError naming --config and the reason.
std::string read_input_file(const std::string& path)
{
    const auto refuse = [&](const std::string& why) {
        return InputError(detail::concat("--config '", path, "': ", why));
    };
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw refuse(detail::concat("cannot open (", std::strerror(errno), ")"));
    if (S_ISDIR(st.st_mode)) throw refuse("is a directory, not an input file");
    if (!S_ISREG(st.st_mode)) throw refuse("not a regular file (a FIFO, socket or device); give an input file");
    if (static_cast<std::uintmax_t>(st.st_size) > kMaxInputFileBytes)
        throw refuse(detail::concat("is ", static_cast<std::uintmax_t>(st.st_size),
                                    " bytes; an input file may have at most 16 MiB (16777216 bytes)"));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw refuse(detail::concat("cannot open (", std::strerror(errno), ")"));
    // Never more than stat() said (at most the limit), even if the file grows meanwhile.
    const std::size_t size = static_cast<std::size_t>(st.st_size);
    std::string text(size + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) throw refuse("cannot read it");
    if (static_cast<std::size_t>(in.gcount()) > size) throw refuse("it grew while it was read");
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

/// True for a key that can be an option name (letters, digits, '-'; at most 40
/// characters): only such a key is quoted in a message about a --config line.
bool key_shaped(const std::string& key)
{
    return !key.empty() && key.size() <= 40 &&
           std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isalnum(c) || c == '-'; });
}

/// The --config text checked line by line as Boost's INI reader reads it ('#' starts a
/// comment; blanks around the key and the value are dropped): every other line is
/// `key = value`, the key an option of `options` and given once. Returns the line number of
/// each key. A refusal (InputError) names --config, the file, the line number and the key
/// when it is shaped like one, never the line: the file may hold anything.
std::map<std::string, int> check_config_lines(const std::string& path, const std::string& text,
                                              const po::options_description& options, Program program)
{
    std::map<std::string, int> line_of;
    std::istringstream in(text);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        const auto refuse = [&](const std::string& why) {
            return InputError(detail::concat("--config '", path, "' line ", number, ": ", why, " (keys are the long options of ",
                                             program_name(program), " --help, without the --)"));
        };
        const auto trim = [](const std::string& t) {
            const std::size_t b = t.find_first_not_of(" \t\r\n"), e = t.find_last_not_of(" \t\r\n");
            return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
        };
        const std::string content = trim(line.substr(0, line.find('#')));
        if (content.empty()) continue;
        const std::size_t eq = content.find('=');
        if (content.front() == '[') throw refuse("sections ([name]) are not used; write `key = value`");
        if (eq == std::string::npos) throw refuse("not `key = value`");
        const std::string key = trim(content.substr(0, eq));
        if (!key_shaped(key)) throw refuse("the text before '=' is not a key");
        if (options.find_nothrow(key, false) == nullptr) throw refuse(detail::concat("unknown key '", key, "'"));
        const auto [it, first] = line_of.emplace(key, number);
        if (!first) throw refuse(detail::concat("key '", key, "' again (first on line ", it->second, ")"));
    }
    return line_of;
}

/// `text` with control and non-ASCII bytes as \xNN and the part between its first and
/// last quote (Boost's quoted command-line argument, which may be anything) cut to 60
/// characters: safe to print. (A --config line is never quoted: check_config_lines.)
std::string printable_message(const std::string& text)
{
    const auto escape = [](const std::string& in, std::size_t max) {
        std::string out;
        std::size_t shown = 0;
        for (const unsigned char ch : in) {
            if (shown >= max) return out + "...";
            if (ch < 0x20 || ch >= 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\x%02x", ch);
                out += buf;
            } else {
                out += static_cast<char>(ch);
            }
            shown = out.size();
        }
        return out;
    };
    const std::size_t open = text.find('\''), close = text.rfind('\'');
    if (open == std::string::npos || close == open) return escape(text, 300);
    return escape(text.substr(0, open + 1), 200) + escape(text.substr(open + 1, close - open - 1), 60) +
           escape(text.substr(close), 200);
}

/// Whole-string decimal integer (runtime/base/parse.hpp); throws InputError naming the option.
long long parse_integer(const std::string& option, const std::string& text)
{
    std::int64_t v = 0;
    TOPOKPM_USER_REQUIRE(parse::int64(text, v), "--", option, " '", text,
                         "': not a decimal integer (digits with an optional leading '-', at most 9223372036854775807)");
    return v;
}

double parse_real(const std::string& option, const std::string& text)
{
    double v = 0;
    TOPOKPM_USER_REQUIRE(parse::real(text, v), "--", option, " '", text,
                         "': not a finite decimal number (e.g. 0.5, -2, 1e-3)");
    return v;
}

/// An energy option (units of t): a finite number of magnitude at most kMaxEnergy = 1e100
/// (numerics/base/energy_limits.hpp), so that differences, squares and norms stay finite later.
double parse_energy(const std::string& option, const std::string& text)
{
    const double v = parse_real(option, text);
    TOPOKPM_USER_REQUIRE(std::abs(v) <= kMaxEnergy, "--", option, " '", text,
                         "': out of range (allowed: energies from -1e+100 to 1e+100, units of t)");
    return v;
}

std::uint64_t parse_seed(const std::string& option, const std::string& text)
{
    std::uint64_t v = 0;
    TOPOKPM_USER_REQUIRE(parse::uint64(text, v), "--", option, " '", text,
                         "': seeds are unsigned 64-bit decimal integers (0 .. 18446744073709551615)");
    return v;
}

/// The kind's extents (ModelKind::min_extents .. max_extents, e.g. "NxxNyxNz" for ti,
/// "NxxNy" for graphene; missing ones are 1).
void parse_lattice(const std::string& text, const hamiltonians::ModelKind& kind, hamiltonians::ModelParams& model)
{
    const std::vector<std::string> parts = split(text, 'x');
    TOPOKPM_USER_REQUIRE(parts.size() >= static_cast<size_t>(kind.min_extents) &&
                             parts.size() <= static_cast<size_t>(kind.max_extents),
                         "--lattice '", text, "': model '", model.name, "' needs ", kind.lattice_form);
    int dims[3] = {1, 1, 1};
    for (size_t i = 0; i < parts.size(); ++i) {
        const long long v = parse_integer("lattice", parts[i]);
        TOPOKPM_USER_REQUIRE(v >= 1 && v <= 1'000'000'000, "--lattice '", text, "': each extent must be 1 .. 10^9");
        dims[i] = static_cast<int>(v);
    }
    model.nx = dims[0];
    model.ny = dims[1];
    model.nz = dims[2];
}

/// "A:B" -> (A, B) with A < B.
std::pair<double, double> parse_range(const std::string& option, const std::string& text)
{
    const std::vector<std::string> parts = split(text, ':');
    TOPOKPM_USER_REQUIRE(parts.size() == 2, "--", option, " '", text, "': expected Emin:Emax, e.g. -5.5:5.5");
    const double lo = parse_energy(option, parts[0]), hi = parse_energy(option, parts[1]);
    TOPOKPM_USER_REQUIRE(lo < hi, "--", option, " '", text, "': need Emin < Emax");
    return {lo, hi};
}

}  // namespace

std::string without_config_value(const std::string& message, const ProvenanceConfig& provenance)
{
    if (message.rfind("--", 0) != 0) return message;
    std::size_t end = 2;
    while (end < message.size() && (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-')) ++end;
    const std::string key = message.substr(2, end - 2);
    const auto at = provenance.from_config.find(key);
    if (at == provenance.from_config.end()) return message;
    const std::string& value = at->second.value;
    const std::string rest = message.substr(end);
    std::size_t reason = std::string::npos;
    if (rest.rfind(": ", 0) == 0) {
        reason = 2;
    } else if (rest.rfind(" '", 0) == 0) {
        // The longest quoted text that is part of the value (which may itself hold quotes).
        for (std::size_t q = rest.find('\'', 2); q != std::string::npos; q = rest.find('\'', q + 1))
            if (value.find(rest.substr(2, q - 2)) != std::string::npos) reason = q + 1;
        if (reason != std::string::npos) reason = std::min(rest.size(), rest.find_first_not_of(": ", reason));
    } else if (rest.rfind(" " + value + ": ", 0) == 0) {
        reason = value.size() + 3;
    } else if (rest.rfind(" ", 0) == 0) {  // a number the check parsed from the value
        const std::size_t colon = rest.find(": ");
        if (colon != std::string::npos && colon > 1 &&
            rest.find_first_not_of("0123456789+-.eE", 1) == colon)
            reason = colon + 2;
    }
    if (reason == std::string::npos) return message;
    return detail::concat("--config '", provenance.config_path, "' line ", at->second.line, ", key '", key, "': ",
                          rest.substr(reason));
}

void with_user_messages(const ProvenanceConfig& provenance, const std::function<void()>& f)
{
    try {
        with_flag_names(f);
    } catch (const InputError& e) {
        throw InputError(without_config_value(e.what(), provenance));
    }
}

namespace {

/// The program column of the table below: the options that only kpm-dos uses (DOS
/// sampling, the traced quantity, the reconstruction grid, checkpoints, the planner).
/// kpm-eigs refuses each of them, on its command line and in a --config file
/// (refuse_dos_only_options); its --help lists them. Every other option means the same to both.
constexpr const char* kDosOnlyOptions[] = {
    "moments",       "vectors",     "block-width", "trace",          "bounds",           "energy-range",
    "realizations",  "ldos",        "ldos-map-energy", "ldos-method", "probing-distance", "probing-draws", "green",      "k-points",         "k-path", "conductivity", "temperature",
    "energy-points", "energy-grid", "checkpoint",  "checkpoint-every", "time-limit",     "restart",
    "export-matrix", "plan",        "plan-json",   "ranks",       "gpus",           "plan-bandwidth",   "plan-network",
    "plan-gpu-bandwidth"};

/// kpm-eigs: InputError naming the first kpm-dos-only option it was given, as
/// `--OPTION` when on the command line, else as the key and line of the --config file.
void refuse_dos_only_options(const po::variables_map& vm, const std::set<std::string>& on_command_line,
                             const std::map<std::string, int>& config_line, const std::string& config_path)
{
    for (const char* key : kDosOnlyOptions) {
        if (vm.count(key) == 0 || vm[key].defaulted()) continue;
        const auto at = config_line.find(key);
        const std::string given = on_command_line.count(key) || at == config_line.end()
                                      ? detail::concat("--", key)
                                      : detail::concat("--config '", config_path, "' line ", at->second, ": key '", key, "'");
        throw InputError(detail::concat(given, ": a kpm-dos option; kpm-eigs has no use for it and refuses it "
                                        "(kpm-eigs --help lists the options it refuses)"));
    }
}

/// The refused options as lines of about 90 columns, for kpm-eigs --help.
std::string dos_only_list()
{
    std::string out, line;
    const std::size_t n = std::size(kDosOnlyOptions);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string item = detail::concat(" --", kDosOnlyOptions[i], i + 1 < n ? "," : ".");
        if (!line.empty() && line.size() + item.size() > 88) {
            out += "\n " + line;
            line.clear();
        }
        line += item;
    }
    return out + "\n " + line;
}

// The groups of --help, one function each; make_options puts them together.
po::options_description general_group()
{
    po::options_description general("General");
    general.add_options()
        ("help,h", "print this help and exit")
        ("version", "print the version and exit")
        ("config,c", po::value<std::string>(), "input file (INI syntax: `key = value`, keys as the long options below); command-line options override it");
    return general;
}

po::options_description model_group()
{
    po::options_description model("Model (models.md §2-3; energies in units of the hopping t, each at most 1e100 in magnitude)");
    model.add_options()
        ("model", po::value<std::string>()->default_value("ti"), "Hamiltonian: `ti` (3D topological-insulator slab, 4 orbitals/site), `graphene` (honeycomb, 2 sites/cell), `hr` (a Wannier90 SEED_hr.dat tiled over --lattice) or `matrix-market` (any Hermitian matrix; no lattice), the last two read from --model-file (models.md §8)")
        ("model-file", po::value<std::string>(), "with --model hr: the Wannier90 _hr.dat (H(R)[m,n] = (Re + i Im)/ndegen(R), energies in the file's unit); with --model matrix-market: a `coordinate` complex/real general/hermitian/symmetric .mtx (e.g. from --export-matrix). Checked when read (counts, numbers, orbitals, duplicates, Hermiticity within 1e-12 of the largest entry); /model records its path, size and SHA-256")
        ("lattice", po::value<std::string>(), "lattice size, required: NxxNyxNz sites for ti (e.g. 64x64x16), NxxNy unit cells for graphene, Nx[xNy[xNz]] cells for hr (row = o + num_wann (c3 + Nz (c2 + Ny c1))); none for matrix-market")
        ("t", po::value<std::string>()->default_value("1"), "hopping t (energy unit); 1e-100 <= |t| <= 1e100")
        ("m", po::value<std::string>()->default_value("2"), "ti mass parameter m (units of t); 1 < m < 3 is the strong TI phase")
        ("dot-potential", po::value<std::string>()->default_value("0"), "on-site potential inside the quantum dots (units of t)")
        ("dot-radius", po::value<std::string>()->default_value("0"), "dot radius (lattice constants for ti, C-C distances for graphene, the length unit of --orbital-positions for hr), >= 0")
        ("dot-period", po::value<std::string>()->default_value("0"), "dot superlattice period in sites (ti) or cells (graphene, hr); must divide Nx and Ny; 0 = no dots. hr (with --cell-vectors and --orbital-positions, a1, a2 in the x-y plane): the orbitals within --dot-radius in the plane of the nearest supercell centre (P-1)/2 (a1 + a2) + the mean position, every layer")
        ("dot-depth", po::value<std::string>()->default_value("1"), "ti: dots act on layers z < dot-depth (0 .. Nz)")
        ("disorder", po::value<std::string>()->default_value("0"), "Anderson disorder strength W >= 0 (units of t): V += W (u - 1/2), u uniform in [0,1)")
        ("disorder-seed", po::value<std::string>()->default_value("1"), "seed of the disorder stream (unsigned 64-bit)")
        ("cell-vectors", po::value<std::string>(), "hr: the lattice vectors `x,y,z;x,y,z;x,y,z` (a1;a2;a3, Cartesian, in the length unit of --orbital-positions), or `x,y,0;x,y,0` (a1;a2 in the x-y plane) for a 2-D model (Nz = 1); linearly independent. Cell (c1, c2, c3) sits at c1 a1 + c2 a2 + c3 a3; needed with --orbital-positions by --conductivity and --magnetic-flux (models.md §8); /model records them")
        ("orbital-positions", po::value<std::string>(), "hr, with --cell-vectors: the Cartesian position of each orbital of cell 0 in the same length unit, from Wannier90's SEED_centres.xyz (the first num_wann `X` lines) or a file of num_wann lines `x y z`; taken as given (not wrapped into the cell): orbital o of cell c sits at c1 a1 + c2 a2 + c3 a3 + position[o]. /model records them and the file's SHA-256")
        ("magnetic-flux", po::value<std::string>()->default_value("0"), "ti, graphene, hr with --orbital-positions: magnetic field along z as the flux PHI through one unit cell in flux quanta h/e, `p/q` or a decimal (0 = no field); Peierls phases on every hop in a Landau gauge single-valued on the periodic supercell (hr: a1, a2 in the x-y plane, a3 along z; gauge origin the Cartesian origin of the positions), so with x and y periodic Nx Ny PHI must be an integer; sell and crs carry the phases in the rows, --matrix free (ti, graphene; CPU and GPU, the GPU's not yet run on one) in the stencil's field tables, slower but with no matrix in memory (models.md §9, docs/physics.md)")
        ("exchange-mass", po::value<std::string>()->default_value("0"), "ti slab (z open): an exchange (Zeeman-like) mass M_ex s0 (x) sz in units of t on the surface layers z = 0 and z = Nz - 1, the same sign on both faces; it gaps the surface Dirac cones and makes the slab a quantum anomalous Hall insulator, sigma_xy = sign(M_ex) e^2/h for mu inside the gap (docs/physics.md); 0 = none")
        ("boundary", po::value<std::string>()->default_value(""), "boundary conditions per direction, p = periodic, o = open: default `ppo` for ti (slab), `pp` for graphene, `ppp` for hr (open drops the terms leaving the supercell, periodic wraps them)");
    return model;
}

po::options_description kpm_group()
{
    po::options_description kpm("KPM");
    kpm.add_options()
        ("moments", po::value<std::string>()->default_value("1024"), "number of Chebyshev moments M (>= 2); energy resolution ~ pi (Emax - Emin) / M")
        ("vectors", po::value<std::string>()->default_value("16"), "random vectors R of the stochastic trace (>= 1; relative error ~ 1/sqrt(R N)); block width (start vectors per sweep) of the exact trace, --ldos and --k-points/--k-path")
        ("block-width", po::value<std::string>()->default_value("0"), "random vectors per sweep of the stochastic trace, 1 .. --vectors (0 = all R at once). Narrower blocks keep the vectors in cache: ti 64x64x40, 32 vectors, M = 256 on 2 cores: SELL 13.9 s in 4 blocks of 8 vs 17.7 s in one of 32, free 9.9 vs 10.8 s (docs/performance.md); the moments do not change beyond rounding")
        ("vector-seed", po::value<std::string>()->default_value("1"), "seed of the random start vectors (unsigned 64-bit)")
        ("trace", po::value<std::string>()->default_value("stochastic"), "`stochastic` (R random-phase vectors) or `exact` (all N unit vectors: small systems only)")
        ("bounds", po::value<std::string>()->default_value("lanczos"), "spectral bounds: `lanczos` (extremal Ritz values + residual + margin) or `gershgorin` (rigorous, wider); ignored if --energy-range is given")
        ("energy-range", po::value<std::string>(), "user spectral bounds Emin:Emax (units of t) used to scale H; must contain the whole spectrum")
        ("lanczos-steps", po::value<std::string>()->default_value("200"), "maximum Lanczos steps for --bounds lanczos (>= 2)")
        ("epsilon", po::value<std::string>()->default_value("0.01"), "KPM scaling safety factor, a = (Emax - Emin)/(2 - epsilon), in [0, 1)")
        ("realizations", po::value<std::string>()->default_value("1"), "disorder realizations K (1 .. 100000), averaged with error bars: realization k uses --disorder-seed and --vector-seed as given for k = 0 (= the single run) and splitmix64(seed, 1000 + k) for k >= 1; all share one scaling (the union of their bounds)");
    return kpm;
}

po::options_description local_group()
{
    po::options_description local("Local DOS and spectral function (models.md §4; trace `ldos` / `spectral`)");
    local.add_options()
        ("ldos", po::value<std::string>(), "local DOS of selected rows, exact per row (unit start vectors): `0,5,8-11` (rows, ranges inclusive), `layer:Z` (every orbital of every site with z = Z; graphene: layer:0), `site:X,Y,Z` (ti; hr: one coordinate per --lattice extent) or `site:M,N` (graphene cell); writes /ldos/rows, /ldos/energy, /ldos/rho [rows, K], /ldos/moments [rows, M]")
        ("ldos-map-energy", po::value<std::string>(), "with --ldos layer:Z: also write the real-space map /ldos_map/rho [Nx, Ny] of the LDOS summed over each site's orbitals at this energy (units of t; inside the spectrum bounds)")
        ("ldos-method", po::value<std::string>()->default_value("exact"), "with --ldos: `exact` (one unit vector per row) or `probing` (lattice models: the rows coloured so that rows of one colour are >= --probing-distance hops of H apart, one random-phase vector per colour and draw, each row's moments read off its colour's vector: #colours x draws vectors instead of one per row, each twice an exact vector's sweeps; an estimate: moments n < distance are exact, the higher ones carry the cross terms of rows of one colour, small where the broadened Green function decays within the distance (few moments, gapped energies), large for many moments in a metal; with --ldos-map-energy the vectors are also filtered at that energy and the map is their Nystrom estimate, free of those cross terms, where the filtered vectors show a gap (few states at that energy on the layer), /ldos_map@method; docs/physics.md)")
        ("probing-distance", po::value<std::string>()->default_value("auto"), "--ldos-method probing: hops between rows of one colour, auto or 1 .. 1000; colours grow like distance^dim (a layer: distance^2 x orbitals), the probed moments' error falls with it; past half of each periodic extent (and the whole of an open one) every row has its own colour and probing is the exact LDOS. auto: with --ldos-map-energy (the Nystrom map) the smallest distance whose colours x draws reach twice the rank the map's filter would have on the rows at an average local DOS (rows x the share of the spectrum within the kernel's window: about 13 rows / M for Jackson), at least 32; where the layer holds more states at E the map's gap test fails and /ldos_map@method says probing; the result stores /ldos_map@nystrom_rank_estimate and the estimated error nystrom_trace_defect; without a map energy 6 (the probed moments are a survey estimate; docs/physics.md)")
        ("probing-draws", po::value<std::string>()->default_value("1"), "--ldos-method probing: random phase draws per colour, 1 .. 1000 (cost x draws, cross-term error / sqrt(draws))")
        ("green", po::value<std::string>(), "kpm-dos with --ldos: also the exact broadened LDOS -Im G_jj(E + i ETA)/pi of the same rows on the same energy grid, from one sparse LU of (E + i ETA) - H per energy (1e-100 <= ETA <= 1e100, units of t; under mpirun the energies are dealt over the ranks; memory of the factors checked before the run); writes /green/rows, /green/energy, /green/rho [rows, K] (models.md §7)")
        ("k-points", po::value<std::string>(), "spectral function A(k, E) at in-plane momenta `mx,my;mx,my` (integers, k = 2 pi m / N; graphene: phases per a1, a2 step), traced exactly over the plane waves |k, z, o> (ti: 4 Nz states; graphene: 2), normalised per state; writes /spectral/k, /spectral/energy, /spectral/A [nk, K], /spectral/moments [nk, M] (and /spectral/bands for clean lattices)")
        ("k-path", po::value<std::string>(), "instead of --k-points: every lattice momentum along a path of high-symmetry points joined by `-`, e.g. M-G-X (ti: G, X, Y, M) or G-K-M-G (graphene: G, K, M; K needs Nx, Ny multiples of 3); hr with --cell-vectors: G, X, Y, M (k = 0, b1/2, b2/2, (b1 + b2)/2)")
        ("conductivity", po::value<std::string>(), "with the DOS, the Kubo-Bastin conductivity sigma_ab(mu) in e^2/h on the Chebyshev energy grid (models.md §9, docs/physics.md): `xx`, `xy`, `yx` or `yy` (sheet conductance of graphene and of ti slabs open in z), any two of x, y, z for a ti bulk (--boundary ppp, per unit length); from the two-index moments Tr[v_a T_n v_b T_m]/N over the same start vectors (--vectors, --trace exact), v_a = i[H, r_a]. Keeps M + 36 vectors of N x W (W = --block-width, else --vectors) in memory (under mpirun: of each rank's rows), checked before the run (with --device cuda: in device memory); CPU ranks (also under mpirun, 1-D and 2-D) or one GPU (--device cuda without mpirun; not yet run on a GPU), one realization, not with --energy-grid. Writes /conductivity/energy, /conductivity/sigma, /conductivity/moments [M, M]")
        ("temperature", po::value<std::string>(), "with --conductivity: the temperature T of the Fermi function (units of t, >= 0; default 0)");
    return local;
}

po::options_description make_options(Program program)
{
    const po::options_description general = general_group(), model = model_group(), kpm = kpm_group(),
                                  local = local_group();
    po::options_description restart("Checkpoint and restart");
    restart.add_options()
        ("checkpoint", po::value<std::string>(), "checkpoint file (HDF5, written atomically): block vectors, partial moments and run parameters; default `<output>.checkpoint.h5`. The path must be free (or be the --restart file): an existing file there is never overwritten. Removed after the result is written, with the checkpoint the run resumed (docs/reliability.md)")
        ("checkpoint-every", po::value<std::string>()->default_value("0"), "seconds between checkpoints during the moments (>= 0; 0 = only on SIGTERM/SIGINT/SIGUSR1). A signal writes a checkpoint after the current sweep (under mpirun: within a few sweeps, the ranks agree on it first) and exits with code 75; a second signal kills at once. mpirun forwards SIGUSR1 to the ranks at once, but turns SIGTERM into SIGCONT, SIGTERM 1 s later and SIGKILL 1 s after that unless `--mca odls_base_sigkill_timeout` is raised (docs/cluster.md). A periodic checkpoint that cannot be written (full disk) is a warning; the run goes on")
        ("time-limit", po::value<std::string>(), "HH:MM:SS (or seconds) of wall time this run may take, counted from its start (give a little less than the batch job's limit: mpirun's start-up and the result file come on top). Before the limit the run writes its checkpoint and exits with code 75 on its own, choosing the moment from the measured time per sweep and checkpoint write time; resume with --restart. Works on one rank and under mpirun (docs/cluster.md)")
        ("restart", po::value<std::string>(), "continue from this checkpoint with the same options (the moments are bit-identical to an uninterrupted run with the same --threads; under mpirun any rank count resumes: bit-identical with the same ranks and --weights, else equal to rounding, docs/cluster.md); a run whose parameters differ is refused with the list of differences");

    po::options_description dos_reconstruction("Reconstruction");
    dos_reconstruction.add_options()
        ("kernel", po::value<std::string>()->default_value("jackson"), "damping kernel: `jackson`, `lorentz` or `none`")
        ("lorentz-lambda", po::value<std::string>()->default_value("4"), "lambda of the Lorentz kernel (> 0)")
        ("energy-points", po::value<std::string>()->default_value("0"), "points K of the Chebyshev energy grid (K >= M; 0 = 2 M), evaluated with FFTW's DCT")
        ("energy-grid", po::value<std::string>(), "instead of the Chebyshev grid: Emin:Emax:K, K >= 2 equidistant energies (units of t), evaluated by Clenshaw");

    po::options_description storage("Storage and parallelism");
    storage.add_options()
        ("matrix", po::value<std::string>()->default_value("auto"), "operator: `auto` (the fastest measured for the model and block width: free for ti, and for graphene at R = 1 and at the widths where the stencil makes two sweeps per pass (R = 2, 4, 8, 16, 32), else sell on the CPU; sell on cuda and whenever --sell-C or --sell-sigma is given), `sell` (SELL-C-sigma), `crs` (SELL-1-1), `free` (matrix-free stencil, no stored matrix), `naive` (CRS with unfused SpMV + BLAS-1: the slow reference path)")
        ("sell-C", po::value<std::string>()->default_value("auto"), "SELL chunk height C (1 .. 1024), or `auto`: on the CPU 16 at block width W = 1 and 8 at W >= 2 (W: the vectors per sweep, at most the --ldos rows or k-point states), the fastest measured (docs/performance.md); the GPU always uses C = 32")
        ("sell-sigma", po::value<std::string>()->default_value("256"), "SELL sorting window sigma in rows (>= 1; 1 = no sorting)")
        ("tblock-lines", po::value<std::string>()->default_value("-1"), "--matrix free on a 2-D lattice (graphene): lattice lines per block of the pass that makes two KPM steps per sweep over memory (temporal blocking) at R = 1; -1 = blocks of about 64 KiB of one vector, 0 = one step per pass at every width (also off: the strip form at R = 2, 4, 8, 16, 32; for A/B measurements), N >= 1 = N lines")
        ("threads", po::value<std::string>()->default_value("0"), "OpenMP threads (0 = OMP_NUM_THREADS or all cores)")
        ("device", po::value<std::string>()->default_value("cpu"), "where the KPM sweeps run: `cpu` (OpenMP) or `cuda` (GPU 0; needs a CUDA build and a visible GPU; --matrix sell uses C = 32, naive is CPU-only)")
        ("precision", po::value<std::string>()->default_value("double"), "arithmetic of the stored matrix and the KPM vectors: `double` (complex double) or `single` (complex float: 8 instead of 16 bytes per value, so about half the memory traffic and memory; the dot products, hence the moments, are still summed in double). Moments differ from double by about 1e-7 (error bound and measurements in docs/performance.md); single runs with --matrix sell, crs or free on --device cpu (also CPU ranks under mpirun) or on one GPU (--device cuda, sell or free)");

    po::options_description output("Output");
    output.add_options()
        ("output,o", po::value<std::string>(), "HDF5 result file (models.md §5); default `<model>_<lattice>.h5` in the current directory; written atomically. An existing file there is replaced only if it is a writable topokpm result; --output, --checkpoint, --restart and --export-matrix must be different files")
        ("export-matrix", po::value<std::string>(), "also write the stored matrix in Matrix Market format to this file (small systems)")
        ("quiet,q", po::bool_switch(), "print only warnings, errors and the result path (no progress lines)")
        ("progress-interval", po::value<std::string>()->default_value("5"), "seconds between progress lines during the moments (> 0)")
        ("memory-limit", po::value<std::string>()->default_value("0"), "refuse runs needing more than this many GiB (0 = the memory available on this machine)");

    po::options_description planning("Planning (prints the per-rank plan of a distributed run; allocates nothing)");
    planning.add_options()
        ("plan", po::bool_switch(), "print rows, nonzeros, memory and halo per rank and the predicted time per moment for --ranks P, then exit; refuses plans that do not fit --memory-limit per rank; with --green also the sparse LU phase, from the run's analysis and five timed energies (docs/cluster.md)")
        ("plan-json", po::value<std::string>()->implicit_value("-"), "as --plan, the same plan as one JSON object (predicted_seconds, memory_per_rank_bytes, checkpoint_bytes, ranks, sweeps, ...; docs/cluster.md) on stdout, or with --plan-json=FILE in FILE")
        ("ranks", po::value<std::string>()->default_value("1"), "P, MPI ranks of the planned run (1 .. 10^7)")
        ("gpus", po::value<std::string>()->default_value("0"), "G of the P ranks drive one GPU each (0 .. P)")
        ("weights", po::value<std::string>()->default_value(""), "row share per rank, `w0:w1:...` (P positive numbers), for --plan and for runs under mpirun; empty = equal (--plan: proportional to bandwidth); `auto` (mpirun) = each rank's measured SpMMV rate")
        ("plan-bandwidth", po::value<std::string>()->default_value("0"), "memory bandwidth of one CPU rank in GB/s (0 = measure this machine with a STREAM triad; a serial CPU plan then also times the kernel on a sample of the lattice, about 0.3 s, and takes its rate)")
        ("plan-network", po::value<std::string>()->default_value("10"), "network bandwidth per rank in GB/s for the halo exchange")
        ("plan-gpu-bandwidth", po::value<std::string>()->default_value("2990"), "device memory bandwidth of a GPU rank in GB/s (default: measured H100 copy, docs/cuda_backend.md)");

    po::options_description parallel("Parallel runs (`mpirun -np P kpm-dos ...`: each rank builds and sweeps only its rows; results equal the 1-rank run to rounding)");
    parallel.add_options()
        ("comm-mode", po::value<std::string>()->default_value("overlap"), "halo exchange of the distributed SpMMV: `vector` (exchange, then compute), `overlap` (non-blocking MPI behind the local part; a GPU rank drives it from a communication thread while the GPU sweeps) or `task` (a communication thread on one core of the rank overlaps it; needs MPI_THREAD_SERIALIZED)")
        ("reduce-every-sweep", po::bool_switch(), "sum the dot products over the ranks in every sweep instead of once at the end (for comparison; seed 004 Table III)")
        ("decomposition", po::value<std::string>()->default_value("auto"), "how the lattice is split over the ranks (sell and free): `1d` (x-slabs of whole sites; free: whole x-planes), `2d` (a px x py grid of (x, y) tiles of whole z-columns, the grid with the smallest halo per rank; equal weights only) or `auto` (2d when its halo per rank is smaller than 1d's and no --weights are given); or a grid `PXxPY` (2d with that grid, PX PY = ranks; docs/scaling.md)")
        ("no-pin", po::bool_switch(), "do not pin each rank's OpenMP threads to its own CPU set (default: pinned, one set per rank of the node, or the launcher's binding)");

    po::options_description eigs("Eigenpairs (models.md §6; give one of --window, --extremal, --shift)");
    eigs.add_options()
        ("window", po::value<std::string>(), "every eigenvalue in Emin:Emax (units of t) with its eigenvector")
        ("extremal", po::value<std::string>(), "`lowest:k` or `highest:k`: the k lowest / highest eigenpairs (k >= 1); a degenerate level at the edge is returned whole (every eigenvalue within 2 tolerance of the k-th, docs/eigs.md)")
        ("shift", po::value<std::string>(), "E0 (units of t): the --count eigenvalues nearest E0, at equal distance the lower one first; a degenerate level at the edge is returned whole")
        ("count", po::value<std::string>(), "k >= 1, with --shift")
        ("method", po::value<std::string>()->default_value("auto"), "`auto` (dense for N <= 4096, else chebfd for --extremal and --window, shift-invert for --shift), `lanczos` (thick-restart Lanczos, --extremal), `chebfd` (Chebyshev filter diagonalization, --window; block Chebyshev-filtered subspace iteration, --extremal), `dense` (LAPACK zheevd of the whole matrix, N <= 8192), `shift-invert` (with --shift: Lanczos on (H - E0)^-1, one sparse LU of H - E0)")
        ("tolerance", po::value<std::string>()->default_value("1e-10"), "a pair is converged when ||H v - lambda v|| <= tolerance * max(|Emin|, |Emax|) with ||v|| = 1 (0 < tolerance < 1; Emin, Emax from Lanczos). A tolerance below what double precision reaches for the matrix (4 eps x nonzeros per row x its Gershgorin bound) is raised to that, with a warning. Degenerate partners within 2 tolerance of the last requested value are returned too")
        ("save-vectors", po::bool_switch(), "also write the eigenvectors /eigs/vectors [k, N] (complex128, canonical row order)");

    const bool dos = program == Program::Dos;
    po::options_description all(dos ? "kpm-dos: density of states of a topological-material Hamiltonian by the Kernel\n"
                                      "Polynomial Method. Writes an HDF5 file with moments and DOS (see inputs/README.md).\n\n"
                                      "Usage: kpm-dos [--config FILE] [options]\n\nOptions"
                                    : "kpm-eigs: eigenpairs of a topological-material Hamiltonian (models.md §6): a window,\n"
                                      "the extremal ones, or those nearest a shift. Same models, operators and input-file keys as\n"
                                      "kpm-dos; it refuses (exit 2) the options only kpm-dos uses:" + dos_only_list() +
                                      "\nWrites an HDF5 file with /eigs.\n\n"
                                      "Usage: kpm-eigs [--config FILE] (--window A:B | --extremal lowest:K | --shift E --count K) [options]\n\nOptions");
    all.add(general);
    if (!dos) all.add(eigs);
    all.add(model).add(kpm).add(local).add(dos_reconstruction).add(storage).add(output).add(restart).add(planning).add(parallel);
    return all;
}

template <typename T>
T int_option(const po::variables_map& vm, const std::string& key, long long lo, long long hi, const char* range_text)
{
    const long long v = parse_integer(key, vm[key].as<std::string>());
    TOPOKPM_USER_REQUIRE(v >= lo && v <= hi, "--", key, " ", v, ": allowed range is ", range_text);
    return static_cast<T>(v);
}

/// The model (models.md §2-3).
void read_model(const po::variables_map& vm, RunConfig& cfg)
{
    auto& m = cfg.model;
    m.name = vm["model"].as<std::string>();
    const hamiltonians::ModelKind* kind = hamiltonians::find_model_kind(m.name);
    if (kind == nullptr) {
        std::string names;
        for (const hamiltonians::ModelKind& k : hamiltonians::model_kinds()) names += (names.empty() ? "" : ", ") + k.name;
        throw InputError(detail::concat("--model '", m.name, "': allowed values are ", names));
    }
    const bool from_file = kind->reads_file;
    TOPOKPM_USER_REQUIRE(from_file == (vm.count("model-file") > 0), from_file ? "--model " + m.name + " needs --model-file FILE"
                         : "--model-file: model " + m.name + " is built in (the file goes with --model hr or matrix-market)");
    if (from_file) m.file = vm["model-file"].as<std::string>();
    if (kind->max_extents == 0) {
        TOPOKPM_USER_REQUIRE(!vm.count("lattice"), "--lattice: model ", m.name, " has no lattice (its size is the file's N)");
    } else {
        TOPOKPM_USER_REQUIRE(vm.count("lattice"), "--lattice is required (e.g. --lattice 64x64x16 for ti, 120x120 for graphene)");
        parse_lattice(vm["lattice"].as<std::string>(), *kind, m);
    }
    m.t = parse_real("t", vm["t"].as<std::string>());
    m.m = parse_real("m", vm["m"].as<std::string>());
    m.dot_potential = parse_real("dot-potential", vm["dot-potential"].as<std::string>());
    m.dot_radius = parse_real("dot-radius", vm["dot-radius"].as<std::string>());
    m.dot_period = int_option<int>(vm, "dot-period", 0, 1'000'000'000, "0 .. 10^9 (and it must divide Nx and Ny)");
    m.dot_depth = int_option<int>(vm, "dot-depth", 0, 1'000'000'000, "0 .. Nz");
    m.disorder = parse_real("disorder", vm["disorder"].as<std::string>());
    m.disorder_seed = parse_seed("disorder-seed", vm["disorder-seed"].as<std::string>());
    m.boundary = vm["boundary"].as<std::string>();
    m.flux = hamiltonians::parse_magnetic_flux(vm["magnetic-flux"].as<std::string>());
    m.exchange_mass = parse_real("exchange-mass", vm["exchange-mass"].as<std::string>());
    // Positions are the file model's own input (models.md §8): the built-ins have theirs.
    for (const char* key : {"cell-vectors", "orbital-positions"})
        TOPOKPM_USER_REQUIRE(!vm.count(key) || kind->takes_positions, "--", key, ": model ", m.name,
                             kind->max_extents == 0 ? " has no lattice" : " has its own positions",
                             " (the option goes with --model hr)");
    if (vm.count("cell-vectors")) m.cell_vectors = hamiltonians::file_models::parse_cell_vectors(vm["cell-vectors"].as<std::string>());
    if (vm.count("orbital-positions")) {
        m.orbital_positions = vm["orbital-positions"].as<std::string>();
        TOPOKPM_USER_REQUIRE(!m.orbital_positions.empty(), "--orbital-positions: empty file name");
    }
}

/// What the models read from a file (models.md §8) do not offer, refused before the file is
/// read, each with one message naming the missing piece: energies (--t, --m), --dot-depth
/// (hr's dots act on every layer) and momenta; for matrix-market also dots and everything
/// else that needs a lattice. kpm-eigs, --plan and the 2-D decomposition take file models as they
/// take the built-ins (the decomposition refuses what has no halo model: rank_layout()).
void refuse_beyond_file_models(const po::variables_map& vm, const RunConfig& cfg)
{
    const std::string& name = cfg.model.name;
    if (!hamiltonians::reads_model_file(name)) return;
    const bool mm = hamiltonians::find_model_kind(name)->max_extents == 0;  // no lattice
    const auto given = [&](const char* key) { return vm.count(key) > 0 && !vm[key].defaulted(); };
    for (const char* key : {"t", "m"})
        TOPOKPM_USER_REQUIRE(!given(key), "--", key, ": model ", name, " takes its energies from --model-file");
    for (const char* key : {"dot-potential", "dot-radius", "dot-period", "dot-depth"})
        TOPOKPM_USER_REQUIRE(!given(key) || (!mm && std::string(key) != "dot-depth"), "--", key, ": dots on model ",
                             name, mm ? " need a lattice, which a Matrix Market file does not have"
                                      : " act on every layer (--dot-depth is ti's)");
    TOPOKPM_USER_REQUIRE(!mm || (cfg.kpm.k_points.empty() && cfg.kpm.k_path.empty()), "--k-points/--k-path: model ",
                         name, " has no lattice");
    TOPOKPM_USER_REQUIRE(cfg.kpm.k_path.empty() || !cfg.model.cell_vectors.empty(), "--k-path: model ", name,
                         " needs its cell vectors (--cell-vectors) for the lengths along the path (or give --k-points)");
    if (!mm) return;
    TOPOKPM_USER_REQUIRE(!given("boundary"), "--boundary: model ", name, " has no lattice");
    TOPOKPM_USER_REQUIRE(!given("disorder"), "--disorder: model ", name, " takes its diagonal "
                         "from the file (export the disordered model with --export-matrix instead)");
    TOPOKPM_USER_REQUIRE(cfg.kpm.ldos.rfind("layer:", 0) != 0 && cfg.kpm.ldos.rfind("site:", 0) != 0, "--ldos ",
                         cfg.kpm.ldos, ": model ", name, " has no lattice (select rows, e.g. --ldos 0,5,8-11)");
    TOPOKPM_USER_REQUIRE(cfg.storage.matrix != MatrixKind::Free,
                         "--matrix free: model ", name, " has no lattice (use --matrix sell or crs)");
}

/// KPM: moments, vectors, trace, bounds, scaling.
void read_kpm(const po::variables_map& vm, RunConfig& cfg)
{
    cfg.kpm.num_moments = int_option<int>(vm, "moments", 2, 1 << 24, "2 .. 16777216");
    cfg.kpm.num_vectors = int_option<int>(vm, "vectors", 1, 1 << 16, "1 .. 65536");
    cfg.kpm.block_width = int_option<int>(vm, "block-width", 0, cfg.kpm.num_vectors, "0 .. --vectors");
    cfg.kpm.vector_seed = parse_seed("vector-seed", vm["vector-seed"].as<std::string>());
    const std::string trace = vm["trace"].as<std::string>();
    TOPOKPM_USER_REQUIRE(trace == "stochastic" || trace == "exact", "--trace '", trace,
                         "': allowed values are stochastic, exact");
    cfg.kpm.trace = trace == "exact" ? TraceKind::Exact : TraceKind::Stochastic;
    const std::string bounds = vm["bounds"].as<std::string>();
    TOPOKPM_USER_REQUIRE(bounds == "lanczos" || bounds == "gershgorin", "--bounds '", bounds,
                         "': allowed values are lanczos, gershgorin");
    cfg.kpm.bounds_method = bounds == "gershgorin" ? BoundsMethod::Gershgorin : BoundsMethod::Lanczos;
    if (vm.count("energy-range")) {
        const auto [lo, hi] = parse_range("energy-range", vm["energy-range"].as<std::string>());
        cfg.kpm.energy_range = {lo, hi};
        cfg.kpm.bounds_method = BoundsMethod::User;
    }
    cfg.kpm.lanczos_steps = int_option<int>(vm, "lanczos-steps", 2, 100000, "2 .. 100000");
    cfg.kpm.epsilon = parse_real("epsilon", vm["epsilon"].as<std::string>());
    TOPOKPM_USER_REQUIRE(cfg.kpm.epsilon >= 0.0 && cfg.kpm.epsilon < 1.0, "--epsilon ", cfg.kpm.epsilon,
                         ": allowed range is [0, 1)");
}

/// Reconstruction: kernel and energy grid.
void read_reconstruction(const po::variables_map& vm, RunConfig& cfg)
{
    cfg.kpm.kernel = analysis::parse_damping_kernel(vm["kernel"].as<std::string>());
    cfg.kpm.lorentz_lambda = parse_real("lorentz-lambda", vm["lorentz-lambda"].as<std::string>());
    TOPOKPM_USER_REQUIRE(cfg.kpm.lorentz_lambda > 0.0, "--lorentz-lambda ", cfg.kpm.lorentz_lambda, ": must be > 0");
    cfg.kpm.energy_points = int_option<int>(vm, "energy-points", 0, 1 << 28, "0 (= 2 M) or M .. 2^28");
    if (cfg.kpm.energy_points == 0) cfg.kpm.energy_points = 2 * cfg.kpm.num_moments;
    TOPOKPM_USER_REQUIRE(cfg.kpm.energy_points >= cfg.kpm.num_moments, "--energy-points ", cfg.kpm.energy_points,
                         ": must be >= --moments (", cfg.kpm.num_moments, ") or 0 for 2 M");
    if (vm.count("energy-grid")) {
        const std::string text = vm["energy-grid"].as<std::string>();
        const std::vector<std::string> parts = split(text, ':');
        TOPOKPM_USER_REQUIRE(parts.size() == 3, "--energy-grid '", text, "': expected Emin:Emax:K, e.g. -3:3:601");
        EnergyGrid grid;
        grid.lower = parse_energy("energy-grid", parts[0]);
        grid.upper = parse_energy("energy-grid", parts[1]);
        const long long k = parse_integer("energy-grid", parts[2]);
        TOPOKPM_USER_REQUIRE(grid.lower < grid.upper && k >= 2 && k <= (1 << 28), "--energy-grid '", text,
                             "': need Emin < Emax and 2 <= K <= 2^28");
        grid.num_points = static_cast<int>(k);
        cfg.kpm.energy_grid = grid;
    }
}

/// --time-limit: "HH:MM:SS", "MM:SS" or seconds, > 0.
double parse_time_limit(const std::string& text)
{
    double seconds = 0.0;
    std::size_t start = 0;
    int fields = 0;
    bool ok = !text.empty();
    while (ok && start <= text.size()) {
        const std::size_t colon = text.find(':', start);
        const std::string part = text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        char* end = nullptr;
        const double v = part.empty() ? -1.0 : std::strtod(part.c_str(), &end);
        ok = !part.empty() && end == part.c_str() + part.size() && v >= 0.0 && std::isfinite(v) && ++fields <= 3 &&
             (fields == 1 || v < 60.0);
        seconds = 60.0 * seconds + v;
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    TOPOKPM_USER_REQUIRE(ok && seconds > 0.0, "--time-limit '", text,
                         "': expected HH:MM:SS, MM:SS or seconds, greater than 0 (minutes and seconds below 60)");
    return seconds;
}

/// Realizations, LDOS / A(k, E) selections, checkpoint and restart.
void read_quantity_and_restart(const po::variables_map& vm, RunConfig& cfg)
{
    cfg.kpm.realizations = int_option<int>(vm, "realizations", 1, 100000, "1 .. 100000");
    if (vm.count("ldos")) {
        cfg.kpm.ldos = vm["ldos"].as<std::string>();
        TOPOKPM_USER_REQUIRE(!cfg.kpm.ldos.empty(), "--ldos: empty selection (e.g. --ldos 0,1,2 or --ldos layer:0)");
    }
    if (vm.count("ldos-map-energy")) {
        cfg.kpm.ldos_map_energy = parse_energy("ldos-map-energy", vm["ldos-map-energy"].as<std::string>());
        TOPOKPM_USER_REQUIRE(cfg.kpm.ldos.rfind("layer:", 0) == 0, "--ldos-map-energy needs --ldos layer:Z (the map is per site of one layer)");
    }
    const std::string method = vm["ldos-method"].as<std::string>();
    TOPOKPM_USER_REQUIRE(method == "exact" || method == "probing", "--ldos-method '", method, "': expected exact or probing");
    cfg.kpm.ldos_method = method == "probing" ? LdosMethod::Probing : LdosMethod::Exact;
    TOPOKPM_USER_REQUIRE(vm["ldos-method"].defaulted() || vm.count("ldos"), "--ldos-method needs --ldos (it says how the LDOS rows are computed)");
    cfg.kpm.probing_distance_auto = vm["probing-distance"].as<std::string>() == "auto";
    if (!cfg.kpm.probing_distance_auto)
        cfg.kpm.probing_distance = int_option<int>(vm, "probing-distance", 1, 1000, "auto or 1 .. 1000");
    cfg.kpm.probing_draws = int_option<int>(vm, "probing-draws", 1, 1000, "1 .. 1000");
    TOPOKPM_USER_REQUIRE(cfg.kpm.ldos_method == LdosMethod::Probing ||
                             (vm["probing-distance"].defaulted() && vm["probing-draws"].defaulted()),
                         "--probing-distance and --probing-draws apply to --ldos-method probing");
    if (vm.count("green")) {
        const std::string text = vm["green"].as<std::string>();
        const double eta = parse_energy("green", text);
        TOPOKPM_USER_REQUIRE(eta >= kMinEnergyScale, "--green '", text,
                             "': the broadening ETA must be > 0, from 1e-100 to 1e+100 (units of t)");
        TOPOKPM_USER_REQUIRE(vm.count("ldos"), "--green needs --ldos ROWS (the rows whose exact LDOS it computes)");
        cfg.kpm.green_eta = eta;
    }
    if (vm.count("conductivity")) {
        cfg.kpm.conductivity = vm["conductivity"].as<std::string>();
        TOPOKPM_USER_REQUIRE(!vm.count("ldos") && !vm.count("k-points") && !vm.count("k-path"),
                             "--conductivity comes with the DOS; not with --ldos or --k-points/--k-path");
        TOPOKPM_USER_REQUIRE(!vm.count("energy-grid"), "--conductivity is evaluated on the Chebyshev grid (--energy-points K); not with --energy-grid");
        TOPOKPM_USER_REQUIRE(cfg.kpm.realizations == 1, "--conductivity runs one disorder realization (allowed: --realizations 1)");
    }
    if (vm.count("temperature")) {
        const std::string text = vm["temperature"].as<std::string>();
        cfg.kpm.temperature = parse_energy("temperature", text);
        TOPOKPM_USER_REQUIRE(cfg.kpm.temperature >= 0.0, "--temperature '", text, "': out of range (allowed: >= 0, units of t)");
        TOPOKPM_USER_REQUIRE(vm.count("conductivity"), "--temperature needs --conductivity (it is the temperature of its Fermi function)");
    }
    if (vm.count("k-points")) cfg.kpm.k_points = vm["k-points"].as<std::string>();
    if (vm.count("k-path")) cfg.kpm.k_path = vm["k-path"].as<std::string>();
    TOPOKPM_USER_REQUIRE(!(vm.count("k-points") && vm.count("k-path")), "--k-points and --k-path: give one of them");
    TOPOKPM_USER_REQUIRE(!vm.count("k-points") || !cfg.kpm.k_points.empty(), "--k-points: empty list (e.g. --k-points \"0,0;1,0\")");
    TOPOKPM_USER_REQUIRE(!vm.count("k-path") || !cfg.kpm.k_path.empty(), "--k-path: empty path (e.g. --k-path M-G-X)");
    TOPOKPM_USER_REQUIRE(cfg.kpm.ldos.empty() || (cfg.kpm.k_points.empty() && cfg.kpm.k_path.empty()),
                         "--ldos and --k-points/--k-path: one run computes one of them");
    TOPOKPM_USER_REQUIRE(cfg.kpm.trace == TraceKind::Stochastic || (cfg.kpm.ldos.empty() && cfg.kpm.k_points.empty() && cfg.kpm.k_path.empty()),
                         "--trace exact applies to the DOS; --ldos and --k-points/--k-path are always exact");
    if (vm.count("checkpoint")) {
        cfg.outputs.checkpoint = vm["checkpoint"].as<std::string>();
        TOPOKPM_USER_REQUIRE(!cfg.outputs.checkpoint.empty(), "--checkpoint: empty file name");
    }
    cfg.outputs.checkpoint_every_s = parse_real("checkpoint-every", vm["checkpoint-every"].as<std::string>());
    TOPOKPM_USER_REQUIRE(cfg.outputs.checkpoint_every_s >= 0.0, "--checkpoint-every ", cfg.outputs.checkpoint_every_s,
                         ": must be >= 0 seconds (0 = only on SIGTERM/SIGINT)");
    if (vm.count("time-limit")) cfg.outputs.time_limit_s = parse_time_limit(vm["time-limit"].as<std::string>());
    if (vm.count("restart")) {
        cfg.outputs.restart = vm["restart"].as<std::string>();
        TOPOKPM_USER_REQUIRE(!cfg.outputs.restart.empty(), "--restart: empty file name");
    }
}

/// Storage, threads, device and precision.
void read_storage(const po::variables_map& vm, RunConfig& cfg)
{
    const std::string matrix = vm["matrix"].as<std::string>();
    if (matrix == "sell") cfg.storage.matrix = MatrixKind::Sell;
    else if (matrix == "crs") cfg.storage.matrix = MatrixKind::Crs;
    else if (matrix == "free") cfg.storage.matrix = MatrixKind::Free;
    else if (matrix == "naive") cfg.storage.matrix = MatrixKind::Naive;
    else if (matrix != "auto")
        throw InputError(detail::concat("--matrix '", matrix, "': allowed values are auto, sell, crs, free, naive"));
    cfg.storage.sell_sigma = int_option<int>(vm, "sell-sigma", 1, 1 << 30, "1 .. 2^30");
    cfg.storage.tblock_lines = int_option<int>(vm, "tblock-lines", -1, 1 << 30, "-1 .. 2^30");
    cfg.runtime.threads = int_option<int>(vm, "threads", 0, 4096, "0 .. 4096");
    const std::string device = vm["device"].as<std::string>();
    TOPOKPM_USER_REQUIRE(device == "cpu" || device == "cuda", "--device '", device, "': allowed values are cpu, cuda");
    cfg.storage.device = device == "cuda" ? DeviceKind::Cuda : DeviceKind::Cpu;
    const std::string precision = vm["precision"].as<std::string>();
    TOPOKPM_USER_REQUIRE(precision == "double" || precision == "single", "--precision '", precision,
                         "': allowed values are double, single");
    cfg.storage.precision = precision == "single" ? Precision::Single : Precision::Double;
    // `auto` values depend on the run's block width, known with the model: resolve_run().
    const bool sell_c_given = vm["sell-C"].as<std::string>() != "auto";
    cfg.storage.auto_sell_c = !sell_c_given;
    if (sell_c_given) cfg.storage.sell_chunk_height = int_option<int>(vm, "sell-C", 1, 1024, "1 .. 1024 or auto");
    cfg.storage.auto_matrix = matrix == "auto";
    cfg.storage.sell_options_given = sell_c_given || !vm["sell-sigma"].defaulted();
    // The stencils' own refusal, asked before any rank builds (one message, not one per rank);
    // `auto` never picks free in a field (fastest_matrix).
    if (cfg.storage.matrix == MatrixKind::Free)
        hamiltonians::require_stencil_carries_field(cfg.model.flux, hamiltonians::reads_model_file(cfg.model.name));
    // Which combinations run is the capability table's (app/cli/capabilities.hpp), checked
    // when the ranks are known.
}

/// Planning and runs under mpirun.
void read_plan_and_parallel(const po::variables_map& vm, RunConfig& cfg)
{
    cfg.runtime.plan.enabled = vm["plan"].as<bool>() || vm.count("plan-json");
    if (vm.count("plan-json")) {
        cfg.runtime.plan.json = vm["plan-json"].as<std::string>();
        TOPOKPM_USER_REQUIRE(!cfg.runtime.plan.json.empty(), "--plan-json '': give - (stdout) or a file name");
    }
    cfg.runtime.plan.ranks = int_option<int>(vm, "ranks", 1, 10'000'000, "1 .. 10^7");
    cfg.runtime.plan.gpus = int_option<int>(vm, "gpus", 0, cfg.runtime.plan.ranks, "0 .. --ranks");
    cfg.runtime.weights = vm["weights"].as<std::string>();
    cfg.runtime.comm_mode = vm["comm-mode"].as<std::string>();
    TOPOKPM_USER_REQUIRE(cfg.runtime.comm_mode == "vector" || cfg.runtime.comm_mode == "overlap" || cfg.runtime.comm_mode == "task",
                         "--comm-mode '", cfg.runtime.comm_mode, "': allowed are vector, overlap, task");
    cfg.runtime.reduce_every_sweep = vm["reduce-every-sweep"].as<bool>();
    cfg.runtime.pin_threads = !vm["no-pin"].as<bool>();
    cfg.runtime.decomposition = vm["decomposition"].as<std::string>();
    {
        const std::string& d = cfg.runtime.decomposition;
        int px = 0, py = 0;
        char tail = 0;
        const bool grid = std::sscanf(d.c_str(), "%dx%d%c", &px, &py, &tail) == 2 && px >= 1 && py >= 1;
        TOPOKPM_USER_REQUIRE(d == "1d" || d == "2d" || d == "auto" || grid, "--decomposition '", d,
                             "': allowed are 1d, 2d, auto or a process grid PXxPY (e.g. 2x2)");
    }
    // Bandwidths from 1 MB/s to 1 PB/s: beyond, the predicted times overflow the plan's table.
    const auto bandwidth = [&](const char* key, bool zero_measures) {
        const double v = parse_real(key, vm[key].as<std::string>());
        TOPOKPM_USER_REQUIRE((zero_measures && v == 0.0) || (v >= 1e-3 && v <= 1e6), "--", key, " ", v,
                             ": allowed range is ", zero_measures ? "0 (measure) or " : "", "1e-3 .. 1e6 GB/s");
        return v;
    };
    cfg.runtime.plan.bandwidth_gbs = bandwidth("plan-bandwidth", true);
    cfg.runtime.plan.network_gbs = bandwidth("plan-network", false);
    cfg.runtime.plan.gpu_bandwidth_gbs = bandwidth("plan-gpu-bandwidth", false);
}

/// "dir/name.ext" -> "name": the default result name of a model without a lattice.
std::string file_stem(const std::string& path)
{
    const std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    const std::size_t dot = base.find_last_of('.');
    return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

/// Output files and reporting.
void read_output(const po::variables_map& vm, RunConfig& cfg)
{
    if (vm.count("output")) cfg.outputs.result_file = vm["output"].as<std::string>();
    TOPOKPM_USER_REQUIRE(!vm.count("output") || !cfg.outputs.result_file.empty(), "--output: empty file name");
    if (cfg.outputs.result_file.empty())
        cfg.outputs.result_file = cfg.model.name + "_" + (vm.count("lattice") ? vm["lattice"].as<std::string>() : file_stem(cfg.model.file)) +
                                  (cfg.program == Program::Eigs ? "_eigs.h5" : ".h5");
    if (vm.count("export-matrix")) {
        cfg.outputs.export_matrix = vm["export-matrix"].as<std::string>();
        TOPOKPM_USER_REQUIRE(!cfg.outputs.export_matrix.empty(), "--export-matrix: empty file name");
    }
    cfg.outputs.quiet = vm["quiet"].as<bool>();
    cfg.outputs.progress_interval_s = parse_real("progress-interval", vm["progress-interval"].as<std::string>());
    TOPOKPM_USER_REQUIRE(cfg.outputs.progress_interval_s > 0.0, "--progress-interval ", cfg.outputs.progress_interval_s, ": must be > 0 seconds");
    cfg.runtime.memory_limit_gib = parse_real("memory-limit", vm["memory-limit"].as<std::string>());
    TOPOKPM_USER_REQUIRE(cfg.runtime.memory_limit_gib >= 0.0, "--memory-limit ", cfg.runtime.memory_limit_gib, ": must be >= 0 GiB");
}

/// kpm-eigs: one request (models.md §6), the method and the tolerance.
void read_eigs(const po::variables_map& vm, RunConfig& cfg)
{
    using Kind = numerics::EigenRequest::Kind;
    auto& r = cfg.eigs.request;
    const int given = int(vm.count("window")) + int(vm.count("extremal")) + int(vm.count("shift"));
    TOPOKPM_USER_REQUIRE(given == 1, "kpm-eigs needs exactly one request: --window Emin:Emax, --extremal lowest:k "
                         "(or highest:k), or --shift E0 --count k (got ", given, ")");
    TOPOKPM_USER_REQUIRE(!vm.count("count") || vm.count("shift"), "--count goes with --shift (for --extremal write lowest:k)");
    if (vm.count("window")) {
        r.kind = Kind::Window;
        std::tie(r.window_min, r.window_max) = parse_range("window", vm["window"].as<std::string>());
    } else if (vm.count("extremal")) {
        const std::string text = vm["extremal"].as<std::string>();
        const std::vector<std::string> parts = split(text, ':');
        TOPOKPM_USER_REQUIRE(parts.size() == 2 && (parts[0] == "lowest" || parts[0] == "highest"), "--extremal '", text,
                             "': expected lowest:k or highest:k, e.g. lowest:10");
        r.kind = parts[0] == "lowest" ? Kind::Lowest : Kind::Highest;
        const long long k = parse_integer("extremal", parts[1]);
        TOPOKPM_USER_REQUIRE(k >= 1 && k <= (1 << 30), "--extremal '", text, "': k must be >= 1");
        r.count = static_cast<int>(k);
    } else {
        r.kind = Kind::Shift;
        r.shift = parse_energy("shift", vm["shift"].as<std::string>());
        TOPOKPM_USER_REQUIRE(vm.count("count"), "--shift needs --count k (the number of eigenvalues nearest the shift)");
        r.count = int_option<int>(vm, "count", 1, 1 << 30, "1 .. N");
    }
    const std::string method = vm["method"].as<std::string>();
    if (method == "auto") cfg.eigs.method = EigsMethod::Auto;
    else if (method == "chebfd") cfg.eigs.method = EigsMethod::ChebFd;
    else if (method == "lanczos") cfg.eigs.method = EigsMethod::Lanczos;
    else if (method == "shift-invert") cfg.eigs.method = EigsMethod::ShiftInvert;
    else if (method == "dense") cfg.eigs.method = EigsMethod::Dense;
    else throw InputError(detail::concat("--method '", method, "': allowed values are auto, chebfd, lanczos, shift-invert, dense"));
    r.tolerance = parse_real("tolerance", vm["tolerance"].as<std::string>());
    TOPOKPM_USER_REQUIRE(r.tolerance > 0.0 && r.tolerance < 1.0, "--tolerance ", r.tolerance,
                         ": allowed range is 0 < tolerance < 1 (relative to max(|Emin|, |Emax|))");
    cfg.eigs.save_vectors = vm["save-vectors"].as<bool>();
}

}  // namespace

/// parse_command_line() with the messages of the library calls as those layers wrote them.
std::optional<RunConfig> parse_with_parameter_names(int argc, char** argv, Program program);

std::optional<RunConfig> parse_command_line(int argc, char** argv, Program program)
{
    std::optional<RunConfig> cfg;
    with_flag_names([&] { cfg = parse_with_parameter_names(argc, argv, program); });
    return cfg;
}

std::optional<RunConfig> parse_with_parameter_names(int argc, char** argv, Program program)
{
    const po::options_description options = make_options(program);
    po::variables_map vm;
    RunConfig cfg;
    cfg.program = program;
    for (int i = 0; i < argc; ++i) cfg.provenance.command_line += (i ? " " : "") + files::shell_word(argv[i]);
    std::map<std::string, int> config_line;  // key -> its line in the --config file
    std::set<std::string> on_command_line;
    try {
        const po::parsed_options parsed = po::parse_command_line(argc, argv, options);
        for (const po::option& o : parsed.options) on_command_line.insert(o.string_key);
        po::store(parsed, vm);
    } catch (const po::error& e) {
        // Boost quotes the offending argument: printable, cut to 60 characters.
        throw InputError(detail::concat(printable_message(e.what()), " (see ", program_name(program), " --help)"));
    }
    if (vm.count("config")) {
        cfg.provenance.config_path = vm["config"].as<std::string>();
        cfg.provenance.config_text = read_input_file(cfg.provenance.config_path);
        config_line = check_config_lines(cfg.provenance.config_path, cfg.provenance.config_text, options, program);
        std::istringstream config_stream(cfg.provenance.config_text);
        try {
            // Stored after the command line: po::store keeps the first value, so the command line wins.
            po::store(po::parse_config_file(config_stream, options), vm);
        } catch (const po::error_with_option_name& e) {
            // Lines are checked above: what is left is a bad value of a switch (Boost would quote it).
            std::string key = e.get_option_name();
            key.erase(0, key.find_first_not_of('-'));
            const auto at = config_line.find(key);
            throw InputError(detail::concat("--config '", cfg.provenance.config_path, "'",
                                            at == config_line.end() ? std::string() : detail::concat(" line ", at->second),
                                            ": the value of key '", key,
                                            "' is not valid (a switch takes true, false, yes, no, on, off, 1 or 0)"));
        } catch (const po::error&) {  // not expected after check_config_lines; still no quote
            throw InputError(detail::concat("--config '", cfg.provenance.config_path, "': not `key = value` lines"));
        }
    }
    try {
        po::notify(vm);
    } catch (const po::error& e) {
        throw InputError(detail::concat(printable_message(e.what()), " (see ", program_name(program), " --help)"));
    }
    if (vm.count("help")) {
        std::cout << options << "\n";
        return std::nullopt;
    }
    if (vm.count("version")) {
        std::cout << program_name(program) << " (topokpm) " << TOPOKPM_VERSION << ", git " << git_revision() << "\n";
        return std::nullopt;
    }

    if (program == Program::Eigs) refuse_dos_only_options(vm, on_command_line, config_line, cfg.provenance.config_path);
    for (const auto& [key, line] : config_line)
        if (!on_command_line.count(key) && vm.count(key) && vm[key].value().type() == typeid(std::string))
            cfg.provenance.from_config.emplace(key, ConfigValue{line, vm[key].as<std::string>()});
    try {
        read_model(vm, cfg);
        read_kpm(vm, cfg);
        read_reconstruction(vm, cfg);
        read_quantity_and_restart(vm, cfg);
        read_storage(vm, cfg);
        read_plan_and_parallel(vm, cfg);
        read_output(vm, cfg);
        if (program == Program::Eigs) read_eigs(vm, cfg);
        refuse_beyond_file_models(vm, cfg);
    } catch (const InputError& e) {
        throw InputError(without_config_value(name_flags(e.what()), cfg.provenance));
    }
    return cfg;
}

std::string program_name(Program program) { return program == Program::Eigs ? "kpm-eigs" : "kpm-dos"; }

std::string to_string(LdosMethod method) { return method == LdosMethod::Probing ? "probing" : "exact"; }

std::string to_string(EigsMethod method)
{
    switch (method) {
    case EigsMethod::Auto: return "auto";
    case EigsMethod::ChebFd: return "chebfd";
    case EigsMethod::Lanczos: return "lanczos";
    case EigsMethod::ShiftInvert: return "shift-invert";
    case EigsMethod::Dense: return "dense";
    }
    return "?";
}

std::string to_string(numerics::EigenRequest::Kind kind)
{
    using Kind = numerics::EigenRequest::Kind;
    switch (kind) {
    case Kind::Window: return "window";
    case Kind::Lowest: return "lowest";
    case Kind::Highest: return "highest";
    case Kind::Shift: return "shift";
    }
    return "?";
}

std::string to_string(MatrixKind kind)
{
    switch (kind) {
    case MatrixKind::Sell: return "sell";
    case MatrixKind::Crs: return "crs";
    case MatrixKind::Free: return "free";
    case MatrixKind::Naive: return "naive";
    }
    return "?";
}

Quantity quantity(const RunConfig& config)
{
    if (!config.kpm.ldos.empty()) return Quantity::Ldos;
    if (!config.kpm.k_points.empty() || !config.kpm.k_path.empty()) return Quantity::Spectral;
    return Quantity::Dos;
}

std::string to_string(Quantity q)
{
    switch (q) {
    case Quantity::Dos: return "dos";
    case Quantity::Ldos: return "ldos";
    case Quantity::Spectral: return "spectral";
    }
    return "?";
}

std::uint64_t realization_seed(std::uint64_t seed, int k)
{
    return k == 0 ? seed : splitmix64(seed, 1000 + static_cast<std::uint64_t>(k));
}

std::string checkpoint_path(const RunConfig& config)
{
    return config.outputs.checkpoint.empty() ? config.outputs.result_file + ".checkpoint.h5" : config.outputs.checkpoint;
}

std::string to_string(TraceKind kind) { return kind == TraceKind::Exact ? "exact" : "stochastic"; }

std::string to_string(DeviceKind kind) { return kind == DeviceKind::Cuda ? "cuda" : "cpu"; }

std::string to_string(Precision precision) { return precision == Precision::Single ? "single" : "double"; }

std::string to_string(BoundsMethod method)
{
    switch (method) {
    case BoundsMethod::Lanczos: return "lanczos";
    case BoundsMethod::Gershgorin: return "gershgorin";
    case BoundsMethod::User: return "user";
    }
    return "?";
}

}  // namespace topokpm::app
