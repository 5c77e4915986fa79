# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 05:56 UTC.
# CPU: AMD EPYC, 2 logical CPUs.
# gemm fp32: the CPU kernels' matmul through OpenBLAS (OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64) with 1 threads, as configured (OPENBLAS_NUM_THREADS=1) (OMP_NUM_THREADS=1).
# memory: one thread's add over 64 MiB arrays (2 reads + 1 write an element).
# kernel_overhead: that add on one element.
# collectives: 4 local MPI ranks (mpirun --bind-to none --mca mpi_yield_when_idle 1),
# sizes as nccl-tests prints them; intra_node_bus: the all-reduce bus bandwidth at 64 MiB.
# compute.shared_core_efficiency (where the ranks outnumber the cores): their 512^3 GEMMs all at once against each core running one alone (the median of 7 rounds of the two back to back).
# compute.waiting_rank_load (same condition): one rank a core multiplies while the others wait on it as pipeline stages wait, against idle; the share of a core each waiting rank takes.
# compute.in_step_collective_wait (same condition): steps of that GEMM and an all-gather of 1 MiB of its output, every rank at once, less the GEMMs alone and the gathers alone.

[bandwidth]
memory = 21.132568886 GB/s
intra_node_bus = 812.750512494 MB/s
kernel_overhead = 352.273742634 ns

[compute]
shared_core_efficiency = 0.9894102
waiting_rank_load = 0.0114688463261
in_step_collective_wait = 296.27 us

[gemm fp32]
64x64x64 = 7.01061014593 us
64x64x256 = 36.5317276596 us
64x64x1024 = 124.964957143 us
64x64x2048 = 252.100470588 us
64x256x64 = 30.8658623188 us
64x256x256 = 117.96527027 us
64x256x1024 = 440.291578947 us
64x256x2048 = 890.873777778 us
64x1024x64 = 134.388265625 us
64x1024x256 = 458.040333333 us
64x1024x1024 = 1.77141375 ms
64x1024x2048 = 3.505422 ms
64x2048x64 = 271.786419355 us
64x2048x256 = 921.778555556 us
64x2048x1024 = 3.60207025 ms
64x2048x2048 = 7.0947535 ms
256x64x64 = 34.3152961538 us
256x64x256 = 126.052970149 us
256x64x1024 = 444.261210526 us
256x64x2048 = 826.33435 us
256x256x64 = 107.584670886 us
256x256x256 = 384.272818182 us
256x256x1024 = 1.42247 ms
256x256x2048 = 2.896641 ms
256x1024x64 = 461.236444444 us
256x1024x256 = 1.4837678 ms
256x1024x1024 = 5.728284 ms
256x1024x2048 = 11.266317 ms
256x2048x64 = 949.313888889 us
256x2048x256 = 2.9813515 ms
256x2048x1024 = 11.333487 ms
256x2048x2048 = 22.429581 ms
1024x64x64 = 127.728833333 us
1024x64x256 = 476.367222222 us
1024x64x1024 = 1.6658673 ms
1024x64x2048 = 3.3053775 ms
1024x256x64 = 417.7988 us
1024x256x256 = 1.458864 ms
1024x256x1024 = 5.6241 ms
1024x256x2048 = 11.30202 ms
1024x1024x64 = 1.839218125 ms
1024x1024x256 = 5.729857 ms
1024x1024x1024 = 22.362292 ms
1024x1024x2048 = 44.245891 ms
1024x2048x64 = 3.68174625 ms
1024x2048x256 = 11.102514 ms
1024x2048x1024 = 43.920428 ms
1024x2048x2048 = 85.958451 ms
2048x64x64 = 254.40365625 us
2048x64x256 = 952.003444444 us
2048x64x1024 = 3.579317 ms
2048x64x2048 = 7.3418005 ms
2048x256x64 = 828.8666 us
2048x256x256 = 2.946109 ms
2048x256x1024 = 11.278655 ms
2048x256x2048 = 23.059235 ms
2048x1024x64 = 3.78387925 ms
2048x1024x256 = 11.492753 ms
2048x1024x1024 = 45.219437 ms
2048x1024x2048 = 87.23684 ms
2048x2048x64 = 7.3130075 ms
2048x2048x256 = 22.576679 ms
2048x2048x1024 = 86.646603 ms
2048x2048x2048 = 173.175883 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 14.72966 us
4 KiB = 27.87965 us
16 KiB = 44.66729 us
64 KiB = 98.02487 us
256 KiB = 203.0922 us
1 MiB = 527.7056 us
4 MiB = 3.161103 ms
16 MiB = 20.21764 ms
64 MiB = 123.8551 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 7.600646 us
4 KiB = 9.920579 us
16 KiB = 28.70325 us
64 KiB = 40.91959 us
256 KiB = 87.76295 us
1 MiB = 212.2615 us
4 MiB = 1.0122 ms
16 MiB = 5.557381 ms
64 MiB = 25.16962 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 10.77235 us
4 KiB = 17.87488 us
16 KiB = 28.53527 us
64 KiB = 52.12777 us
256 KiB = 114.7517 us
1 MiB = 348.2958 us
4 MiB = 2.742211 ms
16 MiB = 36.98783 ms
64 MiB = 127.0043 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.627652 us
4 KiB = 10.00467 us
16 KiB = 27.41441 us
64 KiB = 35.1935 us
256 KiB = 72.24403 us
1 MiB = 207.9183 us
4 MiB = 1.685017 ms
16 MiB = 8.382886 ms
64 MiB = 31.38885 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.998795 us
4 KiB = 11.94439 us
16 KiB = 14.5435 us
64 KiB = 25.1027 us
256 KiB = 68.17862 us
1 MiB = 236.8799 us
4 MiB = 1.002657 ms
16 MiB = 6.495454 ms
64 MiB = 26.68044 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.328788 us
4 KiB = 4.44262 us
16 KiB = 6.29513 us
64 KiB = 69.67322 us
256 KiB = 293.5595 us
1 MiB = 404.0251 us
4 MiB = 1.132528 ms
16 MiB = 4.01759 ms
64 MiB = 15.23329 ms
