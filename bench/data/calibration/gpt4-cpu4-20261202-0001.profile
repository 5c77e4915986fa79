# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 00:01 UTC.
# CPU: AMD EPYC, 2 logical CPUs.
# gemm fp32: the CPU kernels' matmul through OpenBLAS (OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64) with 1 threads, as configured (OPENBLAS_NUM_THREADS=1) (OMP_NUM_THREADS=1).
# memory: one thread's add over 64 MiB arrays (2 reads + 1 write an element).
# kernel_overhead: that add on one element.
# collectives: 4 local MPI ranks (mpirun --bind-to none --mca mpi_yield_when_idle 1),
# sizes as nccl-tests prints them; intra_node_bus: the all-reduce bus bandwidth at 64 MiB.
# compute.shared_core_efficiency (where the ranks outnumber the cores): their 512^3 GEMMs all at once against each core running one alone (the median of 7 rounds of the two back to back).
# compute.waiting_rank_load (same condition): one rank a core multiplies while the others wait on it as pipeline stages wait, against idle; the share of a core each waiting rank takes.
# compute.in_step_collective_wait (same condition): steps of that GEMM and an all-gather of 1 MiB of its output, every rank at once, less the GEMMs alone and the gathers alone.

[bandwidth]
memory = 17.8036576953 GB/s
intra_node_bus = 860.407556227 MB/s
kernel_overhead = 375.712539153 ns

[compute]
shared_core_efficiency = 0.9873058
waiting_rank_load = 0
in_step_collective_wait = 112.8623 us

[gemm fp32]
64x64x64 = 11.3724403794 us
64x64x256 = 38.4974722222 us
64x64x1024 = 137.812677419 us
64x64x2048 = 320.066970588 us
64x256x64 = 41.5672268519 us
64x256x256 = 119.217658333 us
64x256x1024 = 444.566368421 us
64x256x2048 = 878.983888889 us
64x1024x64 = 116.925109589 us
64x1024x256 = 402.275809524 us
64x1024x1024 = 1.5278073 ms
64x1024x2048 = 2.9740105 ms
64x2048x64 = 230.894194444 us
64x2048x256 = 776.711363636 us
64x2048x1024 = 3.0010405 ms
64x2048x2048 = 5.828364 ms
256x64x64 = 35.2769601594 us
256x64x256 = 124.264873418 us
256x64x1024 = 425.9694 us
256x64x2048 = 895.2351 us
256x256x64 = 111.050013158 us
256x256x256 = 389.156357143 us
256x256x1024 = 1.39342533333 ms
256x256x2048 = 2.7497375 ms
256x1024x64 = 410.746825 us
256x1024x256 = 1.36598216667 ms
256x1024x1024 = 5.129155 ms
256x1024x2048 = 10.169989 ms
256x2048x64 = 806.8278 us
256x2048x256 = 2.6974065 ms
256x2048x1024 = 10.456575 ms
256x2048x2048 = 20.545744 ms
1024x64x64 = 134.675507937 us
1024x64x256 = 482.7645 us
1024x64x1024 = 1.622573 ms
1024x64x2048 = 3.18001125 ms
1024x256x64 = 426.7601 us
1024x256x256 = 1.4352088 ms
1024x256x1024 = 5.345366 ms
1024x256x2048 = 10.525888 ms
1024x1024x64 = 1.5999535 ms
1024x1024x256 = 5.249944 ms
1024x1024x1024 = 20.653134 ms
1024x1024x2048 = 40.920484 ms
1024x2048x64 = 3.37082975 ms
1024x2048x256 = 11.642766 ms
1024x2048x1024 = 42.216138 ms
1024x2048x2048 = 86.898692 ms
2048x64x64 = 279.372225806 us
2048x64x256 = 999.902333333 us
2048x64x1024 = 3.515234 ms
2048x64x2048 = 6.9404545 ms
2048x256x64 = 859.3819 us
2048x256x256 = 2.9464745 ms
2048x256x1024 = 11.178777 ms
2048x256x2048 = 21.813306 ms
2048x1024x64 = 3.41533325 ms
2048x1024x256 = 10.81686 ms
2048x1024x1024 = 43.766369 ms
2048x1024x2048 = 83.648633 ms
2048x2048x64 = 6.6746995 ms
2048x2048x256 = 22.307289 ms
2048x2048x1024 = 85.105825 ms
2048x2048x2048 = 168.376937 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 9.802155 us
4 KiB = 23.66103 us
16 KiB = 55.24574 us
64 KiB = 94.11923 us
256 KiB = 208.2555 us
1 MiB = 514.5314 us
4 MiB = 3.225302 ms
16 MiB = 19.58936 ms
64 MiB = 116.9949 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 8.959192 us
4 KiB = 10.84022 us
16 KiB = 26.76943 us
64 KiB = 35.41261 us
256 KiB = 100.3627 us
1 MiB = 258.0542 us
4 MiB = 1.035209 ms
16 MiB = 6.443813 ms
64 MiB = 26.04473 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.655825 us
4 KiB = 12.35371 us
16 KiB = 30.48201 us
64 KiB = 52.55039 us
256 KiB = 108.7959 us
1 MiB = 284.6461 us
4 MiB = 3.257168 ms
16 MiB = 32.58767 ms
64 MiB = 143.1322 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.714653 us
4 KiB = 7.137912 us
16 KiB = 27.92854 us
64 KiB = 29.12923 us
256 KiB = 63.73289 us
1 MiB = 171.0429 us
4 MiB = 1.238351 ms
16 MiB = 7.99482 ms
64 MiB = 34.24605 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.672446 us
4 KiB = 10.98004 us
16 KiB = 11.93136 us
64 KiB = 21.07727 us
256 KiB = 62.13616 us
1 MiB = 210.6296 us
4 MiB = 1.326851 ms
16 MiB = 11.28859 ms
64 MiB = 55.94619 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.571025 us
4 KiB = 5.488424 us
16 KiB = 6.533855 us
64 KiB = 10.74438 us
256 KiB = 29.87054 us
1 MiB = 106.5286 us
4 MiB = 894.5619 us
16 MiB = 4.283881 ms
64 MiB = 16.62412 ms
