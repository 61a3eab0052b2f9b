// clockshim: an LD_PRELOAD library that shifts and scales the wall clock
// (CLOCK_REALTIME, gettimeofday, time) of the process it is loaded in,
// under the control of a file the chaos suite writes while it runs. The
// monotonic clocks are left alone, as a wall-clock step (an operator, a
// bad NTP source) leaves them.
//
// libfaketime 0.9.10 cannot be used on redis-server 7: its initialisation
// and jemalloc's call each other ("Unexpected recursive calls to
// clock_gettime() without proper initialization") and the server exits
// at start. This shim allocates nothing and calls no libc function that
// may: the real clock is read with the raw system call, the control file
// mapped once with open and mmap.
//
// The control file holds four little-endian int64 (a seqlock, then the
// parameters): seq (odd while the suite writes), offset_ns, base_ns and
// rate_ppm. The fake wall clock is
//
//	real + offset_ns + (real - base_ns) * rate_ppm / 1e6
//
// so a jump changes offset_ns and a fast or slow clock sets rate_ppm
// from base_ns on.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct ctl {
	volatile int64_t seq, offset_ns, base_ns, rate_ppm;
};

static struct ctl *ctl;
static volatile int tried;

static void shim_init(void) {
	if (tried)
		return;
	tried = 1;
	const char *p = getenv("REDISYNC_CLOCK_FILE");
	if (!p)
		return;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	void *m = mmap(0, sizeof(struct ctl), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m != MAP_FAILED)
		ctl = m;
}

static int64_t shift(int64_t real) {
	shim_init();
	if (!ctl)
		return real;
	for (;;) {
		int64_t s = __atomic_load_n(&ctl->seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		int64_t off = ctl->offset_ns, base = ctl->base_ns, rate = ctl->rate_ppm;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&ctl->seq, __ATOMIC_RELAXED) != s)
			continue;
		int64_t fake = real + off;
		if (rate != 0 && base != 0)
			fake += (int64_t)((__int128)(real - base) * rate / 1000000);
		return fake;
	}
}

static int raw_realtime(clockid_t clk, struct timespec *ts) {
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
	int r = raw_realtime(clk, ts);
	if (r != 0 || (clk != CLOCK_REALTIME && clk != CLOCK_REALTIME_COARSE))
		return r;
	int64_t ns = shift((int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec);
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
	(void)tz;
	struct timespec ts;
	int r = clock_gettime(CLOCK_REALTIME, &ts);
	if (r == 0 && tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
