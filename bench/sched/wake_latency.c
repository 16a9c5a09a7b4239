/* The wake-up chain of a collection, without the collector (bench/sched/wake_latency.sh).
 *
 * Three threads hand a token around as a stop-the-world collection does: the mutator spins
 * MUTATOR_US microseconds (its run between two collections) on MUTATOR_CPU, then wakes the VM
 * thread (pinned to CPU 1) and waits; the VM thread wakes the GC worker (pinned to CPU 0) and
 * waits; the worker spins WORK_US (the collection's work), wakes the VM thread back and waits;
 * the VM thread wakes the mutator. Each hand-over goes through a futex. It prints the median,
 * 10th and 90th percentile of three latencies, from the wake call until the woken thread runs:
 * the VM thread's, the worker's ("start", the wait before a collection's parallel phase
 * begins to work) and the VM thread's again after the worker ("tail").
 *
 * With the mutator on CPU 0, the worker's CPU is busy until the collection starts; on CPU 1,
 * it was idle for the whole MUTATOR_US. The worker sleeps MUTATOR_US either way. Comparing
 * the four shows whether the latency follows how long the woken thread slept, how long its
 * CPU was idle, or both (on a virtual machine the answer is the hypervisor's).
 *
 * Usage: wake_latency ROUNDS MUTATOR_US MUTATOR_CPU WORK_US */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_uint to_vm, to_worker, to_mutator;
static atomic_ulong stamp_vm, stamp_worker, stamp_tail, stamp_mutator;
static unsigned long *vm_lat, *start_lat, *tail_lat;
static int rounds, work_us;

static unsigned long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000UL + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(1);
    }
}

static void spin_us(long us) {
    unsigned long end = now_ns() + us * 1000UL;
    while (now_ns() < end) {
    }
}

/* Wait until *word is no longer `seen`. */
static void wait_past(atomic_uint *word, unsigned seen) {
    while (atomic_load(word) == seen) {
        syscall(SYS_futex, word, FUTEX_WAIT, seen, NULL, NULL, 0);
    }
}

static void wake(atomic_uint *word, atomic_ulong *stamp) {
    atomic_store(stamp, now_ns());
    atomic_fetch_add(word, 1);
    syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void *worker(void *arg) {
    (void)arg;
    pin(0);
    for (unsigned i = 0; i < (unsigned)rounds; i++) {
        wait_past(&to_worker, i);
        start_lat[i] = now_ns() - atomic_load(&stamp_worker);
        spin_us(work_us);
        wake(&to_vm, &stamp_tail);
    }
    return NULL;
}

static void *vm_thread(void *arg) {
    (void)arg;
    pin(1);
    for (unsigned i = 0; i < (unsigned)rounds; i++) {
        wait_past(&to_vm, 2 * i);
        vm_lat[i] = now_ns() - atomic_load(&stamp_vm);
        wake(&to_worker, &stamp_worker);
        wait_past(&to_vm, 2 * i + 1);
        tail_lat[i] = now_ns() - atomic_load(&stamp_tail);
        wake(&to_mutator, &stamp_mutator);
    }
    return NULL;
}

static int by_value(const void *a, const void *b) {
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, unsigned long *lat) {
    qsort(lat, rounds, sizeof *lat, by_value);
    printf("  %s %6.1f [%5.1f, %5.1f]", name, lat[rounds / 2] / 1e3, lat[rounds / 10] / 1e3,
           lat[rounds * 9 / 10] / 1e3);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: wake_latency ROUNDS MUTATOR_US MUTATOR_CPU WORK_US\n");
        return 2;
    }
    rounds = atoi(argv[1]);
    long mutator_us = atol(argv[2]);
    int mutator_cpu = atoi(argv[3]);
    work_us = atoi(argv[4]);
    if (rounds < 10 || mutator_us < 0 || (mutator_cpu != 0 && mutator_cpu != 1) || work_us < 0) {
        fprintf(stderr, "ROUNDS must be at least 10, MUTATOR_CPU 0 or 1, the times >= 0\n");
        return 2;
    }
    vm_lat = calloc(rounds, sizeof *vm_lat);
    start_lat = calloc(rounds, sizeof *start_lat);
    tail_lat = calloc(rounds, sizeof *tail_lat);
    pthread_t w, v;
    pthread_create(&w, NULL, worker, NULL);
    pthread_create(&v, NULL, vm_thread, NULL);
    pin(mutator_cpu);
    for (unsigned i = 0; i < (unsigned)rounds; i++) {
        spin_us(mutator_us);
        unsigned seen = atomic_load(&to_mutator);
        wake(&to_vm, &stamp_vm);
        wait_past(&to_mutator, seen);
    }
    pthread_join(w, NULL);
    pthread_join(v, NULL);
    printf("mutator %6ld us on CPU %d, work %4d us, medians [p10, p90] in us:", mutator_us,
           mutator_cpu, work_us);
    report("vm", vm_lat);
    report("start", start_lat);
    report("tail", tail_lat);
    printf("\n");
    return 0;
}
