# Measured by `cleave profile --backend cpu` on vm, 2026-12-01 23:20 UTC.
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
memory = 12.6943069234 GB/s
intra_node_bus = 963.290660042 MB/s
kernel_overhead = 659.833226063 ns

[compute]
shared_core_efficiency = 0.9966203
waiting_rank_load = 0
in_step_collective_wait = 95.0195 us

[gemm fp32]
64x64x64 = 13.0960761347 us
64x64x256 = 47.0625662651 us
64x64x1024 = 156.303669811 us
64x64x2048 = 330.829703704 us
64x256x64 = 40.7327788018 us
64x256x256 = 138.483967213 us
64x256x1024 = 526.180684211 us
64x256x2048 = 966.49175 us
64x1024x64 = 142.066973684 us
64x1024x256 = 477.682735294 us
64x1024x1024 = 1.556248 ms
64x1024x2048 = 3.64594775 ms
64x2048x64 = 234.384859375 us
64x2048x256 = 787.905181818 us
64x2048x1024 = 3.0724415 ms
64x2048x2048 = 5.978827 ms
256x64x64 = 32.7713185185 us
256x64x256 = 121.542457143 us
256x64x1024 = 421.2589 us
256x64x2048 = 848.8643 us
256x256x64 = 136.568078125 us
256x256x256 = 461.654045455 us
256x256x1024 = 1.7357345 ms
256x256x2048 = 3.392905 ms
256x1024x64 = 469.927681818 us
256x1024x256 = 1.68152316667 ms
256x1024x1024 = 5.43556 ms
256x1024x2048 = 11.288841 ms
256x2048x64 = 840.454181818 us
256x2048x256 = 3.31305875 ms
256x2048x1024 = 12.944429 ms
256x2048x2048 = 25.54796 ms
1024x64x64 = 134.790727273 us
1024x64x256 = 498.556117647 us
1024x64x1024 = 1.7931982 ms
1024x64x2048 = 3.48128875 ms
1024x256x64 = 430.1261 us
1024x256x256 = 1.4731421 ms
1024x256x1024 = 5.73166 ms
1024x256x2048 = 11.10039 ms
1024x1024x64 = 1.627858 ms
1024x1024x256 = 5.695987 ms
1024x1024x1024 = 22.650609 ms
1024x1024x2048 = 44.417065 ms
1024x2048x64 = 3.310335 ms
1024x2048x256 = 11.142723 ms
1024x2048x1024 = 46.423504 ms
1024x2048x2048 = 89.779324 ms
2048x64x64 = 278.494393939 us
2048x64x256 = 957.726333333 us
2048x64x1024 = 4.2593235 ms
2048x64x2048 = 8.551907 ms
2048x256x64 = 870.1539 us
2048x256x256 = 3.41912625 ms
2048x256x1024 = 12.108968 ms
2048x256x2048 = 22.352807 ms
2048x1024x64 = 3.22558125 ms
2048x1024x256 = 10.890268 ms
2048x1024x1024 = 49.064141 ms
2048x1024x2048 = 95.621659 ms
2048x2048x64 = 6.6908285 ms
2048x2048x256 = 22.969963 ms
2048x2048x1024 = 90.548285 ms
2048x2048x2048 = 187.242036 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 11.39789 us
4 KiB = 25.77602 us
16 KiB = 53.18161 us
64 KiB = 85.44275 us
256 KiB = 269.8807 us
1 MiB = 858.8967 us
4 MiB = 4.07532 ms
16 MiB = 19.81656 ms
64 MiB = 104.4994 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 18.20576 us
4 KiB = 18.13155 us
16 KiB = 45.62865 us
64 KiB = 97.59589 us
256 KiB = 270.1733 us
1 MiB = 740.0815 us
4 MiB = 1.975759 ms
16 MiB = 8.742244 ms
64 MiB = 30.1989 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 10.57994 us
4 KiB = 15.22838 us
16 KiB = 69.83662 us
64 KiB = 95.56042 us
256 KiB = 396.4856 us
1 MiB = 1.056333 ms
4 MiB = 7.974223 ms
16 MiB = 44.63034 ms
64 MiB = 154.416 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 22.22566 us
4 KiB = 33.84949 us
16 KiB = 59.9535 us
64 KiB = 70.79697 us
256 KiB = 107.0548 us
1 MiB = 322.9277 us
4 MiB = 2.440138 ms
16 MiB = 9.207961 ms
64 MiB = 34.97542 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.434645 us
4 KiB = 9.938884 us
16 KiB = 14.273 us
64 KiB = 21.72306 us
256 KiB = 58.78835 us
1 MiB = 214.0023 us
4 MiB = 1.610555 ms
16 MiB = 13.53055 ms
64 MiB = 45.40455 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.235193 us
4 KiB = 4.670623 us
16 KiB = 5.493598 us
64 KiB = 9.273746 us
256 KiB = 30.17539 us
1 MiB = 101.0083 us
4 MiB = 886.2858 us
16 MiB = 4.081102 ms
64 MiB = 14.76106 ms
