#!/usr/bin/env bash
# Packs what scripts/gpu/check.sh runs on a machine with an NVIDIA GPU: the release build's
# programs and libraries, and the Debian libraries they link that such a machine's image may
# lack (not glibc or libstdc++), into .gpu/build.tar.xz and .gpu/libs.tar.xz (ignored by git).
# The CUDA driver, NVRTC, cuBLAS and NCCL are the GPU machine's own: hal opens them at run time.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build/release
[ -x "$build/bin/hal" ] || { echo "no release build: run 'make test' or 'cmake --build --preset release' first" >&2; exit 1; }
programs=(hal core_device_suite_test tensor_test cts_suite_test bad_input_test model_suite_test
          autograd_gradient_test cuda_backend_test cuda_cublas_test cuda_nvrtc_test cuda_staging_test
          cuda_stream_host_test dist_nccl_test
          energy_test trace_test nvtx_test vulkan_backend_test opencl_backend_test
          hal_bench_dispatch hal_bench_copy hal_bench_ops)
rm -rf .gpu/stage && mkdir -p .gpu/stage/lib
grep -qs '^/.gpu/$' .git/info/exclude || echo /.gpu/ >> .git/info/exclude
paths=()
for p in "${programs[@]}"; do
  [ -x "$build/bin/$p" ] && paths+=("$build/bin/$p") || echo "bundle: $p was not built, left out" >&2
done
for dir in lib plugins test-plugins; do [ -d "$build/$dir" ] && paths+=("$build/$dir"); done
# Debian's shared libraries the programs need, followed through their links.
libs=$(for f in "${paths[@]}"; do find "$f" -type f \( -perm -u+x -o -name '*.so*' \); done |
  xargs ldd 2>/dev/null | awk '/=> \//{print $3}' | sort -u || true)
keep=$(echo "$libs" | grep -v -e "$PWD/" -e '/libc\.so' -e '/libm\.so' -e '/libstdc++' -e '/libgcc_s' \
  -e '/libpthread' -e '/libdl\.so' -e '/librt\.so' -e 'ld-linux' -e '^$' || true)
for lib in $keep; do cp -L "$lib" .gpu/stage/lib/; done
# Opened at run time, not linked: the loaders of the Vulkan and OpenCL drivers, and CLBlast.
for lib in libvulkan.so.1 libOpenCL.so.1 libclblast.so.1; do cp -L /lib/x86_64-linux-gnu/$lib .gpu/stage/lib/ 2>/dev/null || true; done
tar -C .gpu/stage -cf - lib | xz -T2 -6 > .gpu/libs.tar.xz
tar -cf - "${paths[@]}" | xz -T2 -6 > .gpu/build.tar.xz
rm -rf .gpu/stage
du -ch .gpu/*.tar.xz
