/* A guard-page malloc for hunting out-of-bounds writes in the simulator (not built by make).
 *
 * Every allocation gets its own pages with an inaccessible page right after the block (or, with
 * GUARD_UNDER=1, right before it), so a numba kernel, an intrinsic or a C library that writes
 * past a block faults at that write, with faulthandler's Python stack, instead of corrupting the
 * heap for glibc to abort on much later. GUARD_KEEP=1 also keeps the last QUARANTINE freed blocks
 * inaccessible, so a write after free faults too. Blocks are 16-byte aligned, so an overrun of up
 * to 15 bytes past an odd size goes unseen.
 *
 *   gcc -O2 -shared -fPIC -o /tmp/guard.so scripts/guard_malloc.c
 *   echo 20000000 > /proc/sys/vm/max_map_count     # two mappings per live block (root)
 *   LD_PRELOAD=/tmp/guard.so .venv/bin/python -X faulthandler -m pytest -p no:xdist ...
 *
 * Costs: a syscall or three per malloc and about 4 KiB of RAM per live block, so run a few test
 * files per process (the whole quick tier in one process outgrows 16 GiB). MPICH's MPI_Init
 * faults under it (leave out tests/test_comm.py). docs/reliability.md says what it has found. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL
#define MAGIC 0x5AFEC0DE12345678ULL
#define QUARANTINE 300000

struct header { uint64_t magic, n, base, len; };

static int flag(const char *name, int *cached) {
    if (*cached < 0) { const char *e = getenv(name); *cached = e && *e == '1'; }
    return *cached;
}
static int under_ = -1, keep_ = -1;
static uint64_t q_base[QUARANTINE], q_len[QUARANTINE];
static size_t q_next;
static char q_lock;

static void die(const char *m) { (void)!write(2, m, strlen(m)); abort(); }

static void *alloc(size_t n, size_t align) {
    if (align < 16) align = 16;
    if (n == 0) n = 1;
    size_t size = (n + align - 1) & ~(align - 1);
    size_t room = (sizeof(struct header) + align - 1) & ~(align - 1);
    size_t pages = (size + room + (align > PAGE ? align : 0) + PAGE - 1) / PAGE;
    size_t len = (pages + 1) * PAGE;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) { errno = ENOMEM; return NULL; }
    char *p;
    if (flag("GUARD_UNDER", &under_)) {
        mprotect(base, PAGE, PROT_NONE);
        p = base + PAGE + room;
        if ((uintptr_t)p % align) p += align - (uintptr_t)p % align;
    } else {
        char *guard = base + pages * PAGE;
        mprotect(guard, PAGE, PROT_NONE);
        p = guard - size;
        p -= (uintptr_t)p % align;
    }
    struct header *h = (struct header *)p - 1;
    h->magic = MAGIC; h->n = n; h->base = (uint64_t)base; h->len = len;
    return p;
}

void free(void *p) {
    if (!p) return;
    struct header *h = (struct header *)p - 1;
    if (h->magic != MAGIC) die("guard_malloc: free of a block it did not allocate, or corrupted\n");
    h->magic = 0;
    uint64_t base = h->base, len = h->len;
    if (!flag("GUARD_KEEP", &keep_)) { munmap((void *)base, len); return; }
    madvise((void *)base, len, MADV_DONTNEED);
    mprotect((void *)base, len, PROT_NONE);
    while (__atomic_test_and_set(&q_lock, __ATOMIC_ACQUIRE)) {}
    uint64_t old_base = q_base[q_next], old_len = q_len[q_next];
    q_base[q_next] = base; q_len[q_next] = len; q_next = (q_next + 1) % QUARANTINE;
    __atomic_clear(&q_lock, __ATOMIC_RELEASE);
    if (old_base) munmap((void *)old_base, old_len);
}

void *malloc(size_t n) { return alloc(n, 16); }
void *calloc(size_t a, size_t b) { return alloc(a * b, 16); }   /* fresh pages are zero */
void cfree(void *p) { free(p); }
void *realloc(void *p, size_t n) {
    if (!p) return malloc(n);
    struct header *h = (struct header *)p - 1;
    if (h->magic != MAGIC) die("guard_malloc: realloc of a block it did not allocate\n");
    void *q = malloc(n);
    if (!q) return NULL;
    memcpy(q, p, h->n < n ? h->n : n);
    free(p);
    return q;
}
void *reallocarray(void *p, size_t a, size_t b) { return realloc(p, a * b); }
void *memalign(size_t align, size_t n) { return alloc(n, align); }
void *aligned_alloc(size_t align, size_t n) { return alloc(n, align); }
int posix_memalign(void **out, size_t align, size_t n) {
    void *p = alloc(n, align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void *valloc(size_t n) { return alloc(n, PAGE); }
void *pvalloc(size_t n) { return alloc((n + PAGE - 1) & ~(PAGE - 1), PAGE); }
size_t malloc_usable_size(void *p) { return p ? ((struct header *)p - 1)->n : 0; }
