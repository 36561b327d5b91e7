/*
 * Write-protect dirty tracking: a second thread writes, the main thread
 * plays the event loop (poll + wp_track_handle).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "unit-util.h"
#include "wp-track.h"

#define PAGES	16

static uint8_t *region;
static size_t page_size;

struct writer {
	const int *pages;
	int npages;
	atomic_bool done;
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;

	for (int i = 0; i < w->npages; i++) {
		/* Several writes per page: only the first faults. */
		region[w->pages[i] * page_size + 7] = (uint8_t)i;
		region[w->pages[i] * page_size + 100] = (uint8_t)i;
	}
	w->done = true;
	return NULL;
}

/* Run the writer to its end, handling faults as the loop would. */
static int
write_pages(struct wp_track *wp, const int *pages, int n, int *firsts)
{
	struct writer w = { pages, n, false };
	pthread_t t;
	int handled = 0;

	*firsts = 0;
	pthread_create(&t, NULL, writer_main, &w);
	while (!w.done) {
		struct pollfd pfd = { wp_track_fd(wp), POLLIN, 0 };
		bool first;
		int r;

		if (poll(&pfd, 1, 10) <= 0)
			continue;
		r = wp_track_handle(wp, &first);
		if (r < 0)
			return r;
		handled += r;
		*firsts += first;
	}
	pthread_join(t, NULL);
	return handled;
}

static bool
bitmap_is(const uint64_t *bitmap, const int *pages, int n)
{
	uint64_t want = 0;

	for (int i = 0; i < n; i++)
		want |= 1ull << pages[i];
	return bitmap[0] == want;
}

int
main(void)
{
	static const int some[] = { 1, 5, 9, 15 };
	static const int again[] = { 5 };
	struct wp_track *wp, *quiet;
	uint64_t bitmap[1];
	uint8_t *other;
	struct pollfd pfd;
	int r, firsts;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	region = mmap(NULL, PAGES * page_size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	other = mmap(NULL, PAGES * page_size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED || other == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));

	tap_ok(wp_track_new(region + 1, page_size, &wp) == -EINVAL,
	    "a misaligned region is refused");
	r = wp_track_new(region, PAGES * page_size, &wp);
	if (r == -EPERM || r == -ENOSYS || r == -EOPNOTSUPP)
		tap_skip_all("userfaultfd write protection unavailable here "
		    "(%s): the display falls back to polling", strerror(-r));
	tap_ok(r == 0, "tracker on %d pages", PAGES);
	if (r < 0)
		return tap_done();
	tap_ok(wp_track_pages(wp) == PAGES, "it counts its pages");
	tap_ok((fcntl(wp_track_fd(wp), F_GETFD) & FD_CLOEXEC) &&
	    (fcntl(wp_track_fd(wp), F_GETFL) & O_NONBLOCK),
	    "its fd is close-on-exec and non-blocking");
	tap_ok(wp_track_arm(wp) == 0, "armed");

	r = write_pages(wp, some, 4, &firsts);
	tap_ok(r == 4, "one fault per written page (%d)", r);
	tap_ok(firsts == 1, "the first dirty page is announced once");
	tap_ok(region[5 * page_size + 100] == 1 && region[15 * page_size + 7] == 3,
	    "the writes took effect");
	bitmap[0] = 0;
	tap_ok(wp_track_collect(wp, bitmap) == 0 && bitmap_is(bitmap, some, 4),
	    "collect reports exactly the written pages");
	bitmap[0] = 0;
	tap_ok(wp_track_collect(wp, bitmap) == 0 && bitmap[0] == 0,
	    "and forgets them");

	r = write_pages(wp, again, 1, &firsts);
	tap_ok(r == 1 && firsts == 1, "after collect a new write faults again");
	bitmap[0] = 0;
	tap_ok(wp_track_collect(wp, bitmap) == 0 && bitmap_is(bitmap, again, 1),
	    "and is reported alone");

	/*
	 * A writer waiting on a protected page is let go by disarming
	 * alone, without its fault being handled: what the worker relies
	 * on before it waits for vCPUs.
	 */
	{
		static const int blocked[] = { 11 };
		struct writer bw = { blocked, 1, false };
		pthread_t t;
		int i;

		bitmap[0] = 0;
		wp_track_collect(wp, bitmap);	/* protect everything again */
		pthread_create(&t, NULL, writer_main, &bw);
		pfd = (struct pollfd){ wp_track_fd(wp), POLLIN, 0 };
		tap_ok(poll(&pfd, 1, 2000) == 1 && !bw.done,
		    "a writer waits on a protected page");
		tap_ok(wp_track_disarm(wp) == 0, "disarmed while it waits");
		for (i = 0; i < 200 && !bw.done; i++)
			usleep(10000);
		tap_ok(bw.done, "and disarming alone let it go");
		if (!bw.done)
			tap_bail("the writer is stuck");
		pthread_join(t, NULL);
	}

	/* Disarmed: writes go straight through and nothing is recorded. */
	tap_ok(wp_track_disarm(wp) == 0, "disarmed");
	region[9 * page_size] = 7;
	pfd = (struct pollfd){ wp_track_fd(wp), POLLIN, 0 };
	tap_ok(poll(&pfd, 1, 50) == 0 && region[9 * page_size] == 7,
	    "disarmed: a write neither waits nor wakes");
	bitmap[0] = 0;
	tap_ok(wp_track_collect(wp, bitmap) == 0 && bitmap[0] == 0,
	    "disarmed: nothing to report");
	tap_ok(wp_track_arm(wp) == 0 && write_pages(wp, again, 1, &firsts) == 1,
	    "armed again: writes fault again");

	tap_ok(wp_track_new(other, PAGES * page_size, &quiet) == 0 &&
	    wp_track_arm(quiet) == 0, "a second tracker, armed");
	pfd = (struct pollfd){ wp_track_fd(quiet), POLLIN, 0 };
	tap_ok(poll(&pfd, 1, 100) == 0, "a region nobody writes never wakes");
	bitmap[0] = 0;
	tap_ok(wp_track_handle(quiet, NULL) == 0 &&
	    wp_track_collect(quiet, bitmap) == 0 && bitmap[0] == 0,
	    "and reports nothing");
	wp_track_free(quiet);
	wp_track_free(wp);
	wp_track_free(NULL);
	region[3 * page_size] = 1;	/* no tracker: no wait */
	tap_ok(region[3 * page_size] == 1, "freed: the region is writable");
	return tap_done();
}
