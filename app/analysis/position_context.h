// Where does position live in the hidden states? (`urpe analyze`; after Song & Zhong
// 2024, "Uncovering hidden geometry in Transformers via disentangling position and context").
// Each layer's hidden states h_{c,t} ∈ ℝ^d on C contexts × T positions are split exactly into
//
//   μ = mean_{c,t} h;  pos_t = mean_c h_{c,t} − μ;  ctx_c = mean_t h_{c,t} − μ;
//   resid_{c,t} = h_{c,t} − μ − pos_t − ctx_c
//
// with Σ_t pos_t = 0 and Σ_c ctx_c = 0, so the centred states M (rows h − μ) split their energy
// like a two-way ANOVA: ‖M‖²_F = C·Σ_t‖pos_t‖² + T·Σ_c‖ctx_c‖² + Σ‖resid‖². From the positional
// basis P = [pos_1 … pos_T] come its singular values, stable rank Σσ²/σ₁², the rank holding 90%
// of the energy, the relative norm √C·σ₁(P)/σ₁(M), the smoothness E₁₀ (energy of the normalised
// Gram matrix in its 10 lowest DCT-II frequencies: near 1 for a smooth curve), the incoherence
// |cos(pos_t, ctx_c)| next to the same statistic for Gaussian vectors, and, where contexts carry a
// topic, the mean cos of ctx within and between topics (signed: see analyze_layer). Everything is computed in double.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace urpe {

// The symmetric eigensolvers behind the singular values: LAPACK's dsyev from the OpenBLAS the
// build links (URPE_WITH_OPENBLAS), or cyclic Jacobi rotations when built without it. Both are
// tested to agree.
enum class EigenSolver { lapack, jacobi };
bool have_lapack();
EigenSolver default_eigen_solver();  // lapack when the build has it
// Eigenvalues of the symmetric n × n matrix `a` (row-major), in descending order. Asking for
// lapack in a build without it is an error.
std::vector<double> symmetric_eigenvalues(std::vector<double> a, int64_t n, EigenSolver solver);
// The same, and the eigenvectors in `vectors` (n × n row-major, column k belongs to eigenvalue k).
std::vector<double> symmetric_eigen(std::vector<double> a, int64_t n, EigenSolver solver, std::vector<double>& vectors);
// Singular values (descending, min(rows, cols) of them) of the rows × cols matrix `a`, from the
// eigenvalues of its smaller Gram matrix.
std::vector<double> singular_values(const std::vector<double>& a, int64_t rows, int64_t cols, EigenSolver solver);

// The orthonormal DCT-II matrix F (n × n, row k = frequency k): F Fᵀ = I.
std::vector<double> dct2_matrix(int64_t n);
// Σ_{i,j<k} Ĝ²_ij / Σ Ĝ²_ij for Ĝ = F G Fᵀ (G n × n); 1 when k ≥ n; NaN for G = 0.
double low_frequency_energy(const std::vector<double>& g, int64_t n, int64_t k = 10);

// Hidden states of one layer: h[(c·T + t)·d + i].
struct HiddenCube {
  int64_t contexts = 0, positions = 0, dim = 0;
  std::vector<double> h;
};

struct Decomposition {
  std::vector<double> mu;   // d
  std::vector<double> pos;  // T × d
  std::vector<double> ctx;  // C × d
  std::vector<double> resid;  // C × T × d
};
// The exact split above. Errors for C < 2, T < 2 or a cube of the wrong size.
Decomposition decompose(const HiddenCube& cube);

struct LayerAnalysis {
  int64_t layer = 0;  // 0: the input to block 1; l: the output of block l
  int64_t contexts = 0, positions = 0, dim = 0;
  double total = 0;                               // ‖M‖²_F
  double pos_energy = 0, ctx_energy = 0, resid_energy = 0;  // C·Σ‖pos‖², T·Σ‖ctx‖², Σ‖resid‖²
  double pos_share = 0, ctx_share = 0, resid_share = 0;    // of total
  double anova_error = 0;    // |total − the three energies| / total (the identity, numerically)
  double pos_sum_error = 0;  // ‖Σ_t pos_t‖ / Σ_t‖pos_t‖ (0 up to rounding)
  double ctx_sum_error = 0;  // ‖Σ_c ctx_c‖ / Σ_c‖ctx_c‖
  std::vector<double> singular;  // σ(P), descending, min(T, d) values
  double sigma_m = 0;            // σ₁(M)
  double stable_rank = 0;        // Σσ²/σ₁²
  int64_t rank90 = 0;            // fewest σ holding 90% of Σσ²
  double relative_norm = 0;      // √C·σ₁(P)/σ₁(M)
  double e10 = 0;                // low-frequency energy of G; NaN when T ≤ 10 (trivially 1)
  std::vector<double> gram;      // G = P̄ᵀP̄, T × T
  // pos_t in P's top four singular directions, divided by σ₁: row t = (σ_k/σ₁)·v_k[t], k = 1..4
  // (v_k the eigenvectors of P Pᵀ; each sign arbitrary). Plotted as the path t ↦ (1, 2) and (3, 4):
  // a spiral when position is smooth and low-rank. Fewer columns when T − 1 < 4.
  std::vector<std::vector<double>> directions;
  double incoherence_max = 0, incoherence_mean = 0;  // |cos(pos_t, ctx_c)| over (t, c)
  double random_max = 0, random_mean = 0;            // the same for T + C Gaussian vectors in ℝ^d
  double topic_within = 0, topic_between = 0;        // mean cos(ctx_c, ctx_c'), c ≠ c' (signed); NaN without topics
  int64_t topics = 0;                                // distinct topics among the contexts
  // Mean cos(ctx_c, ctx_c') for contexts of topics (a, b), K × K row-major with K = max label + 1
  // (pairs c ≠ c'; NaN where a pair of topics has no such contexts): which sources are alike.
  std::vector<double> topic_pairs;
};

// Analyses one layer. `topics`: one label per context (empty: no topics). `seed` draws the
// Gaussian baseline. `kept`, when given, receives μ, pos and ctx (not the residual, which is as
// large as the states) for decomposition.safetensors.
LayerAnalysis analyze_layer(const HiddenCube& cube, const std::vector<int>& topics, uint64_t seed,
                            EigenSolver solver, Decomposition* kept = nullptr);

}  // namespace urpe
