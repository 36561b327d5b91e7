/*
 * Writing out what a bufferevent still holds when the event loop will
 * not run again (a worker on its way out).
 */
#ifndef VMMD_BEV_DRAIN_H
#define VMMD_BEV_DRAIN_H

#include <stdint.h>

#include <event2/bufferevent.h>

int64_t bev_drain_now_ms(void);
int bev_drain(struct bufferevent *bev, int64_t deadline_ms);

#endif
