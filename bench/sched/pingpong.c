/* Futex ping-pong for wake-up placement traces (bench/sched/wake_placement.sh).
 *
 * The waker spins on its CPU for BUSY_US microseconds, then wakes the sleeper through a futex
 * and keeps spinning: at every wake-up the waker's CPU is busy. The sleeper, woken, goes back
 * to sleep at once, so its previous CPU is idle when it is woken next. Where the kernel puts
 * the sleeper shows its wake-up placement: its previous (idle) CPU, another idle one, or the
 * waker's busy CPU.
 *
 * Modes: busy (above), handoff (the waker spins BUSY_US, wakes the sleeper and waits; the
 * sleeper spins BUSY_US and wakes it back) and light (the waker sleeps BUSY_US, spins SPIN_US,
 * default 20, and wakes the sleeper; its CPU is mostly idle). In light mode the sleeper spins
 * WAKEE_US (default 0) after each wake-up before it waits again, so that the wakee's own
 * utilization can be varied apart from the waker's, and SLEEPERS (default 1, at most 8)
 * sleepers wait on the same futex and are woken together by one wake-up call, as a VM thread
 * wakes a pool of GC workers.
 *
 * Usage: pingpong ROUNDS BUSY_US [busy|handoff|light] [SPIN_US] [WAKEE_US] [SLEEPERS] */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int word;
static atomic_int back;
static atomic_int done;
static int handoff;
static int light;
static double busy;
static double light_spin = 20;
static double wakee_spin;
static int sleepers = 1;

static long futex(atomic_int *addr, int op, int val) {
    return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void spin_us(double us) {
    double start = now_us();
    while (now_us() - start < us)
        ;
}

static void *sleeper(void *arg) {
    (void)arg;
    int seen = 0;
    while (!atomic_load(&done)) {
        while (atomic_load(&word) == seen && !atomic_load(&done))
            futex(&word, FUTEX_WAIT_PRIVATE, seen);
        seen = atomic_load(&word);
        if (light && wakee_spin > 0 && !atomic_load(&done))
            spin_us(wakee_spin);
        if (handoff && !atomic_load(&done)) {
            spin_us(busy);
            atomic_store(&back, seen);
            futex(&back, FUTEX_WAKE_PRIVATE, 1);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 7) {
        fprintf(stderr,
                "usage: pingpong ROUNDS BUSY_US [busy|handoff|light] [SPIN_US] [WAKEE_US] "
                "[SLEEPERS]\n");
        return 2;
    }
    int rounds = atoi(argv[1]);
    busy = atof(argv[2]);
    if (rounds < 1 || busy <= 0) {
        fprintf(stderr, "pingpong: ROUNDS must be at least 1 and BUSY_US more than 0\n");
        return 2;
    }
    if (argc >= 4) {
        if (strcmp(argv[3], "handoff") == 0) {
            handoff = 1;
        } else if (strcmp(argv[3], "light") == 0) {
            light = 1;
        } else if (strcmp(argv[3], "busy") != 0) {
            fprintf(stderr, "pingpong: MODE must be busy, handoff or light, not '%s'\n",
                    argv[3]);
            return 2;
        }
    }
    if (argc >= 5)
        light_spin = atof(argv[4]);
    if (argc >= 6)
        wakee_spin = atof(argv[5]);
    if (argc >= 7)
        sleepers = atoi(argv[6]);
    if (light_spin <= 0 || wakee_spin < 0) {
        fprintf(stderr, "pingpong: SPIN_US must be more than 0 and WAKEE_US at least 0\n");
        return 2;
    }
    if (sleepers < 1 || sleepers > 8 || (sleepers > 1 && !light)) {
        fprintf(stderr, "pingpong: SLEEPERS must be 1 to 8, more than 1 only in light mode\n");
        return 2;
    }
    pthread_t t[8];
    for (int s = 0; s < sleepers; s++)
        pthread_create(&t[s], NULL, sleeper, NULL);
    double start = now_us();
    for (int i = 1; i <= rounds; i++) {
        if (handoff) {
            spin_us(busy);
        } else if (light) {
            struct timespec pause = {(time_t)(busy / 1e6), (long)((busy - (long)(busy / 1e6) * 1e6) * 1e3)};
            nanosleep(&pause, NULL);
            spin_us(light_spin);
        } else {
            while (now_us() - start < busy * i)
                ;
        }
        atomic_store(&word, i);
        futex(&word, FUTEX_WAKE_PRIVATE, sleepers);
        if (handoff) {
            while (atomic_load(&back) != i)
                futex(&back, FUTEX_WAIT_PRIVATE, atomic_load(&back));
        }
    }
    /* Keep the CPU busy a little longer, so the last wake-up also finds it busy. */
    double end = now_us();
    while (now_us() - end < busy)
        ;
    atomic_store(&done, 1);
    atomic_fetch_add(&word, 1);
    futex(&word, FUTEX_WAKE_PRIVATE, sleepers);
    for (int s = 0; s < sleepers; s++)
        pthread_join(t[s], NULL);
    return 0;
}
