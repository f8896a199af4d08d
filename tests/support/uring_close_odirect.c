// Probe: an O_DIRECT read submitted to io_uring, then the ring fd closed at
// once (as glommio's Reactor drop does, with the read's buffer freed right
// after): does the data still land in the buffer after close() returned?
//
//   gcc -O1 -Wall -o /tmp/uring_close_odirect tests/support/uring_close_odirect.c
//   dd if=/dev/urandom of=/var/tmp/f bs=1M count=64 && sync   # not on tmpfs
//   /tmp/uring_close_odirect /var/tmp/f 64
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *path = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 50;
    size_t len = 1 << 20;
    int after = 0, before = 0, none = 0;
    for (int i = 0; i < n; i++) {
        int f = open(path, O_RDONLY | O_DIRECT);
        if (f < 0) { perror("open"); return 2; }
        struct io_uring_params p; memset(&p, 0, sizeof p);
        int fd = syscall(__NR_io_uring_setup, 8, &p);
        size_t sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
        size_t cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
        if (p.features & IORING_FEAT_SINGLE_MMAP) { if (cq_sz > sq_sz) sq_sz = cq_sz; }
        char *sq = mmap(0, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
        struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
        unsigned *tail = (unsigned *)(sq + p.sq_off.tail), *mask = (unsigned *)(sq + p.sq_off.ring_mask), *array = (unsigned *)(sq + p.sq_off.array);
        unsigned char *buf = aligned_alloc(4096, len);
        memset(buf, 0xAA, len);
        unsigned idx = *tail & *mask;
        memset(&sqes[idx], 0, sizeof sqes[idx]);
        sqes[idx].opcode = IORING_OP_READ; sqes[idx].fd = f;
        sqes[idx].addr = (uint64_t)(uintptr_t)buf; sqes[idx].len = len;
        sqes[idx].off = (uint64_t)(i % 64) * len;
        array[idx] = idx;
        __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
        if (syscall(__NR_io_uring_enter, fd, 1, 0, 0, NULL, 0) != 1) { perror("enter"); return 2; }
        munmap(sqes, p.sq_entries * sizeof *sqes); munmap(sq, sq_sz);
        int last_untouched_before = buf[len - 1] == 0xAA;
        close(fd);
        if (!last_untouched_before) { before++; }
        else {
            usleep(20000);
            if (buf[len - 1] != 0xAA) after++; else none++;
        }
        free(buf); close(f);
    }
    printf("%d O_DIRECT 1 MiB reads: %d finished before close(ring), %d wrote the buffer AFTER close(ring) returned, %d never wrote\n",
           n, before, after, none);
    return 0;
}
