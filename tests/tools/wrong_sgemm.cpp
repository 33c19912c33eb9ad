// An sgemm that answers zeros, for compare_cli_test: preloaded (LD_PRELOAD) into side B of
// `hal compare`, it makes cpu:0's matmul fast and wrong, which the command must refuse to rank.
// Both entry points hal's CPU backend may call: oneDNN's (where hal has oneDNN) and cblas's.
#include <cstdint>

namespace {
void zeros(int64_t m, int64_t n, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)  // row-major, as hal's CPU backend calls both
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
}
}  // namespace

extern "C" void cblas_sgemm(int /*order*/, int /*trans_a*/, int /*trans_b*/, int m, int n,
                            int /*k*/, float /*alpha*/, const float* /*a*/, int /*lda*/,
                            const float* /*b*/, int /*ldb*/, float /*beta*/, float* c, int ldc) {
  zeros(m, n, c, ldc);
}

// dnnl_status_t dnnl_sgemm(...): 0 is dnnl_success.
extern "C" int dnnl_sgemm(char /*transa*/, char /*transb*/, int64_t m, int64_t n, int64_t /*k*/,
                          float /*alpha*/, const float* /*a*/, int64_t /*lda*/, const float* /*b*/,
                          int64_t /*ldb*/, float /*beta*/, float* c, int64_t ldc) {
  zeros(m, n, c, ldc);
  return 0;
}
