# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 01:00 UTC.
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
memory = 20.5136155021 GB/s
intra_node_bus = 1.0836706748 GB/s
kernel_overhead = 616.73055399 ns

[compute]
shared_core_efficiency = 0.9744037
waiting_rank_load = 0
in_step_collective_wait = 373.4919 us

[gemm fp32]
64x64x64 = 9.81638768529 us
64x64x256 = 36.43814 us
64x64x1024 = 129.112130435 us
64x64x2048 = 257.957818182 us
64x256x64 = 31.4562724014 us
64x256x256 = 113.629373333 us
64x256x1024 = 436.322833333 us
64x256x2048 = 1.11873957143 ms
64x1024x64 = 117.837180556 us
64x1024x256 = 402.68452381 us
64x1024x1024 = 1.5886577 ms
64x1024x2048 = 3.2692415 ms
64x2048x64 = 262.194410256 us
64x2048x256 = 812.2049 us
64x2048x1024 = 3.23814 ms
64x2048x2048 = 6.582808 ms
256x64x64 = 40.7561421053 us
256x64x256 = 127.108014286 us
256x64x1024 = 455.060352941 us
256x64x2048 = 865.1094 us
256x256x64 = 120.489987805 us
256x256x256 = 465.93525 us
256x256x1024 = 1.4596095 ms
256x256x2048 = 2.82994833333 ms
256x1024x64 = 413.375545455 us
256x1024x256 = 1.35225683333 ms
256x1024x1024 = 6.3573535 ms
256x1024x2048 = 10.327944 ms
256x2048x64 = 763.63625 us
256x2048x256 = 2.62090116667 ms
256x2048x1024 = 10.145613 ms
256x2048x2048 = 20.559624 ms
1024x64x64 = 124.467391304 us
1024x64x256 = 468.1726 us
1024x64x1024 = 1.5456878 ms
1024x64x2048 = 3.093693 ms
1024x256x64 = 395.988619048 us
1024x256x256 = 1.37217733333 ms
1024x256x1024 = 5.191278 ms
1024x256x2048 = 10.38571 ms
1024x1024x64 = 1.5092097 ms
1024x1024x256 = 5.217006 ms
1024x1024x1024 = 20.432326 ms
1024x1024x2048 = 41.244064 ms
1024x2048x64 = 3.0406145 ms
1024x2048x256 = 10.183049 ms
1024x2048x1024 = 43.491622 ms
1024x2048x2048 = 106.555822 ms
2048x64x64 = 256.449028571 us
2048x64x256 = 927.941 us
2048x64x1024 = 3.2539985 ms
2048x64x2048 = 6.4839065 ms
2048x256x64 = 833.52505 us
2048x256x256 = 2.79594433333 ms
2048x256x1024 = 10.436334 ms
2048x256x2048 = 21.813606 ms
2048x1024x64 = 3.222592 ms
2048x1024x256 = 10.529493 ms
2048x1024x1024 = 43.556948 ms
2048x1024x2048 = 83.07499 ms
2048x2048x64 = 6.263304 ms
2048x2048x256 = 25.350437 ms
2048x2048x1024 = 93.961324 ms
2048x2048x2048 = 192.085427 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 9.171304 us
4 KiB = 21.11705 us
16 KiB = 43.37263 us
64 KiB = 70.20432 us
256 KiB = 164.2507 us
1 MiB = 450.6019 us
4 MiB = 3.235658 ms
16 MiB = 20.28771 ms
64 MiB = 92.89104 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.141625 us
4 KiB = 8.348517 us
16 KiB = 20.83172 us
64 KiB = 33.24884 us
256 KiB = 76.88699 us
1 MiB = 230.7922 us
4 MiB = 901.7529 us
16 MiB = 6.162169 ms
64 MiB = 26.42305 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 7.288421 us
4 KiB = 11.88036 us
16 KiB = 25.06288 us
64 KiB = 43.1469 us
256 KiB = 93.48241 us
1 MiB = 263.2565 us
4 MiB = 3.085816 ms
16 MiB = 33.47824 ms
64 MiB = 128.394 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.204784 us
4 KiB = 6.117818 us
16 KiB = 19.79199 us
64 KiB = 25.88154 us
256 KiB = 53.02605 us
1 MiB = 168.2248 us
4 MiB = 1.158762 ms
16 MiB = 6.37501 ms
64 MiB = 27.46203 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 4.872407 us
4 KiB = 8.849054 us
16 KiB = 10.75976 us
64 KiB = 18.64887 us
256 KiB = 57.5655 us
1 MiB = 184.906 us
4 MiB = 1.438038 ms
16 MiB = 10.50381 ms
64 MiB = 42.40308 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 2.206224 us
4 KiB = 5.016852 us
16 KiB = 5.629624 us
64 KiB = 9.979369 us
256 KiB = 30.33685 us
1 MiB = 97.1942 us
4 MiB = 439.1066 us
16 MiB = 3.337388 ms
64 MiB = 15.2314 ms
