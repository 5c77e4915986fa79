# Measured by `cleave profile --backend cpu` on vm, 2026-12-02 09:55 UTC.
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
memory = 16.6809239763 GB/s
intra_node_bus = 837.926163192 MB/s
kernel_overhead = 410.651828655 ns

[compute]
shared_core_efficiency = 0.9816286
waiting_rank_load = 0.0185571807094
in_step_collective_wait = 37.4617 us
collective_window_hidden = 0

[gemm fp32]
64x64x64 = 13.040181311 us
64x64x256 = 43.9206966292 us
64x64x1024 = 164.109 us
64x64x2048 = 322.683148148 us
64x256x64 = 41.5778274336 us
64x256x256 = 150.822706897 us
64x256x1024 = 484.018352941 us
64x256x2048 = 950.509 us
64x1024x64 = 118.5335 us
64x1024x256 = 405.419975 us
64x1024x1024 = 1.73131525 ms
64x1024x2048 = 3.190314 ms
64x2048x64 = 237.855454545 us
64x2048x256 = 800.451090909 us
64x2048x1024 = 3.041684 ms
64x2048x2048 = 5.989599 ms
256x64x64 = 35.2632621145 us
256x64x256 = 126.036984848 us
256x64x1024 = 441.0899 us
256x64x2048 = 990.3586875 us
256x256x64 = 129.832857143 us
256x256x256 = 442.197117647 us
256x256x1024 = 1.4957704 ms
256x256x2048 = 3.35098725 ms
256x1024x64 = 487.169944444 us
256x1024x256 = 1.61396916667 ms
256x1024x1024 = 5.496218 ms
256x1024x2048 = 11.057472 ms
256x2048x64 = 796.9784 us
256x2048x256 = 2.72484916667 ms
256x2048x1024 = 11.137941 ms
256x2048x2048 = 24.106095 ms
1024x64x64 = 132.214451923 us
1024x64x256 = 493.693882353 us
1024x64x1024 = 1.6727055 ms
1024x64x2048 = 3.50205375 ms
1024x256x64 = 411.683571429 us
1024x256x256 = 1.4231417 ms
1024x256x1024 = 6.401795 ms
1024x256x2048 = 12.686185 ms
1024x1024x64 = 1.93866125 ms
1024x1024x256 = 6.533756 ms
1024x1024x1024 = 21.357229 ms
1024x1024x2048 = 48.694734 ms
1024x2048x64 = 4.06610025 ms
1024x2048x256 = 11.954741 ms
1024x2048x1024 = 48.325066 ms
1024x2048x2048 = 89.384171 ms
2048x64x64 = 328.814708333 us
2048x64x256 = 1.105094375 ms
2048x64x1024 = 4.733427 ms
2048x64x2048 = 8.926502 ms
2048x256x64 = 916.960333333 us
2048x256x256 = 3.5375265 ms
2048x256x1024 = 12.541681 ms
2048x256x2048 = 26.921488 ms
2048x1024x64 = 3.922475 ms
2048x1024x256 = 12.612686 ms
2048x1024x1024 = 52.626553 ms
2048x1024x2048 = 96.399119 ms
2048x2048x64 = 8.18269 ms
2048x2048x256 = 27.621235 ms
2048x2048x1024 = 105.806405 ms
2048x2048x2048 = 194.014216 ms

[collective all-reduce ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 13.026495 us
4 KiB = 28.14367 us
16 KiB = 33.60285 us
64 KiB = 86.272535 us
256 KiB = 194.29005 us
1 MiB = 496.3538 us
4 MiB = 3.5505185 ms
16 MiB = 20.55819 ms
64 MiB = 120.13385 ms

[collective all-gather ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.3190875 us
4 KiB = 9.264296 us
16 KiB = 28.96515 us
64 KiB = 39.075585 us
256 KiB = 84.971625 us
1 MiB = 241.1625 us
4 MiB = 1.0812015 ms
16 MiB = 5.5046295 ms
64 MiB = 26.380925 ms

[collective reduce-scatter ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 10.0814065 us
4 KiB = 18.275945 us
16 KiB = 28.84215 us
64 KiB = 51.37086 us
256 KiB = 123.27955 us
1 MiB = 422.66885 us
4 MiB = 3.1961775 ms
16 MiB = 34.316165 ms
64 MiB = 134.33565 ms

[collective all-to-all ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 6.687165 us
4 KiB = 10.54929 us
16 KiB = 28.865625 us
64 KiB = 38.137545 us
256 KiB = 69.91463 us
1 MiB = 207.3568 us
4 MiB = 1.554279 ms
16 MiB = 7.5237275 ms
64 MiB = 29.65729 ms

[collective broadcast ranks=4 ranks_per_node=4 concurrent=1]
1 KiB = 7.07698 us
4 KiB = 11.0487 us
16 KiB = 13.06339 us
64 KiB = 21.05058 us
256 KiB = 57.097125 us
1 MiB = 215.2745 us
4 MiB = 947.8225 us
16 MiB = 7.5541235 ms
64 MiB = 31.153325 ms

[collective send-recv ranks=2 ranks_per_node=2 concurrent=1]
1 KiB = 3.3860805 us
4 KiB = 5.533113 us
16 KiB = 7.0031585 us
64 KiB = 23.260435 us
256 KiB = 165.57005 us
1 MiB = 452.7277 us
4 MiB = 1.3054405 ms
16 MiB = 4.2792435 ms
64 MiB = 16.86253 ms
