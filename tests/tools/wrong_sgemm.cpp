// A cblas_sgemm that answers zeros, for compare_cli_test: preloaded (LD_PRELOAD) into side B of
// `hal compare`, it makes cpu:0's matmul fast and wrong, which the command must refuse to rank.
extern "C" void cblas_sgemm(int /*order*/, int /*trans_a*/, int /*trans_b*/, int m, int n,
                            int /*k*/, float /*alpha*/, const float* /*a*/, int /*lda*/,
                            const float* /*b*/, int /*ldb*/, float /*beta*/, float* c, int ldc) {
  for (int i = 0; i < m; ++i)  // row-major, as hal's CPU backend calls it
    for (int j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
}
