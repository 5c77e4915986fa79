# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 01:32 UTC.
# CPU: AMD EPYC, 2 logical CPUs.
# gemm fp32: the CPU kernels' matmul through OpenBLAS (OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64) with 1 threads, as configured (OPENBLAS_NUM_THREADS=1) (OMP_NUM_THREADS=1).
# memory: one thread's add over 64 MiB arrays (2 reads + 1 write an element).
# kernel_overhead: that add on one element.
# collectives: 4 local MPI ranks (mpirun --bind-to none --mca mpi_yield_when_idle 1),
# sizes as nccl-tests prints them; intra_node_bus: the all-reduce bus bandwidth at 64 MiB.
# compute.shared_core_efficiency (where the ranks outnumber the cores): their 512^3 GEMMs all at once against each core running one alone (the median of 7 rounds of the two back to back).
# compute.waiting_rank_load (same condition): one rank a core multiplies while the others wait on it as pipeline stages wait, against idle; the share of a core each waiting rank takes.
# compute.in_step_collective_wait (same condition): steps of that GEMM and an all-gather of 1 MiB of its output, every rank at once, less the GEMMs alone and the gathers alone.

[bandwidth]
memory = 22.0713926755 GB/s
intra_node_bus = 1.00786699235 GB/s
kernel_overhead = 378.984015332 ns

[compute]
shared_core_efficiency = 0.9845117
waiting_rank_load = 0.0959373715746
in_step_collective_wait = 33.292 us

[gemm fp32]
64x64x64 = 9.83969485714 us
64x64x256 = 36.0209305019 us
64x64x1024 = 126.709626866 us
64x64x2048 = 254.678121212 us
64x256x64 = 30.9950989399 us
64x256x256 = 115.404133333 us
64x256x1024 = 441.223526316 us
64x256x2048 = 863.466444444 us
64x1024x64 = 111.576151899 us
64x1024x256 = 405.259285714 us
64x1024x1024 = 1.5769462 ms
64x1024x2048 = 2.998617 ms
64x2048x64 = 217.162651163 us
64x2048x256 = 770.020545455 us
64x2048x1024 = 2.960801 ms
64x2048x2048 = 6.117613 ms
256x64x64 = 34.5391449275 us
256x64x256 = 126.935855072 us
256x64x1024 = 411.793625 us
256x64x2048 = 820.7961 us
256x256x64 = 101.969505882 us
256x256x256 = 365.07484 us
256x256x1024 = 1.40463366667 ms
256x256x2048 = 2.69174316667 ms
256x1024x64 = 378.344204545 us
256x1024x256 = 1.32605383333 ms
256x1024x1024 = 5.118749 ms
256x1024x2048 = 10.192953 ms
256x2048x64 = 749.721227273 us
256x2048x256 = 2.61472716667 ms
256x2048x1024 = 10.270498 ms
256x2048x2048 = 20.710148 ms
1024x64x64 = 126.264507042 us
1024x64x256 = 448.1919 us
1024x64x1024 = 1.5739849 ms
1024x64x2048 = 3.15518475 ms
1024x256x64 = 388.299565217 us
1024x256x256 = 1.4049069 ms
1024x256x1024 = 5.631891 ms
1024x256x2048 = 10.570394 ms
1024x1024x64 = 1.5435005 ms
1024x1024x256 = 5.479766 ms
1024x1024x1024 = 21.242919 ms
1024x1024x2048 = 42.470957 ms
1024x2048x64 = 2.9780365 ms
1024x2048x256 = 10.322696 ms
1024x2048x1024 = 40.356237 ms
1024x2048x2048 = 83.425822 ms
2048x64x64 = 245.785530303 us
2048x64x256 = 915.0515 us
2048x64x1024 = 3.236848 ms
2048x64x2048 = 6.43902 ms
2048x256x64 = 802.788272727 us
2048x256x256 = 2.7903725 ms
2048x256x1024 = 10.794517 ms
2048x256x2048 = 21.191833 ms
2048x1024x64 = 3.110453 ms
2048x1024x256 = 10.517766 ms
2048x1024x1024 = 41.49033 ms
2048x1024x2048 = 81.981898 ms
2048x2048x64 = 6.185904 ms
2048x2048x256 = 21.342136 ms
2048x2048x1024 = 84.132821 ms
2048x2048x2048 = 168.804132 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 9.304931 us
4 KiB = 21.39334 us
16 KiB = 52.15368 us
64 KiB = 97.90302 us
256 KiB = 264.814 us
1 MiB = 469.37 us
4 MiB = 2.89081 ms
16 MiB = 19.82568 ms
64 MiB = 99.87756 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 9.668828 us
4 KiB = 12.89962 us
16 KiB = 24.43344 us
64 KiB = 34.46272 us
256 KiB = 178.6007 us
1 MiB = 700.6406 us
4 MiB = 1.949997 ms
16 MiB = 5.730515 ms
64 MiB = 27.94959 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 8.339231 us
4 KiB = 13.76163 us
16 KiB = 50.56533 us
64 KiB = 101.477 us
256 KiB = 236.9169 us
1 MiB = 907.2244 us
4 MiB = 4.298616 ms
16 MiB = 39.5221 ms
64 MiB = 129.146 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.395919 us
4 KiB = 9.586347 us
16 KiB = 26.78958 us
64 KiB = 32.96332 us
256 KiB = 61.22487 us
1 MiB = 188.3569 us
4 MiB = 761.1061 us
16 MiB = 6.625682 ms
64 MiB = 27.10327 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.32958 us
4 KiB = 11.40745 us
16 KiB = 13.27281 us
64 KiB = 24.60745 us
256 KiB = 73.28113 us
1 MiB = 696.5725 us
4 MiB = 2.491811 ms
16 MiB = 11.18714 ms
64 MiB = 39.26992 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 1.933755 us
4 KiB = 4.335625 us
16 KiB = 5.412328 us
64 KiB = 9.211927 us
256 KiB = 28.58189 us
1 MiB = 88.47298 us
4 MiB = 732.8697 us
16 MiB = 3.793743 ms
64 MiB = 14.13178 ms
