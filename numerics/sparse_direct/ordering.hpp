#pragma once
/// @file ordering.hpp
/// Fill-reducing orderings of a symmetric graph (internal to sparse_direct).

#include <vector>

#include "numerics/sparse_direct/sparse_lu.hpp"

namespace topokpm::sparse_direct {

/// Adjacency of an undirected graph without self loops: the neighbours of v are
/// cols[row_ptr[v] .. row_ptr[v+1]), ascending (the pattern of a symmetric matrix without
/// its diagonal).
using Graph = CsrPattern;

/// The graph of |A| + |A|^T (diagonal dropped). Throws DimensionMismatch for a malformed CSR.
Graph symmetric_graph(const CsrMatrix& a);

/// The quotient graph of the sites v / b (b consecutive rows per site; n a multiple of b).
Graph site_graph(const Graph& g, int b);

/// perm[new] = old: a permutation of 0..n-1 by options.ordering. Throws InputError for
/// inconsistent {site_size} / {lattice}.
std::vector<global_index> fill_reducing_ordering(const Graph& g, const AnalyseOptions& options);

/// Geometric nested dissection of a lattice (all orbitals of a site kept together):
/// separators are planes of sites, ordered after the two halves they separate.
std::vector<global_index> lattice_nested_dissection(const LatticeGeometry& lattice);

}  // namespace topokpm::sparse_direct
