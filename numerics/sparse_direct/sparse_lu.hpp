#pragma once
/// @file sparse_lu.hpp
/// Serial supernodal sparse LU with static pivoting (the SuperLU_DIST scheme of seed 003,
/// one process, host only), complex double. Three phases:
///
///   SparseLU lu(A, options);   // analyse: ordering P, elimination tree, supernodes (pattern only)
///   lu.factorize(z);           // numeric: P (A - z I) P^T = L U, L unit lower, U upper
///   lu.solve(b, x, nrhs);      // x = (A - z I)^-1 b by triangular solves + iterative refinement
///
/// factorize() may be called again with another shift z (the Green's-function energy grid,
/// shift-invert) and reuses the analysis. The pattern is symmetrized (|A| + |A|^T), so L and
/// U^T share one supernodal structure; values need not be symmetric or Hermitian, so both
/// (E + i eta) - H (z = E + i eta, then negate: G(z) = -(H - z I)^-1) and the Hermitian-
/// indefinite H - sigma (z = sigma real) are factored.
///
/// Static pivoting: no row interchanges. A pivot u_jj with |u_jj| < tau, where
/// tau = pivot_scale * ||A - z I||_1 (default pivot_scale = sqrt(eps), eps = 2^-52), is replaced
/// by tau * u_jj/|u_jj| (tau when u_jj = 0) and counted (FactorReport::tiny_pivots); the
/// factors are then those of a nearby matrix and the solve's iterative refinement recovers
/// the solution of the original system where it is well conditioned. A replaced pivot at an
/// exact singularity (z an eigenvalue of A) shows as a large backward error in SolveReport,
/// never as inf/NaN.
///
/// HALO (seed 003; docs/sparse_direct.md): the Schur-complement update of step k, the
/// columns R_k = supernode_rows(k) of its update block, is split at n_g(k): columns R_k[0, n_g)
/// are updated by the host in its panels, columns R_k[n_g, m_k) by an accelerator in a
/// zero-initialized structural shadow of the panels (same layout). Before step t factors
/// panel t, the host adds A's entries and the accelerator's accumulated shadow of panel t
/// to the host's accumulated updates (lazy reduction). Every update is accumulated in this
/// form, with or without an accelerator: entry = (H + a) + D, H the host's and D the
/// accelerator's sums of -L U contributions in step order, each started at -0.0 (so that the
/// untouched one adds exactly nothing), a the entry of A - z I. The owner of a column is fixed
/// for the whole factorization (columns of supernodes >= a boundary supernode are the
/// accelerator's), so every entry's sum lives on one side and is formed by the same
/// operations in the same order whatever the boundary; the GEMMs are cut at the same
/// structural split points whatever the boundary (a BLAS GEMM's columns depend on the call's
/// shape). Hence the factor is bitwise independent of the boundary when both sides run the
/// same kernels (Accelerator::host_memory); n_g(k) is the number of R_k's columns before the
/// boundary. On a GPU (Accelerator::cuda) the accelerator-owned columns are the host's to
/// rounding (cuBLAS sums in another order), the host-owned ones still bit for bit.
///
/// Threads (Accelerator::none): the OpenMP threads share each step's work in chunks fixed by
/// the analysis (AnalyseOptions::parallel_chunk): row blocks of L(R, k), column blocks of
/// U(k, R), and column blocks of the Schur update (one single-threaded GEMM + SCATTER each,
/// cut inside the split-point segments, so HALO uses the same GEMM shapes). Chunks touch
/// disjoint entries, so the factor is bitwise independent of the thread count and equal to
/// HALO's at every boundary.

#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <limits>
#include <optional>
#include <vector>

#include "numerics/base/first_touch.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/base/types.hpp"
#include "numerics/sparse_direct/update_kernels.hpp"

namespace topokpm::sparse_direct {

/// The pattern of a square sparse matrix in compressed rows: the columns of row i are
/// cols[row_ptr[i] .. row_ptr[i+1]), 0 <= col < n (also the adjacency lists of a graph,
/// ordering.hpp).
struct CsrPattern {
    global_index n = 0;
    std::vector<global_index> row_ptr{0};
    std::vector<global_index> cols;
    global_index nnz() const { return static_cast<global_index>(cols.size()); }
};

/// Square sparse matrix in compressed rows: its pattern, each row's columns strictly
/// ascending, and values[p] the entry at cols[p]. The diagonal need not be stored (a missing
/// diagonal entry is zero).
struct CsrMatrix : CsrPattern {
    std::vector<complex_double> values;
};

/// Every stored entry of `source` (e.g. a hamiltonians::Model) as a CsrMatrix.
CsrMatrix csr_from_rows(const RowSource& source);

/// A cuboid lattice of sites with `orbitals` consecutive rows per site, in the canonical order
/// of models.md: site(x, y, z) = z + nz (y + ny x), row = o + orbitals * site(x, y, z).
/// ti: (Nx, Ny, Nz, 4); graphene: (Nx, Ny, 1, 2). Couplings are assumed to reach only sites
/// whose coordinates differ by at most 1 per direction (true for both models): then one
/// plane of sites separates (two planes across a periodic direction).
struct LatticeGeometry {
    int nx = 1, ny = 1, nz = 1;
    int orbitals = 1;
    bool periodic[3] = {false, false, false};  ///< x, y, z
};

enum class Ordering {
    Natural,                    ///< identity (tests; banded matrices)
    Metis,                      ///< METIS_NodeND on the graph of |A| + |A|^T (sites compressed)
    LatticeNestedDissection,    ///< geometric nested dissection on AnalyseOptions::lattice
};

struct AnalyseOptions {
    Ordering ordering = Ordering::Metis;
    /// Rows per site (Natural, Metis): the ordering and the symbolic phase work on sites of
    /// `site_size` consecutive rows (n must be a multiple), so all orbitals of a site stay
    /// together in one supernode. >= 1. The lattice ordering uses lattice->orbitals instead.
    int site_size = 1;
    /// Required by LatticeNestedDissection: nx ny nz orbitals must equal n.
    std::optional<LatticeGeometry> lattice;
    /// Relaxed amalgamation: a child supernode is merged into its parent when the merged
    /// supernode has <= relax_columns columns, or when the explicit zeros it then stores are
    /// <= relax_zero_fraction of its entries; never beyond max_supernode columns.
    int relax_columns = 16;
    double relax_zero_fraction = 0.1;
    int max_supernode = 192;
    /// Threads' unit of work in the numeric phase (see the file comment): a step's TRSM rows
    /// or columns and Schur-update columns are cut into ceil(len / parallel_chunk) equal
    /// pieces. Fixes the BLAS call shapes, hence the factor's bits. >= 1.
    int parallel_chunk = 96;
};

/// Where the accelerator part of a HALO Schur-complement update runs.
enum class Accelerator {
    none,         ///< no accelerator: the OpenMP threads share every step (single-threaded BLAS calls)
    host_memory,  ///< the dataflow runtime's host-memory device (own buffers, explicit copies):
                  ///< one host worker and one device worker, both on the CPU kernels
    cuda,         ///< a CUDA GPU (HaloOptions::gpu) driven by one worker: shadow in device
                  ///< memory, panels by cudaMemcpyAsync on its stream, cuBLAS zgemm + a scatter
                  ///< kernel. factorize() throws NotCompiled in a CPU-only build and
                  ///< ResourceError when the GPU is not visible.
};

/// HALO memory: beyond factor_memory_bytes(), a host mirror of the shadow (as large as the
/// panels) and the accelerator's copies of the shadow panels it has touched and not yet
/// returned (on the GPU: device memory). The first HALO factorization of an analysis with a
/// given accelerator also measures the rates (~0.1 s).
struct HaloOptions {
    Accelerator accelerator = Accelerator::none;
    /// < 0: the boundary is chosen by the model of measured update rates (GEMM rate and
    /// scatter bandwidth on each side, copy bandwidth between them). In [0, 1]: the
    /// accelerator's share of the Schur-update flops, snapped to the nearest entry of
    /// SparseLU::halo_split_shares() (0 = all-host, 1 = all-accelerator). Ignored for
    /// Accelerator::none (all-host).
    double device_share = -1.0;
    /// CUDA device index (Accelerator::cuda only), >= 0.
    int gpu = 0;
};

struct FactorOptions {
    /// tau = pivot_scale * ||A - z I||_1 (see file comment). >= 0; 0 disables replacement.
    double pivot_scale = std::sqrt(std::numeric_limits<double>::epsilon());
    HaloOptions halo;
};

/// What the HALO split did (all zero for Accelerator::none).
struct HaloReport {
    bool used = false;
    global_index boundary_supernode = 0;  ///< first supernode whose columns the accelerator owns
    double device_flop_share = 0.0;       ///< accelerator's share of the Schur-update GEMM flops
    bool chosen_by_model = false;
    global_index steps = 0;               ///< steps with a non-empty update (m_k > 0)
    global_index steps_split = 0;         ///< of those, 0 < n_g < m_k
    global_index steps_device_only = 0;   ///< of those, n_g = 0
    double mean_ng_fraction = 0.0;        ///< mean of n_g / m_k over those steps
    double bytes_to_device = 0.0;         ///< panels L(k), U(k) sent to the accelerator
    double shadow_init_bytes = 0.0;       ///< shadow panels filled with -0.0 on the accelerator (not sent)
    double bytes_to_host = 0.0;           ///< shadow panels brought back for the lazy reduction
    double lazy_reduction_seconds = 0.0;  ///< host time adding the shadow panels
    double host_busy_seconds = 0.0;       ///< host worker time inside tasks
    double device_busy_seconds = 0.0;     ///< accelerator worker time inside tasks
    double predicted_seconds = 0.0;       ///< model's sum over steps of max(host, accelerator)
    // Measured rates behind the model (measured at the first HALO factorization of the analysis).
    double host_gemm_gflops = 0.0, device_gemm_gflops = 0.0;
    double host_scatter_gb_s = 0.0, device_scatter_gb_s = 0.0, copy_gb_s = 0.0;
};

struct FactorReport {
    global_index tiny_pivots = 0;   ///< pivots replaced by tau (static pivoting)
    double norm1 = 0.0;             ///< ||A - z I||_1 (max column sum of |entries|)
    double pivot_threshold = 0.0;   ///< tau
    double seconds = 0.0;           ///< wall time of factorize()
    HaloReport halo;
};

struct SolveOptions {
    int max_refinement_steps = 10;  ///< >= 0
    /// Stop when the componentwise backward error max_i |r_i| / (|A| |x| + |b|)_i is below
    /// this, or when a step does not halve it.
    double target_backward_error = 4 * std::numeric_limits<double>::epsilon();
};

struct SolveReport {
    int refinement_steps = 0;        ///< corrections applied (max over right-hand sides)
    double backward_error = 0.0;     ///< componentwise, after the last step (max over rhs)
    double residual_norm = 0.0;      ///< max over rhs of ||b - (A - z I) x||_inf
    double seconds = 0.0;
};

class SparseLU {
    friend class DistributedLU;  // distributed_lu.hpp: the same analysis and panel kernel across ranks

public:
    /// Analyse phase: ordering, elimination tree, supernodes. Copies `a`. Throws InputError
    /// for an inconsistent option ({site_size}, {lattice}) and DimensionMismatch for a
    /// malformed matrix (row_ptr/cols sizes, unsorted or out-of-range columns).
    SparseLU(const CsrMatrix& a, const AnalyseOptions& options = {});

    /// Numeric phase: factors A - z I (z in units of A's entries). Throws InputError for
    /// {pivot_scale} < 0, {device_share} > 1 or {gpu} < 0; NumericalError if an entry is not
    /// finite; with Accelerator::cuda NotCompiled (CPU-only build) or ResourceError (no such GPU).
    FactorReport factorize(complex_double z = 0.0, const FactorOptions& options = {});

    /// x = (A - z I)^-1 b for `nrhs` right-hand sides, column-major n x nrhs blocks with
    /// leading dimension n (b and x may not alias). Requires factorize(); throws
    /// DimensionMismatch otherwise. Concurrent solve() calls on one factorization are safe
    /// (their buffers are local); factorize() must not run concurrently with anything.
    SolveReport solve(const complex_double* b, complex_double* x, int nrhs,
                      const SolveOptions& options = {}) const;

    /// r = b - (A - z I) x for one column of n, at any z (not only the factored one); returns
    /// the componentwise backward error max_i |r_i| / (|A - z I| |x| + |b|)_i and ||r||_inf.
    /// The residual of solve()'s refinement, for solvers that use the factors as a
    /// preconditioner (green.cpp's GMRES). Needs no factorization.
    std::pair<double, double> residual(complex_double z, const complex_double* b, const complex_double* x,
                                       complex_double* r) const;

    // ---- the analysis (permuted index space: row/column p of P A P^T = row perm()[p] of A) ----
    // The symbolic phase works on sites of b rows (b = lattice orbitals for the lattice
    // ordering, site_size otherwise): site k of the permuted matrix is rows [k b, (k+1) b).
    global_index size() const { return n_; }
    const std::vector<global_index>& perm() const { return perm_; }
    /// Elimination tree of the site graph of P (|A| + |A|^T) P^T: parent of site k (-1 for a
    /// root); with b = 1 the elimination tree of the columns.
    const std::vector<global_index>& etree() const { return parent_; }
    /// Supernode s holds columns [supernode_begin()[s], supernode_begin()[s+1]).
    const std::vector<global_index>& supernode_begin() const { return sn_begin_; }
    /// Rows below supernode s (>= its last column + 1), ascending: the stored rows of its L
    /// block under the dense diagonal block, and the stored columns of its U block.
    const std::vector<global_index>& supernode_rows(global_index s) const { return sn_rows_[s]; }
    /// Stored entries of L + U (explicit zeros of amalgamation included; diagonal once).
    global_index factor_nonzeros() const;
    /// Real floating-point operations of one factorize() (complex mul-add = 8).
    double factor_flops() const;
    /// Bytes factorize() holds: the panel arena (16 bytes per stored entry, as
    /// factor_nonzeros() but with the diagonal block's full square) and a work array of
    /// m x min(m, parallel_chunk) (largest m) per OpenMP thread; known after the analysis,
    /// before any numeric work.
    double factor_memory_bytes() const;

    /// Steps whose Schur update has at least this many flops (8 m^2 nc) share their pieces
    /// among the OpenMP threads; smaller steps run whole on the calling thread.
    static constexpr double parallel_update_flops = 2e7;

    // ---- HALO split points (see the file comment) ----
    /// Supernode indices at which the accelerator's part may begin, ascending, first 0
    /// (all-accelerator) and last the number of supernodes (all-host); chosen in the analysis
    /// so that the accelerator's share of the update flops steps by about 1/16.
    const std::vector<global_index>& halo_split_points() const { return split_points_; }
    /// The accelerator's share of the Schur-update GEMM flops at each split point (1 ... 0).
    const std::vector<double>& halo_split_shares() const { return split_shares_; }
    /// The factors as stored (L and U panels of every supernode, for bitwise comparisons).
    const FirstTouchVector<complex_double>& factor_values() const { return panels_; }

private:
    using PanelOf = std::function<complex_double*(global_index)>;
    /// The SCATTER of step k's update columns [c0, c1) into the panels panel_of(t) (the host's
    /// panels or the accelerator's shadow, in the memory of the device that applies it).
    void scatter_plan(global_index k, global_index c0, global_index c1, const PanelOf& panel_of,
                      ScatterPlan& plan) const;
    /// Columns [c0, c1) of step k's update on the host: one GEMM into `work`, then the SCATTER.
    void schur_update(global_index k, global_index c0, global_index c1, complex_double* work, ScatterPlan& plan,
                      const PanelOf& panel_of) const;
    /// Column ranges of step k's update cut at the split points and then into pieces of at
    /// most parallel_chunk columns (GEMM calls of fixed shape).
    void update_segments(global_index k, global_index c0, global_index c1,
                         std::vector<std::pair<global_index, global_index>>& out) const;
    /// Columns [c0, c1) of step k's update, piece by piece, with the kernels of the executing
    /// device (HALO's tasks): the GEMM shapes are those of the plain path on every backend.
    void update_columns(const UpdateKernels& kernels, void* queue, global_index k, global_index c0, global_index c1,
                        ScatterPlan& plan, const PanelOf& panel_of) const;
    void assemble(global_index s, complex_double* panel, complex_double z) const;
    void factor_panel(global_index k, complex_double* panel, double tau, global_index& replaced) const;
    /// x := refined solution of (A - shift I) x = b (nrhs columns of n) given x's first
    /// guess is not yet made: `apply_inverse` (v := (A - shift I)^-1 v, column-major n x nrhs,
    /// from the factors) gives it and every correction; refinement per column while each
    /// step at least halves the componentwise backward error (LAPACK's xGERFS rule). The one
    /// refinement of SparseLU::solve and DistributedLU::solve (seconds left 0).
    SolveReport refine(complex_double shift, const complex_double* b, complex_double* x, int nrhs,
                       const SolveOptions& options,
                       const std::function<void(std::vector<complex_double>&)>& apply_inverse) const;
    /// The diagonal block of panel k only (no TRSMs): DistributedLU's 2-D panel step.
    void factor_diagonal(global_index k, complex_double* panel, double tau, global_index& replaced) const;
    /// Pieces of step k's panel solves: [0, n) the row blocks of L(R, k), [n, 2n) the column
    /// blocks of U(k, R), n = panel_solve_pieces(k).
    global_index panel_solve_pieces(global_index k) const;
    void panel_solve(global_index k, complex_double* panel, global_index piece) const;
    /// Largest work array one schur_update() call needs (m x widest chunk).
    std::size_t update_work_size() const;
    void factorize_threads(complex_double z, double tau, FactorReport& report);
    void compute_split_points();
    void factorize_halo(complex_double z, const HaloOptions& options, double tau, FactorReport& report);
    global_index panel_size(global_index s) const { return panel_offset_[2 * s + 2] - panel_offset_[2 * s]; }
    complex_double* lpanel(global_index s) { return panels_.data() + panel_offset_[2 * s]; }
    complex_double* upanel(global_index s) { return panels_.data() + panel_offset_[2 * s + 1]; }
    const complex_double* lpanel(global_index s) const { return panels_.data() + panel_offset_[2 * s]; }
    const complex_double* upanel(global_index s) const { return panels_.data() + panel_offset_[2 * s + 1]; }

    global_index n_ = 0;
    CsrMatrix a_;
    std::vector<global_index> perm_, iperm_, parent_, sn_begin_, sn_of_;
    std::vector<std::vector<global_index>> sn_rows_;
    // Destination of every entry of a_ in the panels: (supernode, L or U, offset).
    std::vector<global_index> entry_sn_, entry_offset_;
    std::vector<std::uint8_t> entry_in_u_;
    // Numeric factors in one arena: lpanel(s) column-major (nc + m) x nc (diagonal block on
    // top, LU in place), upanel(s) column-major nc x m.
    FirstTouchVector<complex_double> panels_;
    std::vector<global_index> panel_offset_;
    int chunk_ = 96;                          // AnalyseOptions::parallel_chunk
    // Entries of A - z I per supernode (assembly): entry q of a_ (or -1 - p for an unstored
    // diagonal p), and its offset in the supernode's panel block (L then U).
    std::vector<global_index> asm_ptr_, asm_entry_, asm_offset_;
    std::vector<global_index> split_points_;
    std::vector<double> split_shares_;
    FirstTouchVector<complex_double> shadow_; // host mirror of the accelerator's shadow
    // Measured once (first HALO factorization): host and accelerator GEMM flop/s and
    // SCATTER bytes/s, copy bytes/s between them.
    std::vector<double> halo_rates_;
    int halo_rates_key_ = -1;                 // the accelerator (kind, gpu) halo_rates_ were measured with
    complex_double shift_ = 0.0;
    bool factored_ = false;
    double pivot_threshold_ = 0.0;
    global_index tiny_pivots_ = 0;
};

}  // namespace topokpm::sparse_direct
