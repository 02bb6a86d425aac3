// Does this machine's OpenBLAS give different bits at different thread counts?
// sgemm (row-major, as Kokkos Kernels calls it) at 1 thread vs 2 and 4, on the
// demo model's widths, OPT-125m's shapes and odd ones, all four transposes; prints how
// many elements of C differ and a summary line. Not part of the build:
//
//   cc -O2 tools/openblas_threads_check.c -o /tmp/obcheck -lopenblas
//   OPENBLAS_NUM_THREADS=4 /tmp/obcheck
//
// On the 2-core AVX-512 AMD EPYC VM of 2026-12-01 (OpenBLAS 0.3.21,
// DYNAMIC_ARCH, Cooperlake kernels): 16 of 144 comparisons differ, all of them
// 1000x999x777 and 333x4097x515 (75-81 % of the elements); the demo's widths and
// OPT-125m's shapes (inner dimensions 128, 512, 768, 3072) and 37x53x61,
// 129x75x33 agree. distzo's host GEMM does not rely on that
// (src/kernels/host_gemm.hpp).
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern void openblas_set_num_threads(int);
extern char* openblas_get_config(void);
extern char* openblas_get_corename(void);
static uint64_t s = 88172645463325252ull;
static float rnd(void) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return (float)((s >> 40) / 16777216.0) - 0.5f;
}
static long run(int threads, int ta, int tb, int m, int n, int k, const float* a, const float* b,
                float* c) {
  openblas_set_num_threads(threads);
  int lda = ta ? m : k, ldb = tb ? k : n;
  for (long i = 0; i < (long)m * n; ++i) c[i] = 0.f;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
  return 0;
}
int main(void) {
  printf("OpenBLAS: %s, core %s\n", openblas_get_config(), openblas_get_corename());
  int shapes[][3] = {{37, 53, 61},     {129, 75, 33},    {100, 101, 103},   {255, 257, 129},
                     {768, 128, 128},  {768, 384, 128},  {768, 512, 128},   {768, 128, 512},
                     {768, 8192, 128}, {256, 256, 64},   {64, 64, 256},     {128, 128, 64},
                     {128, 64, 128},   {1024, 768, 768}, {1024, 3072, 768}, {1024, 768, 3072},
                     {1000, 999, 777}, {333, 4097, 515}};
  int ns = sizeof shapes / sizeof shapes[0], total = 0, differ = 0;
  for (int i = 0; i < ns; ++i) {
    int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
    float* a = malloc(sizeof(float) * m * k);
    float* b = malloc(sizeof(float) * k * n);
    float* c1 = malloc(sizeof(float) * m * n);
    float* c2 = malloc(sizeof(float) * m * n);
    for (long j = 0; j < (long)m * k; ++j) a[j] = rnd();
    for (long j = 0; j < (long)k * n; ++j) b[j] = rnd();
    for (int t = 0; t < 4; ++t) {
      int ta = t & 1, tb = t >> 1;
      run(1, ta, tb, m, n, k, a, b, c1);
      for (int th = 2; th <= 4; th += 2) {
        run(th, ta, tb, m, n, k, a, b, c2);
        long nd = 0;
        for (long j = 0; j < (long)m * n; ++j) nd += memcmp(&c1[j], &c2[j], 4) != 0;
        ++total;
        differ += nd != 0;
        printf("%5dx%5dx%5d %c%c threads 1 vs %d: %ld of %ld elements differ\n", m, n, k,
               ta ? 'T' : 'N', tb ? 'T' : 'N', th, nd, (long)m * n);
      }
    }
    free(a);
    free(b);
    free(c1);
    free(c2);
  }
  printf("SUMMARY: %d of %d (shape, transpose, thread) comparisons differ\n", differ, total);
  return 0;
}
