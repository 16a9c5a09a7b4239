// Does a wake-up's latency on this machine depend on the woken vCPU's previous halt, as KVM's
// adaptive halt polling would make it? A futex ping-pong between two pinned threads: the
// sleeper (CPU 1) is woken after its CPU has been idle SHORT_US, either every round
// ("steady": every halt is short, so the host's per-vCPU polling window grows to cover it) or
// right after a wake-up that followed a halt of LONG_US ("primed": the long halt resets the
// window, so the short one that follows is not polled). Prints the median and p10/p90 of
// both, in microseconds. Usage: halt_poll [ROUNDS=300] [SHORT_US=50] [LONG_US=2000]
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

static _Atomic unsigned word;
static _Atomic long stamp;
static long *lat;
static int total;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) {
        perror("sched_setaffinity");
        exit(1);
    }
}

static void *sleeper(void *arg) {
    (void)arg;
    pin(1);
    for (unsigned i = 0; i < (unsigned)total; i++) {
        while (atomic_load(&word) == i)
            syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, i, NULL, NULL, 0);
        lat[i] = now_ns() - atomic_load(&stamp);
    }
    return NULL;
}

static void wake_after(long idle_us) {
    struct timespec d = {idle_us / 1000000, (idle_us % 1000000) * 1000};
    nanosleep(&d, NULL);
    atomic_store(&stamp, now_ns());
    atomic_fetch_add(&word, 1);
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, long *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    printf("%-7s %5d wake-ups: median %6.1f us [p10 %6.1f, p90 %6.1f]\n", what, n, v[n / 2] / 1e3,
           v[n / 10] / 1e3, v[n * 9 / 10] / 1e3);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    long short_us = argc > 2 ? atol(argv[2]) : 50, long_us = argc > 3 ? atol(argv[3]) : 2000;
    if (rounds < 10 || short_us <= 0 || long_us <= 0) {
        fprintf(stderr, "usage: halt_poll [ROUNDS>=10] [SHORT_US>0] [LONG_US>0]\n");
        return 2;
    }
    // Steady: rounds short wake-ups. Primed: rounds pairs (long, then short), the short measured.
    total = rounds * 3;
    lat = calloc(total, sizeof *lat);
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    pin(0);
    for (int i = 0; i < rounds; i++)
        wake_after(short_us);
    for (int i = 0; i < rounds; i++) {
        wake_after(long_us);
        wake_after(short_us);
    }
    pthread_join(t, NULL);
    long *steady = malloc(rounds * sizeof *steady), *primed = malloc(rounds * sizeof *primed);
    long *after_long = malloc(rounds * sizeof *after_long);
    for (int i = 0; i < rounds; i++) {
        steady[i] = lat[i];
        after_long[i] = lat[rounds + 2 * i];
        primed[i] = lat[rounds + 2 * i + 1];
    }
    printf("short halt %ld us, long halt %ld us\n", short_us, long_us);
    report("steady", steady, rounds);
    report("long", after_long, rounds);
    report("primed", primed, rounds);
    return 0;
}
