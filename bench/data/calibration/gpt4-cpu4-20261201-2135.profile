# Measured by `cleave profile --backend cpu` on vm, 2026-12-01 21:35 UTC.
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
memory = 21.8122717422 GB/s
intra_node_bus = 1.03987055038 GB/s
kernel_overhead = 356.859154447 ns

[compute]
shared_core_efficiency = 0.957301774674
waiting_rank_load = 0.0244028191722
in_step_collective_wait = 221.6506 us

[gemm fp32]
64x64x64 = 9.4063583815 us
64x64x256 = 34.5375394191 us
64x64x1024 = 121.599512821 us
64x64x2048 = 249.891029412 us
64x256x64 = 29.853971831 us
64x256x256 = 110.378465278 us
64x256x1024 = 422.8765 us
64x256x2048 = 849.9479 us
64x1024x64 = 106.481626667 us
64x1024x256 = 393.574809524 us
64x1024x1024 = 1.4692204 ms
64x1024x2048 = 2.929079 ms
64x2048x64 = 210.416897436 us
64x2048x256 = 746.435454545 us
64x2048x1024 = 2.8981975 ms
64x2048x2048 = 5.941732 ms
256x64x64 = 30.5691901408 us
256x64x256 = 115.615521127 us
256x64x1024 = 404.0795 us
256x64x2048 = 810.90095 us
256x256x64 = 99.7702470588 us
256x256x256 = 359.05872 us
256x256x1024 = 1.33567891667 ms
256x256x2048 = 2.67698116667 ms
256x1024x64 = 373.927431818 us
256x1024x256 = 1.30377408333 ms
256x1024x1024 = 5.085911 ms
256x1024x2048 = 10.076531 ms
256x2048x64 = 738.851045455 us
256x2048x256 = 2.603562 ms
256x2048x1024 = 10.079926 ms
256x2048x2048 = 20.128615 ms
1024x64x64 = 116.507036232 us
1024x64x256 = 436.787111111 us
1024x64x1024 = 1.4942685 ms
1024x64x2048 = 3.010675 ms
1024x256x64 = 384.528285714 us
1024x256x256 = 1.36585033333 ms
1024x256x1024 = 5.16615 ms
1024x256x2048 = 10.207405 ms
1024x1024x64 = 1.4682769 ms
1024x1024x256 = 5.071019 ms
1024x1024x1024 = 19.698266 ms
1024x1024x2048 = 39.389081 ms
1024x2048x64 = 2.909875 ms
1024x2048x256 = 10.064392 ms
1024x2048x1024 = 40.373793 ms
1024x2048x2048 = 79.227878 ms
2048x64x64 = 235.197864865 us
2048x64x256 = 888.671055556 us
2048x64x1024 = 3.1588775 ms
2048x64x2048 = 6.245903 ms
2048x256x64 = 774.102 us
2048x256x256 = 2.72016683333 ms
2048x256x1024 = 10.431708 ms
2048x256x2048 = 20.884346 ms
2048x1024x64 = 2.986404 ms
2048x1024x256 = 10.144462 ms
2048x1024x1024 = 40.463806 ms
2048x1024x2048 = 80.412608 ms
2048x2048x64 = 6.119816 ms
2048x2048x256 = 20.244788 ms
2048x2048x1024 = 79.886877 ms
2048x2048x2048 = 157.63553 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 9.410508 us
4 KiB = 20.96383 us
16 KiB = 44.028 us
64 KiB = 75.20726 us
256 KiB = 168.7886 us
1 MiB = 433.8354 us
4 MiB = 2.878615 ms
16 MiB = 17.39178 ms
64 MiB = 96.80368 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.548275 us
4 KiB = 9.075488 us
16 KiB = 21.4212 us
64 KiB = 34.07809 us
256 KiB = 79.50479 us
1 MiB = 220.1646 us
4 MiB = 791.6844 us
16 MiB = 5.352524 ms
64 MiB = 26.63807 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.644497 us
4 KiB = 9.558941 us
16 KiB = 23.38021 us
64 KiB = 41.77349 us
256 KiB = 96.63397 us
1 MiB = 297.3281 us
4 MiB = 3.333653 ms
16 MiB = 30.6521 ms
64 MiB = 117.781 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 3.743482 us
4 KiB = 5.903529 us
16 KiB = 19.64983 us
64 KiB = 25.39188 us
256 KiB = 53.75486 us
1 MiB = 169.474 us
4 MiB = 1.068468 ms
16 MiB = 6.523315 ms
64 MiB = 25.46088 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.029047 us
4 KiB = 10.64231 us
16 KiB = 10.64086 us
64 KiB = 18.3466 us
256 KiB = 51.17574 us
1 MiB = 210.9343 us
4 MiB = 940.6585 us
16 MiB = 9.88114 ms
64 MiB = 36.00282 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.180351 us
4 KiB = 4.305035 us
16 KiB = 4.99548 us
64 KiB = 8.52686 us
256 KiB = 21.52415 us
1 MiB = 91.97699 us
4 MiB = 425.995 us
16 MiB = 3.134063 ms
64 MiB = 12.52535 ms
