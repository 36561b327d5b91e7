/* See runctl.h for the protocol between the controller and vCPUs. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "runctl.h"

int
runctl_init(struct runctl *rc, unsigned int nvcpus, runctl_hold_fn hold,
    void *opaque)
{
	rc->vcpus = calloc(nvcpus, sizeof(*rc->vcpus));
	if (rc->vcpus == NULL)
		return -ENOMEM;
	rc->nvcpus = nvcpus;
	rc->state = RUNCTL_RUNNING;
	rc->parked = rc->exited = 0;
	rc->held_reported = false;
	rc->hold = hold;
	rc->opaque = opaque;
	pthread_mutex_init(&rc->lock, NULL);
	pthread_cond_init(&rc->cond, NULL);
	return 0;
}

void
runctl_destroy(struct runctl *rc)
{
	if (rc->vcpus == NULL)
		return;
	free(rc->vcpus);
	rc->vcpus = NULL;
	pthread_cond_destroy(&rc->cond);
	pthread_mutex_destroy(&rc->lock);
}

void
runctl_attach(struct runctl *rc, unsigned int index, struct runctl_vcpu *v)
{
	if (index < rc->nvcpus)
		rc->vcpus[index] = v;
}

/* Caller holds rc->lock and has changed the state. */
static void
runctl_kick_all(struct runctl *rc)
{
	unsigned int i;

	for (i = 0; i < rc->nvcpus; i++) {
		struct runctl_vcpu *v = rc->vcpus[i];

		if (v == NULL)
			continue;
		if (v->run != NULL)
			v->run->immediate_exit = 1;
		if (v->thread_started)
			pthread_kill(v->thread, SIGUSR1);
	}
}

static unsigned int
runctl_threads(const struct runctl *rc)
{
	unsigned int i, n = 0;

	for (i = 0; i < rc->nvcpus; i++)
		n += rc->vcpus[i] != NULL && rc->vcpus[i]->thread_started;
	return n;
}

bool
runctl_wait_runnable(struct runctl *rc, struct runctl_vcpu *v)
{
	bool run;

	pthread_mutex_lock(&rc->lock);
	if (rc->state == RUNCTL_PAUSED || rc->state == RUNCTL_HELD) {
		/*
		 * Tell runctl_pause() once.  Parked vCPUs share the condition
		 * variable: broadcasting on every wake-up would have them wake
		 * each other for as long as the machine stays paused.
		 */
		rc->parked++;
		pthread_cond_broadcast(&rc->cond);
		while (rc->state == RUNCTL_PAUSED ||
		    rc->state == RUNCTL_HELD)
			pthread_cond_wait(&rc->cond, &rc->lock);
		rc->parked--;
	}
	run = rc->state == RUNCTL_RUNNING;
	if (run)
		v->run->immediate_exit = 0;
	pthread_mutex_unlock(&rc->lock);
	return run;
}

void
runctl_vcpu_exited(struct runctl *rc)
{
	pthread_mutex_lock(&rc->lock);
	rc->exited++;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
}

void
runctl_pause(struct runctl *rc)
{
	unsigned int threads = runctl_threads(rc);

	pthread_mutex_lock(&rc->lock);
	if (rc->state == RUNCTL_RUNNING) {
		__atomic_store_n(&rc->state, RUNCTL_PAUSED, __ATOMIC_RELEASE);
		runctl_kick_all(rc);
		while (rc->parked + rc->exited < threads)
			pthread_cond_wait(&rc->cond, &rc->lock);
	}
	pthread_mutex_unlock(&rc->lock);
}

void
runctl_resume(struct runctl *rc)
{
	pthread_mutex_lock(&rc->lock);
	if (rc->state == RUNCTL_PAUSED) {
		__atomic_store_n(&rc->state, RUNCTL_RUNNING, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&rc->cond);
	}
	pthread_mutex_unlock(&rc->lock);
}

void
runctl_hold(struct runctl *rc, enum machine_reset_reason why,
    const char *source, const char *fatal)
{
	bool report = false;

	pthread_mutex_lock(&rc->lock);
	if (rc->state == RUNCTL_RUNNING || rc->state == RUNCTL_PAUSED) {
		__atomic_store_n(&rc->state, RUNCTL_HELD, __ATOMIC_RELEASE);
		runctl_kick_all(rc);
	}
	if (rc->state == RUNCTL_HELD && !rc->held_reported) {
		rc->held_reported = true;
		report = true;
	}
	pthread_mutex_unlock(&rc->lock);
	if (report)
		rc->hold(rc->opaque, why, source, fatal);
}

void
runctl_stop(struct runctl *rc)
{
	unsigned int i;

	pthread_mutex_lock(&rc->lock);
	__atomic_store_n(&rc->state, RUNCTL_STOPPING, __ATOMIC_RELEASE);
	runctl_kick_all(rc);
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	for (i = 0; i < rc->nvcpus; i++) {
		struct runctl_vcpu *v = rc->vcpus[i];

		if (v != NULL && v->thread_started) {
			pthread_join(v->thread, NULL);
			v->thread_started = false;
		}
	}
}

int
runctl_while_paused(struct runctl *rc, int (*fn)(void *arg), void *arg)
{
	int ret = -EBUSY;

	pthread_mutex_lock(&rc->lock);
	if (rc->state == RUNCTL_PAUSED)
		ret = fn(arg);
	pthread_mutex_unlock(&rc->lock);
	return ret;
}
