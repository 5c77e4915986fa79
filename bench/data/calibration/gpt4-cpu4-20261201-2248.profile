# Measured by `cleave profile --backend cpu` on vm, 2026-12-01 22:48 UTC.
# CPU: AMD EPYC, 2 logical CPUs.
# gemm fp32: the CPU kernels' matmul through OpenBLAS (OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64) with 1 threads, as configured (OPENBLAS_NUM_THREADS=1) (OMP_NUM_THREADS=1).
# memory: one thread's add over 64 MiB arrays (2 reads + 1 write an element).
# kernel_overhead: that add on one element.
# collectives: 4 local MPI ranks (mpirun --bind-to none --mca mpi_yield_when_idle 1),
# sizes as nccl-tests prints them; intra_node_bus: the all-reduce bus bandwidth at 64 MiB.
# compute.shared_core_efficiency (where the ranks outnumber the cores): their 512^3 GEMMs all at once against each core running one alone.
# compute.waiting_rank_load (same condition): one rank a core multiplies while the others wait on it as pipeline stages wait, against idle; the share of a core each waiting rank takes.
# compute.in_step_collective_wait (same condition): steps of that GEMM and an all-gather of 1 MiB of its output, every rank at once, less the GEMMs alone and the gathers alone.

[bandwidth]
memory = 16.7082665534 GB/s
intra_node_bus = 955.94675135 MB/s
kernel_overhead = 602.971733668 ns

[compute]
shared_core_efficiency = 1.05575867759
waiting_rank_load = 0.0158114323042
in_step_collective_wait = 357.0482 us

[gemm fp32]
64x64x64 = 9.76949179293 us
64x64x256 = 35.7238468468 us
64x64x1024 = 126.752015625 us
64x64x2048 = 257.7240625 us
64x256x64 = 31.1550826087 us
64x256x256 = 116.966007353 us
64x256x1024 = 444.736631579 us
64x256x2048 = 892.919555556 us
64x1024x64 = 121.87388 us
64x1024x256 = 447.816088235 us
64x1024x1024 = 1.5694281 ms
64x1024x2048 = 3.13529475 ms
64x2048x64 = 223.048 us
64x2048x256 = 805.64365 us
64x2048x1024 = 3.4337585 ms
64x2048x2048 = 5.917065 ms
256x64x64 = 35.6912813688 us
256x64x256 = 121.816889706 us
256x64x1024 = 430.468868421 us
256x64x2048 = 883.0841 us
256x256x64 = 102.65812987 us
256x256x256 = 362.689159091 us
256x256x1024 = 1.3696966 ms
256x256x2048 = 2.71965783333 ms
256x1024x64 = 378.657636364 us
256x1024x256 = 1.33636658333 ms
256x1024x1024 = 5.192399 ms
256x1024x2048 = 10.186243 ms
256x2048x64 = 747.988727273 us
256x2048x256 = 2.6375275 ms
256x2048x1024 = 10.19767 ms
256x2048x2048 = 20.370363 ms
1024x64x64 = 121.256403226 us
1024x64x256 = 455.951944444 us
1024x64x1024 = 1.5938013 ms
1024x64x2048 = 3.2016285 ms
1024x256x64 = 394.596809524 us
1024x256x256 = 1.41754116667 ms
1024x256x1024 = 5.407819 ms
1024x256x2048 = 10.592577 ms
1024x1024x64 = 1.5279596 ms
1024x1024x256 = 5.359026 ms
1024x1024x1024 = 20.534728 ms
1024x1024x2048 = 41.667303 ms
1024x2048x64 = 3.2369085 ms
1024x2048x256 = 11.182412 ms
1024x2048x1024 = 41.829524 ms
1024x2048x2048 = 81.414205 ms
2048x64x64 = 263.3575625 us
2048x64x256 = 917.616833333 us
2048x64x1024 = 3.299481 ms
2048x64x2048 = 6.940009 ms
2048x256x64 = 808.05025 us
2048x256x256 = 2.814672 ms
2048x256x1024 = 11.640783 ms
2048x256x2048 = 22.879018 ms
2048x1024x64 = 3.0672685 ms
2048x1024x256 = 10.724783 ms
2048x1024x1024 = 43.500424 ms
2048x1024x2048 = 86.15276 ms
2048x2048x64 = 6.6149265 ms
2048x2048x256 = 21.648531 ms
2048x2048x1024 = 87.820486 ms
2048x2048x2048 = 174.180314 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 12.67866 us
4 KiB = 21.01709 us
16 KiB = 47.8938 us
64 KiB = 93.49919 us
256 KiB = 207.0631 us
1 MiB = 505.137 us
4 MiB = 3.13085 ms
16 MiB = 16.39389 ms
64 MiB = 105.3022 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.383438 us
4 KiB = 9.581327 us
16 KiB = 21.99623 us
64 KiB = 30.72552 us
256 KiB = 71.5481 us
1 MiB = 185.801 us
4 MiB = 814.434 us
16 MiB = 5.870643 ms
64 MiB = 26.24642 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.688747 us
4 KiB = 9.312292 us
16 KiB = 26.57031 us
64 KiB = 39.42296 us
256 KiB = 93.53264 us
1 MiB = 305.6141 us
4 MiB = 3.920345 ms
16 MiB = 32.68578 ms
64 MiB = 130.05 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.327762 us
4 KiB = 6.407822 us
16 KiB = 21.99964 us
64 KiB = 29.46259 us
256 KiB = 63.94866 us
1 MiB = 180.1176 us
4 MiB = 1.636295 ms
16 MiB = 7.909363 ms
64 MiB = 29.34026 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.854035 us
4 KiB = 9.797317 us
16 KiB = 13.25125 us
64 KiB = 20.88994 us
256 KiB = 65.17137 us
1 MiB = 370.3108 us
4 MiB = 1.802328 ms
16 MiB = 11.87336 ms
64 MiB = 44.75856 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.241888 us
4 KiB = 4.645474 us
16 KiB = 5.988365 us
64 KiB = 9.569566 us
256 KiB = 26.99458 us
1 MiB = 97.67158 us
4 MiB = 555.2109 us
16 MiB = 3.804313 ms
64 MiB = 13.85971 ms
