"""How many random-walk proposals per second, against a plain C loop doing the same walk?

The peer is the walk written as a plain C program (same proposal and
acceptance rule, xorshift-free splitmix64 draws, modulo-free bounded integers),
compiled with -O3 on this machine and run in the same session. Reported for
d = 2 and d = 16, one thread (one block) and two threads (blocks of 2^15).
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits

from _common import markdown_table, write_results

C_LOOP = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static uint64_t st = 12345;
static inline uint64_t nxt(void){uint64_t z=(st+=0x9E3779B97F4A7C15ULL);
 z=(z^(z>>30))*0xBF58476D1CE4E5B9ULL; z=(z^(z>>27))*0x94D049BB133111EBULL; return z^(z>>31);}
int main(int argc, char **argv){
  long n=atol(argv[1]), d=atol(argv[2]), k=atol(argv[3]), steps=atol(argv[4]);
  double *X=malloc(sizeof(double)*n*d), *C=malloc(sizeof(double)*k*d), *cost=malloc(sizeof(double)*n);
  int *lab=malloc(sizeof(int)*n);
  for(long i=0;i<n*d;i++) X[i]=(double)(nxt()>>11)*0x1.0p-53;
  for(long i=0;i<k*d;i++) C[i]=X[i];
  double total=0;
  for(long i=0;i<n;i++){ lab[i]=(int)(i%k); double s=0; for(long f=0;f<d;f++){double t=X[i*d+f]-C[lab[i]*d+f]; s+=t*t;} cost[i]=s; total+=s;}
  double budget=total*1.01; long acc=0;
  struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a);
  for(long s=0;s<steps;s++){
    uint64_t r=nxt(); long i=(long)(((r>>32)*(uint64_t)n)>>32); int j=(int)(((r&0xffffffffULL)*(uint64_t)(k-1))>>32);
    if(j>=lab[i]) j++;
    double c=0; for(long f=0;f<d;f++){double t=X[i*d+f]-C[j*d+f]; c+=t*t;}
    double nt=total+(c-cost[i]); if(nt<=budget){lab[i]=j; cost[i]=c; total=nt; acc++;}
  }
  clock_gettime(CLOCK_MONOTONIC,&b);
  printf("%.6f %ld\n",(b.tv_sec-a.tv_sec)+1e-9*(b.tv_nsec-a.tv_nsec),acc);
  return 0;
}
"""


def c_loop(exe, n, d, k, steps):
    out = subprocess.run([exe, str(n), str(d), str(k), str(steps)], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0])


def nearest(X, C, rows=1 << 16):
    """Nearest-center labels (numpy, blocks of rows): the walk's valid start."""
    labels = np.empty(X.shape[0], dtype=np.int32)
    csq = (C * C).sum(axis=1)
    for lo in range(0, X.shape[0], rows):
        labels[lo:lo + rows] = np.argmin(csq - 2.0 * X[lo:lo + rows] @ C.T, axis=1)
    return labels


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=100_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from gmmfast.cluster import inertia, sample_assignment

    tmp = tempfile.mkdtemp()
    src, exe = os.path.join(tmp, "walk.c"), os.path.join(tmp, "walk")
    with open(src, "w") as fh:
        fh.write(C_LOOP)
    subprocess.run([os.environ.get("CC", "cc"), "-O3", "-o", exe, src], check=True)

    rows = []
    for d in (2, 16):
        for n, threads in ((100_000, 1), (1_000_000, 1), (1_000_000, 2)):
            k = 200
            rng = np.random.default_rng(0)
            X = rng.random((n, d))
            sw = np.ones(n)
            C = X[:k].copy()
            labels, F = nearest(X, C), inertia(X, C)
            ours, peer = [], []
            for _ in range(args.repeats):
                with threadpool_limits(threads, user_api="openmp"):
                    t = time.perf_counter()
                    sample_assignment(X, C, labels, F * 1.01, args.steps, 1, sample_weight=sw)
                    ours.append(time.perf_counter() - t)
                peer.append(c_loop(exe, n, d, k, args.steps))
            o, p = np.median(ours), np.median(peer)
            rows.append([d, n, threads, f"{args.steps / o / 1e6:.0f}", f"{args.steps / p / 1e6:.0f}",
                         f"**{p / o:.2f}**"])
    body = ("Proposals per second (millions), k = 200, budget = 1.01 x F (acceptance is rare, as "
            "in the paper's walk), median of "
            f"{args.repeats} alternating repeats of {args.steps:,} proposals. Our time is a call "
            "of the public `sample_assignment`: it includes checking X and the starting labels "
            "and the exact recomputation of the sampled bound's value (a few passes over X); "
            "the C loop's is the bare loop (one thread). A ratio above 1 means gmmfast is faster than the plain C "
            "loop. At n = 100,000 both walk one chain over all points: that row compares the "
            "code. At n = 1,000,000 ours walks blocks of 2^15 points (each with its share of "
            "the slack; blocks are what makes it thread-count independent), whose working set "
            "stays in cache, while the plain loop draws from all n points and waits on memory: "
            "those rows measure the block design, not the same computation.\n\n"
            + markdown_table(["d", "n", "threads", "gmmfast M/s", "plain C loop M/s (1 thread)",
                              "gmmfast / C"], rows))
    write_results("walk_throughput", "Random-walk proposals per second", body)


if __name__ == "__main__":
    main()
