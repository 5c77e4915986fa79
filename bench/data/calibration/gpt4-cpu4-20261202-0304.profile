# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 02:41 UTC.
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
memory = 18.8555854799 GB/s
intra_node_bus = 931.316466072 MB/s
kernel_overhead = 363.799020386 ns

[compute]
shared_core_efficiency = 0.9704027
waiting_rank_load = 0.0518324187141
in_step_collective_wait = 386.6457 us

[gemm fp32]
64x64x64 = 10.7195304348 us
64x64x256 = 38.7082578947 us
64x64x1024 = 134.699575 us
64x64x2048 = 266.089534483 us
64x256x64 = 33.0761367521 us
64x256x256 = 117.847472222 us
64x256x1024 = 449.706631579 us
64x256x2048 = 887.716833333 us
64x1024x64 = 118.259888889 us
64x1024x256 = 414.4218 us
64x1024x1024 = 1.5715983 ms
64x1024x2048 = 3.19438775 ms
64x2048x64 = 269.530722222 us
64x2048x256 = 970.958333333 us
64x2048x1024 = 3.076022 ms
64x2048x2048 = 6.117874 ms
256x64x64 = 35.8050705394 us
256x64x256 = 132.112307692 us
256x64x1024 = 438.636473684 us
256x64x2048 = 896.2647 us
256x256x64 = 113.25108 us
256x256x256 = 397.6035 us
256x256x1024 = 1.4015949 ms
256x256x2048 = 2.95260033333 ms
256x1024x64 = 414.2255 us
256x1024x256 = 1.43324616667 ms
256x1024x1024 = 5.712822 ms
256x1024x2048 = 12.59559 ms
256x2048x64 = 965.018375 us
256x2048x256 = 2.9638505 ms
256x2048x1024 = 13.215861 ms
256x2048x2048 = 23.595673 ms
1024x64x64 = 148.4247 us
1024x64x256 = 505.55525 us
1024x64x1024 = 1.8922154 ms
1024x64x2048 = 3.67092275 ms
1024x256x64 = 439.34384375 us
1024x256x256 = 1.5345644 ms
1024x256x1024 = 6.17645 ms
1024x256x2048 = 11.527115 ms
1024x1024x64 = 1.7739178 ms
1024x1024x256 = 5.677529 ms
1024x1024x1024 = 22.227611 ms
1024x1024x2048 = 43.781722 ms
1024x2048x64 = 3.380529 ms
1024x2048x256 = 10.800947 ms
1024x2048x1024 = 47.083354 ms
1024x2048x2048 = 104.491418 ms
2048x64x64 = 278.190451613 us
2048x64x256 = 973.953777778 us
2048x64x1024 = 3.9765115 ms
2048x64x2048 = 7.895768 ms
2048x256x64 = 880.093333333 us
2048x256x256 = 2.813973 ms
2048x256x1024 = 11.155192 ms
2048x256x2048 = 25.66197 ms
2048x1024x64 = 3.58465725 ms
2048x1024x256 = 11.297723 ms
2048x1024x1024 = 46.649119 ms
2048x1024x2048 = 90.548517 ms
2048x2048x64 = 8.810541 ms
2048x2048x256 = 26.228801 ms
2048x2048x1024 = 86.577391 ms
2048x2048x2048 = 198.083052 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 12.38818 us
4 KiB = 26.52526 us
16 KiB = 56.52677 us
64 KiB = 91.86644 us
256 KiB = 190.9638 us
1 MiB = 514.1914 us
4 MiB = 3.541801 ms
16 MiB = 20.83862 ms
64 MiB = 108.0871 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 9.327689 us
4 KiB = 12.82428 us
16 KiB = 28.99798 us
64 KiB = 38.17294 us
256 KiB = 80.4708 us
1 MiB = 198.8522 us
4 MiB = 887.0015 us
16 MiB = 5.340148 ms
64 MiB = 26.29015 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 8.52854 us
4 KiB = 12.81522 us
16 KiB = 29.90214 us
64 KiB = 37.32392 us
256 KiB = 98.32866 us
1 MiB = 361.1417 us
4 MiB = 5.40847 ms
16 MiB = 34.41024 ms
64 MiB = 141.7296 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.034871 us
4 KiB = 7.620135 us
16 KiB = 21.01232 us
64 KiB = 27.8278 us
256 KiB = 57.57673 us
1 MiB = 204.7133 us
4 MiB = 1.366957 ms
16 MiB = 8.403311 ms
64 MiB = 30.6586 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.027519 us
4 KiB = 9.953386 us
16 KiB = 12.28846 us
64 KiB = 19.90877 us
256 KiB = 55.42116 us
1 MiB = 205.2644 us
4 MiB = 1.042089 ms
16 MiB = 12.78955 ms
64 MiB = 37.72292 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.613548 us
4 KiB = 5.46147 us
16 KiB = 6.523401 us
64 KiB = 9.712197 us
256 KiB = 25.7515 us
1 MiB = 98.35859 us
4 MiB = 573.7537 us
16 MiB = 4.042705 ms
64 MiB = 11.99485 ms
