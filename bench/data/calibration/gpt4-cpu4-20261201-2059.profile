# Measured by `cleave profile --backend cpu` on vm, 2026-12-01 20:59 UTC.
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
memory = 18.4787619598 GB/s
intra_node_bus = 844.623950757 MB/s
kernel_overhead = 420.825594367 ns

[compute]
shared_core_efficiency = 1.02076296968
waiting_rank_load = 0
in_step_collective_wait = 352.7154 us

[gemm fp32]
64x64x64 = 10.3043465473 us
64x64x256 = 37.4315141844 us
64x64x1024 = 130.729210526 us
64x64x2048 = 268.232333333 us
64x256x64 = 32.1100659134 us
64x256x256 = 114.586614583 us
64x256x1024 = 441.503789474 us
64x256x2048 = 884.586 us
64x1024x64 = 111.379006623 us
64x1024x256 = 389.696 us
64x1024x1024 = 1.47435168182 ms
64x1024x2048 = 2.9370356 ms
64x2048x64 = 219.508474359 us
64x2048x256 = 761.174681818 us
64x2048x1024 = 2.9226292 ms
64x2048x2048 = 5.941311 ms
256x64x64 = 32.1396679537 us
256x64x256 = 132.359237762 us
256x64x1024 = 431.934871795 us
256x64x2048 = 834.5936 us
256x256x64 = 109.509017857 us
256x256x256 = 369.28725641 us
256x256x1024 = 1.37460795833 ms
256x256x2048 = 2.73711041667 ms
256x1024x64 = 386.574613636 us
256x1024x256 = 1.33525325 ms
256x1024x1024 = 5.20144233333 ms
256x1024x2048 = 10.647468 ms
256x2048x64 = 832.662136364 us
256x2048x256 = 2.69955133333 ms
256x2048x1024 = 11.795693 ms
256x2048x2048 = 25.888466 ms
1024x64x64 = 154.727646226 us
1024x64x256 = 518.868484375 us
1024x64x1024 = 1.7314519375 ms
1024x64x2048 = 3.6800538 ms
1024x256x64 = 434.987394737 us
1024x256x256 = 1.51831513636 ms
1024x256x1024 = 5.68231666667 ms
1024x256x2048 = 10.640578 ms
1024x1024x64 = 1.52049491667 ms
1024x1024x256 = 5.57470666667 ms
1024x1024x1024 = 22.700684 ms
1024x1024x2048 = 44.817731 ms
1024x2048x64 = 3.3123978 ms
1024x2048x256 = 10.519799 ms
1024x2048x1024 = 45.284888 ms
1024x2048x2048 = 93.024322 ms
2048x64x64 = 251.630823077 us
2048x64x256 = 927.726277778 us
2048x64x1024 = 3.4098626 ms
2048x64x2048 = 6.6189045 ms
2048x256x64 = 804.45135 us
2048x256x256 = 2.79922766667 ms
2048x256x1024 = 10.901415 ms
2048x256x2048 = 23.306904 ms
2048x1024x64 = 3.1512696 ms
2048x1024x256 = 10.904269 ms
2048x1024x1024 = 44.35227 ms
2048x1024x2048 = 84.931146 ms
2048x2048x64 = 6.7236125 ms
2048x2048x256 = 20.917446 ms
2048x2048x1024 = 94.526703 ms
2048x2048x2048 = 174.133815 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 13.22134 us
4 KiB = 38.19859 us
16 KiB = 77.2486 us
64 KiB = 204.4349 us
256 KiB = 598.6091 us
1 MiB = 2.1554 ms
4 MiB = 5.779604 ms
16 MiB = 17.99064 ms
64 MiB = 119.1812 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 7.022091 us
4 KiB = 10.34498 us
16 KiB = 31.50151 us
64 KiB = 50.29149 us
256 KiB = 134.4092 us
1 MiB = 465.6379 us
4 MiB = 1.82189 ms
16 MiB = 7.272513 ms
64 MiB = 24.16027 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 7.295973 us
4 KiB = 10.65447 us
16 KiB = 29.01399 us
64 KiB = 52.80474 us
256 KiB = 161.1196 us
1 MiB = 496.1844 us
4 MiB = 4.793814 ms
16 MiB = 37.64968 ms
64 MiB = 129.7543 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 5.369702 us
4 KiB = 9.084257 us
16 KiB = 25.77523 us
64 KiB = 34.04063 us
256 KiB = 61.88634 us
1 MiB = 193.9042 us
4 MiB = 1.203737 ms
16 MiB = 7.576909 ms
64 MiB = 28.32467 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.705441 us
4 KiB = 10.03744 us
16 KiB = 13.47481 us
64 KiB = 24.01371 us
256 KiB = 78.40011 us
1 MiB = 1.221064 ms
4 MiB = 3.657326 ms
16 MiB = 14.63193 ms
64 MiB = 51.4933 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.879122 us
4 KiB = 6.069974 us
16 KiB = 6.589252 us
64 KiB = 10.33643 us
256 KiB = 27.98986 us
1 MiB = 96.35066 us
4 MiB = 437.7623 us
16 MiB = 3.960179 ms
64 MiB = 15.28967 ms
