# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 04:43 UTC.
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
memory = 19.2092127925 GB/s
intra_node_bus = 414.613284654 MB/s
kernel_overhead = 350.313044691 ns

[compute]
shared_core_efficiency = 0.9805942
waiting_rank_load = 0
in_step_collective_wait = 978.7589 us

[gemm fp32]
64x64x64 = 10.4345425 us
64x64x256 = 39.4793504902 us
64x64x1024 = 148.632546875 us
64x64x2048 = 258.410030303 us
64x256x64 = 32.7466323529 us
64x256x256 = 121.348183099 us
64x256x1024 = 454.715631579 us
64x256x2048 = 899.496055556 us
64x1024x64 = 126.615657534 us
64x1024x256 = 441.789631579 us
64x1024x1024 = 1.9203492 ms
64x1024x2048 = 3.3467215 ms
64x2048x64 = 237.5325 us
64x2048x256 = 838.75635 us
64x2048x1024 = 3.182773 ms
64x2048x2048 = 6.295457 ms
256x64x64 = 35.2954101562 us
256x64x256 = 158.783276923 us
256x64x1024 = 525.6127 us
256x64x2048 = 873.750375 us
256x256x64 = 116.126181818 us
256x256x256 = 383.534863636 us
256x256x1024 = 1.6060395 ms
256x256x2048 = 3.2100735 ms
256x1024x64 = 492.300882353 us
256x1024x256 = 1.6608659 ms
256x1024x1024 = 5.602678 ms
256x1024x2048 = 11.885235 ms
256x2048x64 = 916.9604 us
256x2048x256 = 2.978908 ms
256x2048x1024 = 13.104586 ms
256x2048x2048 = 27.562001 ms
1024x64x64 = 158.351465909 us
1024x64x256 = 504.027176471 us
1024x64x1024 = 1.95815975 ms
1024x64x2048 = 4.250941 ms
1024x256x64 = 495.814941176 us
1024x256x256 = 1.880135125 ms
1024x256x1024 = 7.1497355 ms
1024x256x2048 = 14.140033 ms
1024x1024x64 = 2.084908 ms
1024x1024x256 = 6.8534205 ms
1024x1024x1024 = 28.170585 ms
1024x1024x2048 = 49.502496 ms
1024x2048x64 = 3.471559 ms
1024x2048x256 = 11.507715 ms
1024x2048x1024 = 49.233857 ms
1024x2048x2048 = 86.677349 ms
2048x64x64 = 285.066233333 us
2048x64x256 = 1.01715566667 ms
2048x64x1024 = 3.89526075 ms
2048x64x2048 = 8.89091 ms
2048x256x64 = 1.11237366667 ms
2048x256x256 = 3.77165225 ms
2048x256x1024 = 15.044136 ms
2048x256x2048 = 24.887691 ms
2048x1024x64 = 3.51090775 ms
2048x1024x256 = 11.539643 ms
2048x1024x1024 = 45.835471 ms
2048x1024x2048 = 87.987785 ms
2048x2048x64 = 8.535112 ms
2048x2048x256 = 25.131843 ms
2048x2048x1024 = 100.998962 ms
2048x2048x2048 = 200.185223 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 11.53549 us
4 KiB = 26.68171 us
16 KiB = 53.65398 us
64 KiB = 88.13133 us
256 KiB = 201.7887 us
1 MiB = 650.6676 us
4 MiB = 6.482344 ms
16 MiB = 30.847 ms
64 MiB = 242.7884 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 15.87263 us
4 KiB = 21.94279 us
16 KiB = 49.22244 us
64 KiB = 91.25151 us
256 KiB = 177.1971 us
1 MiB = 377.6946 us
4 MiB = 1.452543 ms
16 MiB = 10.94439 ms
64 MiB = 63.86642 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 13.42865 us
4 KiB = 20.56783 us
16 KiB = 49.05448 us
64 KiB = 89.15179 us
256 KiB = 186.5297 us
1 MiB = 666.2719 us
4 MiB = 13.26991 ms
16 MiB = 65.92466 ms
64 MiB = 205.686 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.069318 us
4 KiB = 8.010972 us
16 KiB = 26.80961 us
64 KiB = 33.21182 us
256 KiB = 66.53524 us
1 MiB = 227.1874 us
4 MiB = 1.755157 ms
16 MiB = 9.17335 ms
64 MiB = 32.62689 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.90322 us
4 KiB = 10.84389 us
16 KiB = 14.17796 us
64 KiB = 23.66333 us
256 KiB = 62.47707 us
1 MiB = 183.6839 us
4 MiB = 1.8201 ms
16 MiB = 14.19591 ms
64 MiB = 50.08129 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.332616 us
4 KiB = 5.013848 us
16 KiB = 6.231835 us
64 KiB = 10.53123 us
256 KiB = 28.92179 us
1 MiB = 99.89613 us
4 MiB = 846.2664 us
16 MiB = 4.246092 ms
64 MiB = 16.35265 ms
