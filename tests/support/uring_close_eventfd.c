// Probe: does an io_uring READ of an eventfd, armed before the ring fd is
// closed, still copy into the user buffer when the eventfd is written
// after the close? glommio keeps such a read (8 bytes, into its reactor's
// heap memory) armed in its latency ring, and a dropped executor frees
// that memory right after closing the ring.
//
//   gcc -O1 -Wall -pthread -o /tmp/uring_close_eventfd tests/support/uring_close_eventfd.c
//   /tmp/uring_close_eventfd 500 1     # 500 trials per mode, blocking eventfd as glommio's
#define _GNU_SOURCE
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

static int efd;
static volatile int stop_writer;
static volatile int closed;
static int writer_waits_for_close;

static void *writer(void *arg) {
    (void)arg;
    uint64_t one = 1;
    if (writer_waits_for_close) while (!closed) {}
    while (!stop_writer) {
        if (write(efd, &one, 8) != 8) {}
        usleep(10);
    }
    return NULL;
}

static int trial(int mode) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = syscall(__NR_io_uring_setup, 8, &p);
    if (fd < 0) { perror("io_uring_setup"); exit(2); }
    size_t sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP) { if (cq_sz > sq_sz) sq_sz = cq_sz; cq_sz = sq_sz; }
    char *sq = mmap(0, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || sqes == MAP_FAILED) { perror("mmap"); exit(2); }
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned *mask = (unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *array = (unsigned *)(sq + p.sq_off.array);

    uint64_t *buf = malloc(64);
    for (int i = 0; i < 8; i++) buf[i] = 0xAAAAAAAAAAAAAAAAull;
    unsigned idx = *tail & *mask;
    memset(&sqes[idx], 0, sizeof sqes[idx]);
    sqes[idx].opcode = IORING_OP_READ;
    sqes[idx].fd = efd;
    sqes[idx].addr = (uint64_t)(uintptr_t)buf;
    sqes[idx].len = 8;
    sqes[idx].user_data = 42;
    array[idx] = idx;
    __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, fd, 1, 0, 0, NULL, 0) != 1) { perror("io_uring_enter"); exit(2); }

    pthread_t t;
    closed = 0;
    writer_waits_for_close = mode == 1;
    if (mode >= 1) { stop_writer = 0; pthread_create(&t, NULL, writer, NULL); }
    if (mode == 3) { uint64_t one = 1; if (write(efd, &one, 8) != 8) {} for (int i = 0; i < 10; i++) { getppid(); usleep(100); } }
    munmap(sqes, p.sq_entries * sizeof *sqes);
    munmap(sq, sq_sz);
    int before = buf[0] != 0xAAAAAAAAAAAAAAAAull;
    close(fd); // the ring is gone from userspace's point of view
    closed = 1;
    if (mode == 0) { uint64_t one = 1; if (write(efd, &one, 8) != 8) {} }
    // return to userspace a few times so pending task_work runs
    for (int i = 0; i < 100; i++) { getppid(); usleep(100); }
    if (mode >= 1) { stop_writer = 1; pthread_join(t, NULL); }
    if (mode == 3) before = 0; // control: count the completion made while the ring was open
    int hit = !before && buf[0] != 0xAAAAAAAAAAAAAAAAull;
    free(buf);
    // drain the eventfd so the next trial's read has to wait again
    int fl = fcntl(efd, F_GETFL);
    fcntl(efd, F_SETFL, fl | O_NONBLOCK);
    uint64_t v; while (read(efd, &v, 8) == 8) {}
    fcntl(efd, F_SETFL, fl);
    return hit;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    // glommio's eventfd is blocking: eventfd(0, O_CLOEXEC)
    int blocking = argc > 2 && atoi(argv[2]);
    efd = eventfd(0, blocking ? EFD_CLOEXEC : (EFD_NONBLOCK | EFD_CLOEXEC));
    printf("eventfd %s\n", blocking ? "blocking (as glommio's)" : "non-blocking");
    static const char *names[] = {"write after close, same thread", "writer thread starts after close returned", "writer thread racing munmap+close (buffer unchanged just before close)", "CONTROL: write while the ring is open (expect all)"};
    for (int mode = 0; mode < 4; mode++) {
        int hits = 0;
        for (int i = 0; i < n; i++) hits += trial(mode);
        printf("mode %d (%s): %d of %d reads wrote the buffer %s\n", mode, names[mode], hits, n,
               mode == 3 ? "(ring open)" : "after close(ring) returned");
    }
    return 0;
}
