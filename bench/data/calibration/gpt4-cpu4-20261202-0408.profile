# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 03:29 UTC.
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
memory = 16.4328653075 GB/s
intra_node_bus = 876.165747097 MB/s
kernel_overhead = 348.356050885 ns

[compute]
shared_core_efficiency = 0.9985224
waiting_rank_load = 0.0621894604279
in_step_collective_wait = 292.4796 us

[gemm fp32]
64x64x64 = 7.62280337553 us
64x64x256 = 38.9416035354 us
64x64x1024 = 135.305820896 us
64x64x2048 = 260.901909091 us
64x256x64 = 33.0402137681 us
64x256x256 = 120.23824 us
64x256x1024 = 452.236736842 us
64x256x2048 = 923.098222222 us
64x1024x64 = 135.390078125 us
64x1024x256 = 452.32505 us
64x1024x1024 = 1.79550075 ms
64x1024x2048 = 4.06439425 ms
64x2048x64 = 305.09725 us
64x2048x256 = 1.044883875 ms
64x2048x1024 = 4.09815725 ms
64x2048x2048 = 6.9781305 ms
256x64x64 = 37.9460220588 us
256x64x256 = 140.002210526 us
256x64x1024 = 440.1488125 us
256x64x2048 = 929.680333333 us
256x256x64 = 122.537625 us
256x256x256 = 418.43475 us
256x256x1024 = 1.5541684 ms
256x256x2048 = 2.9516125 ms
256x1024x64 = 455.116 us
256x1024x256 = 1.6221915 ms
256x1024x1024 = 5.952788 ms
256x1024x2048 = 11.823845 ms
256x2048x64 = 953.960777778 us
256x2048x256 = 3.06987525 ms
256x2048x1024 = 11.597038 ms
256x2048x2048 = 22.342051 ms
1024x64x64 = 131.41061194 us
1024x64x256 = 482.701421053 us
1024x64x1024 = 1.712241 ms
1024x64x2048 = 3.30815925 ms
1024x256x64 = 439.35935 us
1024x256x256 = 1.4888285 ms
1024x256x1024 = 5.676277 ms
1024x256x2048 = 11.211366 ms
1024x1024x64 = 1.86834275 ms
1024x1024x256 = 6.083142 ms
1024x1024x1024 = 22.866189 ms
1024x1024x2048 = 44.308985 ms
1024x2048x64 = 3.629431 ms
1024x2048x256 = 11.749985 ms
1024x2048x1024 = 45.183323 ms
1024x2048x2048 = 87.669121 ms
2048x64x64 = 260.50928125 us
2048x64x256 = 955.168111111 us
2048x64x1024 = 3.640455 ms
2048x64x2048 = 7.126966 ms
2048x256x64 = 844.1563 us
2048x256x256 = 2.98709 ms
2048x256x1024 = 11.149483 ms
2048x256x2048 = 22.938917 ms
2048x1024x64 = 3.607864 ms
2048x1024x256 = 11.229453 ms
2048x1024x1024 = 44.793495 ms
2048x1024x2048 = 87.040107 ms
2048x2048x64 = 6.9114315 ms
2048x2048x256 = 21.917962 ms
2048x2048x1024 = 85.052607 ms
2048x2048x2048 = 177.621143 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 14.4766 us
4 KiB = 36.10481 us
16 KiB = 73.53587 us
64 KiB = 133.509 us
256 KiB = 376.2313 us
1 MiB = 1.39556 ms
4 MiB = 6.221307 ms
16 MiB = 21.02934 ms
64 MiB = 114.8907 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 10.81265 us
4 KiB = 15.73169 us
16 KiB = 40.2753 us
64 KiB = 82.80766 us
256 KiB = 243.5727 us
1 MiB = 667.6735 us
4 MiB = 1.802729 ms
16 MiB = 8.095104 ms
64 MiB = 32.5331 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 11.06617 us
4 KiB = 16.03963 us
16 KiB = 44.37364 us
64 KiB = 91.32345 us
256 KiB = 258.6868 us
1 MiB = 925.0629 us
4 MiB = 6.329562 ms
16 MiB = 44.65654 ms
64 MiB = 166.9975 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.943848 us
4 KiB = 12.11644 us
16 KiB = 33.17324 us
64 KiB = 41.18556 us
256 KiB = 79.0514 us
1 MiB = 243.9364 us
4 MiB = 1.801936 ms
16 MiB = 8.720387 ms
64 MiB = 45.39329 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.759224 us
4 KiB = 12.3041 us
16 KiB = 17.06962 us
64 KiB = 31.98896 us
256 KiB = 106.4182 us
1 MiB = 1.475649 ms
4 MiB = 4.463489 ms
16 MiB = 15.29391 ms
64 MiB = 53.9885 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.962552 us
4 KiB = 6.407714 us
16 KiB = 7.740409 us
64 KiB = 11.75804 us
256 KiB = 27.62514 us
1 MiB = 99.28099 us
4 MiB = 908.296 us
16 MiB = 5.369553 ms
64 MiB = 17.90601 ms
