// The row-major → column-major mapping the cuda device hands to cuBLASLt, checked on the
// host (no GPU): a plain column-major GEMM over the mapped operands must give the
// row-major product for every transpose combination and for leading dimensions wider
// than the matrices.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/cuda/lt_layout.hpp"

using namespace minictx::cuda;

namespace {

// Element (r, c) of op(M) for a stored column-major matrix.
double at(const std::vector<double>& data, const LtMatrix& m, int64_t r, int64_t c) {
  return m.transpose ? data[size_t(c + r * m.ld)] : data[size_t(r + c * m.ld)];
}

struct Case {
  bool ta, tb;
  int64_t m, n, k, pad;  // pad: extra leading-dimension columns
};

class LtLayout : public ::testing::TestWithParam<Case> {};

TEST_P(LtLayout, ColumnMajorGemmOfMappedOperandsIsTheRowMajorProduct) {
  const Case t = GetParam();
  const int64_t a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
  const int64_t b_rows = t.tb ? t.n : t.k, b_cols = t.tb ? t.k : t.n;
  const int64_t lda = a_cols + t.pad, ldb = b_cols + t.pad, ldc = t.n + t.pad;
  std::vector<double> a(size_t(a_rows * lda)), b(size_t(b_rows * ldb)), c(size_t(t.m * ldc), 0.0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = double((i * 7) % 11) - 5;
  for (size_t i = 0; i < b.size(); ++i) b[i] = double((i * 5) % 13) - 6;

  const LtProblem p = lt_problem(t.ta, t.tb, t.m, t.n, t.k, lda, ldb, ldc);
  const int64_t rows = p.first.transpose ? p.first.cols : p.first.rows;  // of op(first)
  const int64_t inner = p.first.transpose ? p.first.rows : p.first.cols;
  const int64_t cols = p.second.transpose ? p.second.rows : p.second.cols;  // of op(second)
  ASSERT_EQ(rows, p.c.rows);
  ASSERT_EQ(cols, p.c.cols);
  ASSERT_EQ(inner, p.second.transpose ? p.second.cols : p.second.rows);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t q = 0; q < inner; ++q) s += at(b, p.first, i, q) * at(a, p.second, q, j);
      c[size_t(i + j * p.c.ld)] = s;
    }

  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < t.n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < t.k; ++q) {
        const double av = t.ta ? a[size_t(q * lda + i)] : a[size_t(i * lda + q)];
        const double bv = t.tb ? b[size_t(j * ldb + q)] : b[size_t(q * ldb + j)];
        want += av * bv;
      }
      EXPECT_EQ(c[size_t(i * ldc + j)], want) << "row " << i << " col " << j;
    }
}

INSTANTIATE_TEST_SUITE_P(Transposes, LtLayout,
                         ::testing::Values(Case{false, false, 3, 5, 4, 0}, Case{true, false, 3, 5, 4, 0},
                                           Case{false, true, 3, 5, 4, 0}, Case{true, true, 3, 5, 4, 0},
                                           Case{false, false, 4, 2, 7, 3}, Case{true, true, 6, 3, 2, 2},
                                           Case{true, false, 1, 8, 5, 1}, Case{false, true, 7, 1, 3, 4}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.ta ? "T" : "N") + (i.param.tb ? "T" : "N") + "_pad" +
                                  std::to_string(i.param.pad) + "_" + std::to_string(i.index);
                         });

}  // namespace
