# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 06:39 UTC.
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
memory = 16.5130728861 GB/s
intra_node_bus = 805.783714272 MB/s
kernel_overhead = 575.110569344 ns

[compute]
shared_core_efficiency = 0.9800882
waiting_rank_load = 0
in_step_collective_wait = 104.4504 us

[gemm fp32]
64x64x64 = 10.4683970081 us
64x64x256 = 37.2716461538 us
64x64x1024 = 130.945 us
64x64x2048 = 258.657171429 us
64x256x64 = 31.1004684015 us
64x256x256 = 115.59536 us
64x256x1024 = 446.91005 us
64x256x2048 = 883.319722222 us
64x1024x64 = 111.2399125 us
64x1024x256 = 395.124714286 us
64x1024x1024 = 1.5149563 ms
64x1024x2048 = 3.21259725 ms
64x2048x64 = 227.042487179 us
64x2048x256 = 794.026181818 us
64x2048x1024 = 2.970395 ms
64x2048x2048 = 5.929824 ms
256x64x64 = 32.0009437984 us
256x64x256 = 119.876295775 us
256x64x1024 = 418.087725 us
256x64x2048 = 844.7121 us
256x256x64 = 105.426158537 us
256x256x256 = 368.781 us
256x256x1024 = 1.37908666667 ms
256x256x2048 = 2.83100666667 ms
256x1024x64 = 383.200318182 us
256x1024x256 = 1.347767 ms
256x1024x1024 = 6.059356 ms
256x1024x2048 = 11.540854 ms
256x2048x64 = 781.841388889 us
256x2048x256 = 2.71758816667 ms
256x2048x1024 = 10.657293 ms
256x2048x2048 = 22.870606 ms
1024x64x64 = 124.165057143 us
1024x64x256 = 457.358 us
1024x64x1024 = 1.5819046 ms
1024x64x2048 = 3.09960975 ms
1024x256x64 = 399.525454545 us
1024x256x256 = 1.4147405 ms
1024x256x1024 = 5.33389 ms
1024x256x2048 = 10.542692 ms
1024x1024x64 = 1.5454615 ms
1024x1024x256 = 5.215203 ms
1024x1024x1024 = 20.594176 ms
1024x1024x2048 = 41.771808 ms
1024x2048x64 = 3.050509 ms
1024x2048x256 = 10.757041 ms
1024x2048x1024 = 41.984624 ms
1024x2048x2048 = 83.939244 ms
2048x64x64 = 253.727318182 us
2048x64x256 = 928.3045 us
2048x64x1024 = 3.44032275 ms
2048x64x2048 = 6.963919 ms
2048x256x64 = 794.949363636 us
2048x256x256 = 2.807201 ms
2048x256x1024 = 12.007828 ms
2048x256x2048 = 23.087518 ms
2048x1024x64 = 3.155465 ms
2048x1024x256 = 10.550524 ms
2048x1024x1024 = 46.591844 ms
2048x1024x2048 = 86.699101 ms
2048x2048x64 = 6.806891 ms
2048x2048x256 = 23.41226 ms
2048x2048x1024 = 88.117898 ms
2048x2048x2048 = 169.506735 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 14.735935 us
4 KiB = 31.341725 us
16 KiB = 45.19214 us
64 KiB = 146.7111 us
256 KiB = 415.646 us
1 MiB = 1.22121785 ms
4 MiB = 4.5928635 ms
16 MiB = 21.45488 ms
64 MiB = 124.92595 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 7.5848205 us
4 KiB = 12.04494 us
16 KiB = 36.908345 us
64 KiB = 57.40736 us
256 KiB = 146.8888 us
1 MiB = 419.6253 us
4 MiB = 1.6830615 ms
16 MiB = 7.6934925 ms
64 MiB = 30.27266 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 13.31293 us
4 KiB = 24.46923 us
16 KiB = 44.460765 us
64 KiB = 81.75554 us
256 KiB = 205.47835 us
1 MiB = 801.0345 us
4 MiB = 3.379978 ms
16 MiB = 34.34039 ms
64 MiB = 147.9146 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 7.3524115 us
4 KiB = 11.28779 us
16 KiB = 31.49587 us
64 KiB = 40.49444 us
256 KiB = 71.3118 us
1 MiB = 218.6582 us
4 MiB = 1.472168 ms
16 MiB = 8.285381 ms
64 MiB = 33.546295 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 8.4379535 us
4 KiB = 14.927215 us
16 KiB = 16.02693 us
64 KiB = 29.14078 us
256 KiB = 99.35905 us
1 MiB = 379.3609 us
4 MiB = 1.932612 ms
16 MiB = 7.913164 ms
64 MiB = 30.473885 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 5.1895975 us
4 KiB = 117.11867 us
16 KiB = 14.571518 us
64 KiB = 11.094785 us
256 KiB = 210.20695 us
1 MiB = 406.9305 us
4 MiB = 1.290486 ms
16 MiB = 4.9478635 ms
64 MiB = 18.00028 ms
