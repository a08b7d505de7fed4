// The position/context decomposition and its statistics, in double on the CPU. The eigensolver is
// LAPACK's when the build links OpenBLAS (it exports dsyev_), a cyclic Jacobi otherwise.
#include "app/analysis/position_context.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "tensor/error.h"

#if defined(URPE_WITH_OPENBLAS)
extern "C" void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                       double* work, const int* lwork, int* info);
#endif

namespace urpe {

namespace {

double dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

double norm(const double* a, int64_t n) { return std::sqrt(dot(a, a, n)); }

// |cos| of two vectors; 0 when either is zero.
double abs_cos(const double* a, double na, const double* b, double nb, int64_t n) {
  return na > 0 && nb > 0 ? std::fabs(dot(a, b, n)) / (na * nb) : 0.0;
}

// Cyclic Jacobi; `vectors`, when given, accumulates the rotations (columns = eigenvectors).
std::vector<double> jacobi_eigenvalues(std::vector<double> a, int64_t n, std::vector<double>* vectors = nullptr) {
  if (vectors) {
    vectors->assign(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) (*vectors)[i * n + i] = 1;
  }
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, diag = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) (i == j ? diag : off) += a[i * n + j] * a[i * n + j];
    if (off <= 1e-30 * diag || off == 0) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        if (vectors)
          for (int64_t k = 0; k < n; ++k) {
            double* v = vectors->data();
            const double vkp = v[k * n + p], vkq = v[k * n + q];
            v[k * n + p] = c * vkp - s * vkq;
            v[k * n + q] = s * vkp + c * vkq;
          }
      }
  }
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) w[i] = a[i * n + i];
  return w;
}

// Gaussian draws from a fixed generator and Box–Muller, so the baseline is the same everywhere.
std::vector<double> gaussian(int64_t count, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(static_cast<size_t>(count));
  const double two_pi = 6.283185307179586;
  for (int64_t i = 0; i < count; i += 2) {
    const double u1 = (static_cast<double>(gen() >> 11) + 1.0) / 9007199254740993.0;
    const double u2 = static_cast<double>(gen() >> 11) / 9007199254740992.0;
    const double r = std::sqrt(-2 * std::log(u1));
    v[i] = r * std::cos(two_pi * u2);
    if (i + 1 < count) v[i + 1] = r * std::sin(two_pi * u2);
  }
  return v;
}

// max and mean |cos| between every row of a (na × d) and every row of b (nb × d).
std::pair<double, double> cross_incoherence(const std::vector<double>& a, int64_t na, const std::vector<double>& b,
                                            int64_t nb, int64_t d) {
  std::vector<double> norm_b(static_cast<size_t>(nb));
  for (int64_t j = 0; j < nb; ++j) norm_b[j] = norm(&b[j * d], d);
  double most = 0, total = 0;
  for (int64_t i = 0; i < na; ++i) {
    const double ni = norm(&a[i * d], d);
    for (int64_t j = 0; j < nb; ++j) {
      const double v = abs_cos(&a[i * d], ni, &b[j * d], norm_b[j], d);
      most = std::max(most, v);
      total += v;
    }
  }
  return {most, total / static_cast<double>(na * nb)};
}

}  // namespace

bool have_lapack() {
#if defined(URPE_WITH_OPENBLAS)
  return true;
#else
  return false;
#endif
}

EigenSolver default_eigen_solver() { return have_lapack() ? EigenSolver::lapack : EigenSolver::jacobi; }

namespace {

// Eigenvalues in descending order; with `vectors`, the matching eigenvectors as columns.
std::vector<double> symmetric_eigen_impl(std::vector<double> a, int64_t n, EigenSolver solver,
                                         std::vector<double>* vectors) {
  URPE_CHECK(n >= 1 && static_cast<int64_t>(a.size()) == n * n,
             "symmetric_eigenvalues: expected " << n << " x " << n << " values, got " << a.size());
  std::vector<double> w, v;
  if (solver == EigenSolver::jacobi) {
    w = jacobi_eigenvalues(std::move(a), n, vectors ? &v : nullptr);
  } else {
#if defined(URPE_WITH_OPENBLAS)
    const int size = static_cast<int>(n);
    const char* jobz = vectors ? "V" : "N";
    int info = 0, lwork = -1;
    double query = 0;
    w.assign(static_cast<size_t>(n), 0.0);
    dsyev_(jobz, "U", &size, a.data(), &size, w.data(), &query, &lwork, &info);
    lwork = std::max(1, static_cast<int>(query));
    std::vector<double> work(static_cast<size_t>(lwork));
    dsyev_(jobz, "U", &size, a.data(), &size, w.data(), work.data(), &lwork, &info);
    URPE_CHECK(info == 0, "LAPACK dsyev failed (info = " << info << ") on a " << n << " x " << n << " matrix");
    if (vectors) {  // column-major: eigenvector k is a[k·n … k·n + n − 1]
      v.assign(static_cast<size_t>(n * n), 0.0);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t i = 0; i < n; ++i) v[i * n + k] = a[k * n + i];
    }
#else
    URPE_CHECK(false, "this build has no LAPACK (urpe was built without OpenBLAS); use the Jacobi solver");
#endif
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&w](int64_t x, int64_t y) { return w[x] > w[y]; });
  std::vector<double> sorted(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) sorted[k] = w[order[k]];
  if (vectors) {
    vectors->assign(static_cast<size_t>(n * n), 0.0);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < n; ++i) (*vectors)[i * n + k] = v[i * n + order[k]];
  }
  return sorted;
}

}  // namespace

std::vector<double> symmetric_eigenvalues(std::vector<double> a, int64_t n, EigenSolver solver) {
  return symmetric_eigen_impl(std::move(a), n, solver, nullptr);
}

std::vector<double> symmetric_eigen(std::vector<double> a, int64_t n, EigenSolver solver, std::vector<double>& vectors) {
  return symmetric_eigen_impl(std::move(a), n, solver, &vectors);
}

std::vector<double> singular_values(const std::vector<double>& a, int64_t rows, int64_t cols, EigenSolver solver) {
  URPE_CHECK(static_cast<int64_t>(a.size()) == rows * cols, "singular_values: expected " << rows << " x " << cols);
  const bool by_rows = rows <= cols;  // Gram of the smaller side: A Aᵀ (rows²) or Aᵀ A (cols²)
  const int64_t n = by_rows ? rows : cols;
  std::vector<double> g(static_cast<size_t>(n * n), 0.0);
  if (by_rows) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = i; j < rows; ++j) g[i * n + j] = g[j * n + i] = dot(&a[i * cols], &a[j * cols], cols);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = &a[r * cols];
      for (int64_t i = 0; i < cols; ++i) {
        if (row[i] == 0) continue;
        for (int64_t j = i; j < cols; ++j) g[i * n + j] += row[i] * row[j];
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < i; ++j) g[i * n + j] = g[j * n + i];
  }
  std::vector<double> w = symmetric_eigenvalues(std::move(g), n, solver);
  for (double& x : w) x = std::sqrt(std::max(0.0, x));
  return w;
}

std::vector<double> dct2_matrix(int64_t n) {
  std::vector<double> f(static_cast<size_t>(n * n));
  const double pi = 3.141592653589793;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i)
      f[k * n + i] = std::sqrt((k == 0 ? 1.0 : 2.0) / static_cast<double>(n)) *
                     std::cos(pi * (static_cast<double>(i) + 0.5) * static_cast<double>(k) / static_cast<double>(n));
  return f;
}

double low_frequency_energy(const std::vector<double>& g, int64_t n, int64_t k) {
  const std::vector<double> f = dct2_matrix(n);
  std::vector<double> fg(static_cast<size_t>(n * n), 0.0), hat(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t m = 0; m < n; ++m)
      for (int64_t j = 0; j < n; ++j) fg[i * n + j] += f[i * n + m] * g[m * n + j];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) hat[i * n + j] = dot(&fg[i * n], &f[j * n], n);  // (F G) Fᵀ
  double low = 0, all = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double v = hat[i * n + j] * hat[i * n + j];
      all += v;
      if (i < k && j < k) low += v;
    }
  return all > 0 ? low / all : NAN;
}

Decomposition decompose(const HiddenCube& cube) {
  const int64_t C = cube.contexts, T = cube.positions, d = cube.dim;
  URPE_CHECK(C >= 2, "position/context decomposition needs at least 2 contexts, got " << C);
  URPE_CHECK(T >= 2, "position/context decomposition needs at least 2 positions, got " << T);
  URPE_CHECK(d >= 1 && static_cast<int64_t>(cube.h.size()) == C * T * d,
             "position/context decomposition: expected " << C << " x " << T << " x " << d << " values, got "
                                                         << cube.h.size());
  Decomposition r;
  r.mu.assign(d, 0.0);
  r.pos.assign(T * d, 0.0);
  r.ctx.assign(C * d, 0.0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < d; ++i) {
        const double v = cube.h[(c * T + t) * d + i];
        r.pos[t * d + i] += v;
        r.ctx[c * d + i] += v;
        r.mu[i] += v;
      }
  for (double& x : r.mu) x /= static_cast<double>(C * T);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < d; ++i) r.pos[t * d + i] = r.pos[t * d + i] / static_cast<double>(C) - r.mu[i];
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < d; ++i) r.ctx[c * d + i] = r.ctx[c * d + i] / static_cast<double>(T) - r.mu[i];
  r.resid.resize(cube.h.size());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < d; ++i) {
        const int64_t k = (c * T + t) * d + i;
        r.resid[k] = cube.h[k] - r.mu[i] - r.pos[t * d + i] - r.ctx[c * d + i];
      }
  return r;
}

LayerAnalysis analyze_layer(const HiddenCube& cube, const std::vector<int>& topics, uint64_t seed,
                            EigenSolver solver, Decomposition* kept) {
  Decomposition dec = decompose(cube);
  const int64_t C = cube.contexts, T = cube.positions, d = cube.dim;
  URPE_CHECK(topics.empty() || static_cast<int64_t>(topics.size()) == C,
             "position/context analysis: " << topics.size() << " topic labels for " << C << " contexts");
  URPE_CHECK(topics.empty() || *std::min_element(topics.begin(), topics.end()) >= 0,
             "position/context analysis: topic labels must be 0 or more");
  LayerAnalysis a;
  a.contexts = C;
  a.positions = T;
  a.dim = d;

  // Energies and the ANOVA identity.
  std::vector<double> m(cube.h.size());
  for (int64_t r = 0; r < C * T; ++r)
    for (int64_t i = 0; i < d; ++i) m[r * d + i] = cube.h[r * d + i] - dec.mu[i];
  a.total = dot(m.data(), m.data(), static_cast<int64_t>(m.size()));
  a.pos_energy = static_cast<double>(C) * dot(dec.pos.data(), dec.pos.data(), T * d);
  a.ctx_energy = static_cast<double>(T) * dot(dec.ctx.data(), dec.ctx.data(), C * d);
  a.resid_energy = dot(dec.resid.data(), dec.resid.data(), static_cast<int64_t>(dec.resid.size()));
  const double total = a.total > 0 ? a.total : 1.0;
  a.pos_share = a.pos_energy / total;
  a.ctx_share = a.ctx_energy / total;
  a.resid_share = a.resid_energy / total;
  a.anova_error = std::fabs(a.total - a.pos_energy - a.ctx_energy - a.resid_energy) / total;
  auto sum_error = [d](const std::vector<double>& rows, int64_t n) {
    std::vector<double> s(d, 0.0);
    double norms = 0;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t i = 0; i < d; ++i) s[i] += rows[r * d + i];
      norms += norm(&rows[r * d], d);
    }
    return norms > 0 ? norm(s.data(), d) / norms : 0.0;
  };
  a.pos_sum_error = sum_error(dec.pos, T);
  a.ctx_sum_error = sum_error(dec.ctx, C);

  // Spectrum of P and of M.
  a.singular = singular_values(dec.pos, T, d, solver);
  a.sigma_m = singular_values(m, C * T, d, solver).front();
  double energy = 0;
  for (double s : a.singular) energy += s * s;
  const double s1 = a.singular.front();
  a.stable_rank = s1 > 0 ? energy / (s1 * s1) : 0.0;
  double held = 0;
  for (double s : a.singular) {
    if (energy <= 0 || held >= 0.9 * energy) break;
    held += s * s;
    ++a.rank90;
  }
  a.relative_norm = a.sigma_m > 0 ? std::sqrt(static_cast<double>(C)) * s1 / a.sigma_m : 0.0;

  // Smoothness: the Gram matrix of the unit positional vectors in the DCT basis.
  std::vector<double> unit(dec.pos);
  for (int64_t t = 0; t < T; ++t) {
    const double n = norm(&unit[t * d], d);
    for (int64_t i = 0; i < d; ++i) unit[t * d + i] = n > 0 ? unit[t * d + i] / n : 0.0;
  }
  a.gram.assign(T * T, 0.0);
  for (int64_t s = 0; s < T; ++s)
    for (int64_t t = 0; t < T; ++t) a.gram[s * T + t] = dot(&unit[s * d], &unit[t * d], d);
  // The path of pos_t in P's top singular directions: P Pᵀ = V Λ Vᵀ, coordinate k = √λ_k·V[t][k].
  {
    std::vector<double> k_gram(static_cast<size_t>(T * T)), v;
    for (int64_t s = 0; s < T; ++s)
      for (int64_t t = 0; t < T; ++t) k_gram[s * T + t] = dot(&dec.pos[s * d], &dec.pos[t * d], d);
    const std::vector<double> lambda = symmetric_eigen(std::move(k_gram), T, solver, v);
    const int64_t shown = std::min<int64_t>({4, T - 1, d});
    a.directions.assign(static_cast<size_t>(shown), std::vector<double>(static_cast<size_t>(T), 0.0));
    for (int64_t k = 0; k < shown && s1 > 0; ++k)
      for (int64_t t = 0; t < T; ++t) a.directions[k][t] = std::sqrt(std::max(0.0, lambda[k])) * v[t * T + k] / s1;
  }
  a.e10 = T > 10 ? low_frequency_energy(a.gram, T, 10) : NAN;  // T ≤ 10: all frequencies are "low", E₁₀ = 1 says nothing

  // Incoherence, and its Gaussian baseline with the same counts and dimension.
  std::tie(a.incoherence_max, a.incoherence_mean) = cross_incoherence(dec.pos, T, dec.ctx, C, d);
  const std::vector<double> g_pos = gaussian(T * d, seed), g_ctx = gaussian(C * d, seed + 0x9E3779B97F4A7C15ull);
  std::tie(a.random_max, a.random_mean) = cross_incoherence(g_pos, T, g_ctx, C, d);

  // Topic clusters: mean |cos| of context vectors within a topic and between topics.
  a.topic_within = a.topic_between = NAN;
  if (!topics.empty()) {
    std::vector<int> distinct(topics);
    std::sort(distinct.begin(), distinct.end());
    a.topics = std::unique(distinct.begin(), distinct.end()) - distinct.begin();
    std::vector<double> norms(C);
    for (int64_t c = 0; c < C; ++c) norms[c] = norm(&dec.ctx[c * d], d);
    double within = 0, between = 0;
    int64_t n_within = 0, n_between = 0;
    const int64_t K = static_cast<int64_t>(*std::max_element(topics.begin(), topics.end())) + 1;
    std::vector<double> pair_sum(static_cast<size_t>(K * K), 0.0);
    std::vector<int64_t> pair_count(static_cast<size_t>(K * K), 0);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t e = c + 1; e < C; ++e) {
        // Signed: centring makes two topics' mean context vectors opposite, so |cos| would hide
        // the split (a cluster pair at +v and −v has |cos| 1 both within and between).
        const double v = norms[c] > 0 && norms[e] > 0 ? dot(&dec.ctx[c * d], &dec.ctx[e * d], d) / (norms[c] * norms[e]) : 0.0;
        const int64_t ab = topics[c] * K + topics[e], ba = topics[e] * K + topics[c];
        pair_sum[ab] += v;
        ++pair_count[ab];
        if (ba != ab) {  // the matrix is symmetric
          pair_sum[ba] += v;
          ++pair_count[ba];
        }
        if (topics[c] == topics[e]) {
          within += v;
          ++n_within;
        } else {
          between += v;
          ++n_between;
        }
      }
    a.topic_pairs.assign(static_cast<size_t>(K * K), NAN);
    for (int64_t k = 0; k < K * K; ++k)
      if (pair_count[k] > 0) a.topic_pairs[k] = pair_sum[k] / static_cast<double>(pair_count[k]);
    if (n_within > 0) a.topic_within = within / static_cast<double>(n_within);
    if (n_between > 0) a.topic_between = between / static_cast<double>(n_between);
  }
  if (kept) {
    dec.resid = {};
    *kept = std::move(dec);
  }
  return a;
}

}  // namespace urpe
