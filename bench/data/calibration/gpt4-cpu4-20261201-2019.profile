# Measured by `cleave profile --backend cpu` on vm, 2026-12-01 20:19 UTC.
# CPU: AMD EPYC, 2 logical CPUs.
# gemm fp32: the CPU kernels' matmul through OpenBLAS (OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64) with 1 threads, as configured (OPENBLAS_NUM_THREADS=1) (OMP_NUM_THREADS=1).
# memory: one thread's add over 64 MiB arrays (2 reads + 1 write an element).
# kernel_overhead: that add on one element.
# collectives: 4 local MPI ranks (mpirun --bind-to none --mca mpi_yield_when_idle 1),
# sizes as nccl-tests prints them; intra_node_bus: the all-reduce bus bandwidth at 64 MiB.
# compute.shared_core_efficiency (where the ranks outnumber the cores): their 512^3 GEMMs all at once against each core running one alone.
# compute.waiting_rank_load (same condition): one rank a core multiplies while the others wait on it as pipeline stages wait, against idle; the share of a core each waiting rank takes.
# compute.in_step_collective_wait (same condition): steps of that GEMM and an all-gather of 1 MiB of its output, every rank at once, less the GEMMs alone and the gathers alone.

[bandwidth]
memory = 24.3027160764 GB/s
intra_node_bus = 1.09537629449 GB/s
kernel_overhead = 370.791202346 ns

[compute]
shared_core_efficiency = 0.97640329494
waiting_rank_load = 0
in_step_collective_wait = 195.2899 us

[gemm fp32]
64x64x64 = 6.78329080053 us
64x64x256 = 37.4487612903 us
64x64x1024 = 131.438524138 us
64x64x2048 = 272.080725806 us
64x256x64 = 33.6522580645 us
64x256x256 = 130.70677551 us
64x256x1024 = 475.694985714 us
64x256x2048 = 975.545055556 us
64x1024x64 = 142.448105263 us
64x1024x256 = 471.766473684 us
64x1024x1024 = 1.86106477778 ms
64x1024x2048 = 3.570702625 ms
64x2048x64 = 267.492970149 us
64x2048x256 = 1.01903715789 ms
64x2048x1024 = 4.039315875 ms
64x2048x2048 = 7.28256225 ms
256x64x64 = 32.9846520076 us
256x64x256 = 123.489992857 us
256x64x1024 = 415.971575 us
256x64x2048 = 844.076078947 us
256x256x64 = 111.3740375 us
256x256x256 = 385.752022727 us
256x256x1024 = 1.45523240909 ms
256x256x2048 = 2.9893753 ms
256x1024x64 = 440.372486486 us
256x1024x256 = 1.53354704545 ms
256x1024x1024 = 5.842144 ms
256x1024x2048 = 11.139248 ms
256x2048x64 = 888.9518 us
256x2048x256 = 2.9100096 ms
256x2048x1024 = 11.429289 ms
256x2048x2048 = 22.854823 ms
1024x64x64 = 131.07526087 us
1024x64x256 = 474.05869697 us
1024x64x1024 = 1.6862486 ms
1024x64x2048 = 3.3329984 ms
1024x256x64 = 415.390634146 us
1024x256x256 = 1.4674095 ms
1024x256x1024 = 5.76672866667 ms
1024x256x2048 = 11.588996 ms
1024x1024x64 = 1.7164324 ms
1024x1024x256 = 6.016217 ms
1024x1024x1024 = 21.252964 ms
1024x1024x2048 = 42.100927 ms
1024x2048x64 = 3.4053895 ms
1024x2048x256 = 11.203604 ms
1024x2048x1024 = 43.895962 ms
1024x2048x2048 = 83.945232 ms
2048x64x64 = 243.200925373 us
2048x64x256 = 937.340555556 us
2048x64x1024 = 3.3900352 ms
2048x64x2048 = 6.613842 ms
2048x256x64 = 848.111571429 us
2048x256x256 = 3.0374275 ms
2048x256x1024 = 11.587934 ms
2048x256x2048 = 22.419326 ms
2048x1024x64 = 3.415463375 ms
2048x1024x256 = 11.141792 ms
2048x1024x1024 = 42.827706 ms
2048x1024x2048 = 90.854451 ms
2048x2048x64 = 7.957129 ms
2048x2048x256 = 22.741945 ms
2048x2048x1024 = 83.892404 ms
2048x2048x2048 = 167.611381 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 14.05158 us
4 KiB = 35.44612 us
16 KiB = 72.00778 us
64 KiB = 135.9492 us
256 KiB = 345.3242 us
1 MiB = 1.207859 ms
4 MiB = 4.271902 ms
16 MiB = 12.04375 ms
64 MiB = 91.89837 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 10.02522 us
4 KiB = 15.00111 us
16 KiB = 39.30024 us
64 KiB = 79.1359 us
256 KiB = 224.0739 us
1 MiB = 552.4534 us
4 MiB = 1.578896 ms
16 MiB = 6.181794 ms
64 MiB = 22.62484 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 11.24444 us
4 KiB = 17.09228 us
16 KiB = 45.34794 us
64 KiB = 94.45012 us
256 KiB = 257.9392 us
1 MiB = 925.6866 us
4 MiB = 4.687029 ms
16 MiB = 36.00572 ms
64 MiB = 124.397 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.306709 us
4 KiB = 9.674975 us
16 KiB = 27.00882 us
64 KiB = 34.09536 us
256 KiB = 64.23229 us
1 MiB = 190.9967 us
4 MiB = 1.041602 ms
16 MiB = 6.052573 ms
64 MiB = 24.07149 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.557622 us
4 KiB = 10.36099 us
16 KiB = 16.80725 us
64 KiB = 32.51523 us
256 KiB = 107.8789 us
1 MiB = 1.424854 ms
4 MiB = 3.247399 ms
16 MiB = 10.40005 ms
64 MiB = 32.14577 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.298031 us
4 KiB = 5.119047 us
16 KiB = 7.124845 us
64 KiB = 11.55063 us
256 KiB = 30.16244 us
1 MiB = 91.0302 us
4 MiB = 762.0369 us
16 MiB = 2.751856 ms
64 MiB = 10.33062 ms
