/*
 * vmctl stats' tables (ctl/stats-table.c) from a vm.stats reply: the
 * columns, their alignment, the order of the rows, the segments and
 * KVM's statistics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "stats-table.h"
#include "tap.h"

static const char reply[] =
    "{\"enabled\": true, \"segments\": true, \"clock\": \"tsc\","
    " \"tsc_hz\": 2000000000,"
    " \"vcpus\": 2, \"elapsed_us\": 1500000,"
    " \"exits\": ["
    "  {\"exit\": \"IO\", \"addr\": \"0x3f8\", \"dir\": \"out\","
    "   \"device\": \"com1\", \"name\": \"IO 0x3f8 out\", \"count\": 10460,"
    "   \"min_us\": 1.1, \"max_us\": 55, \"sum_us\": 116447,"
    "   \"avg_us\": 11.133, \"stddev_us\": 1.929, \"time_pct\": 0.08,"
    "   \"segments\": {\"count\": 10460, \"exit_us\": 10460,"
    "    \"dispatch_us\": 20920,"
    "    \"handler_us\": 52300, \"irq_us\": 31380, \"reentry_us\": 1387}},"
    "  {\"exit\": \"HLT\", \"name\": \"HLT\", \"count\": 3,"
    "   \"min_us\": 0.5, \"max_us\": 2, \"sum_us\": 3, \"avg_us\": 1,"
    "   \"stddev_us\": 0.707, \"time_pct\": 0,"
    "   \"segments\": {\"count\": 0, \"exit_us\": 0, \"dispatch_us\": 0,"
    "    \"handler_us\": 0, \"irq_us\": 0, \"reentry_us\": 0}}],"
    " \"guest\": {\"name\": \"TIMEINGUEST\", \"count\": 10463,"
    "  \"min_us\": 2, \"max_us\": 900000, \"sum_us\": 140000000,"
    "  \"avg_us\": 13380.483, \"stddev_us\": 1000.5, \"time_pct\": 99.92},"
    " \"kvm\": {\"vm\": {\"remote_tlb_flush\": 4, \"mmu_cache_miss\": 0},"
    "  \"vcpus\": [{\"exits\": 20000, \"halt_exits\": 0,"
    "    \"halt_wait_hist\": {\"samples\": 7, \"p50\": 1023,"
    "    \"p99\": 65535}},"
    "   {\"exits\": 30000, \"halt_exits\": 0,"
    "    \"halt_wait_hist\": {\"samples\": 0, \"p50\": 0, \"p99\": 0}}]}}";

static const char want_table[] =
    "all 2 vCPUs, collection on with segments, 1.500 s, times in microseconds "
    "(tsc at 2.000 GHz)\n"
    "  EXIT          DEVICE  count    min         max            sum"
    "        avg    stddev  time%\n"
    "  IO 0x3f8 out    com1  10460  1.100      55.000     116447.000"
    "     11.133     1.929   0.08\n"
    "  HLT                       3  0.500       2.000          3.000"
    "      1.000     0.707   0.00\n"
    "  TIMEINGUEST           10463  2.000  900000.000  140000000.000"
    "  13380.483  1000.500  99.92\n";

static const char want_segments[] =
    "all 2 vCPUs, collection on with segments, 1.500 s, times in "
    "microseconds (tsc at 2.000 GHz), average per exit by segment\n"
    "  EXIT          DEVICE  count        avg   segs   exit  dispatch"
    "  handler    irq  reentry\n"
    "  IO 0x3f8 out    com1  10460     11.133  10460  1.000     2.000"
    "    5.000  3.000    0.133\n"
    "  HLT                       3      1.000      0      -         -"
    "        -      -        -\n"
    "  TIMEINGUEST           10463  13380.483\n";

static const char want_kvm[] =
    "  KVM (VM)          value\n"
    "  remote_tlb_flush      4\n"
    "  KVM (vCPU)                        vcpu0             vcpu1\n"
    "  exits                             20000             30000\n"
    "  halt_wait_hist  7 (p50 1023, p99 65535)  0 (p50 0, p99 0)\n";

static char *
capture(struct json_object *ret, int what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	if (what == 2)
		stats_kvm_print(fp, ret);
	else
		stats_table_print(fp, ret, what);
	fclose(fp);
	return buf;
}

static void
check(const char *got, const char *want, const char *what)
{
	tap_ok(strcmp(got, want) == 0, "%s", what);
	if (strcmp(got, want) != 0)
		tap_diag("got:\n%s\nwant:\n%s", got, want);
}

int
main(void)
{
	struct json_object *ret = json_tokener_parse(reply);
	char *s;

	tap_ok(ret != NULL, "the reply parses");
	s = capture(ret, 0);
	check(s, want_table, "the exit table: aligned, in the reply's order, "
	    "TIMEINGUEST last");
	free(s);
	s = capture(ret, 1);
	check(s, want_segments, "segments: each row's average split over "
	    "the exits timed by segments, none a dash");
	free(s);
	s = capture(ret, 2);
	check(s, want_kvm, "KVM's statistics: zeros left out, histograms "
	    "summarised");
	free(s);
	json_object_object_add(ret, "vcpu", json_object_new_int(1));
	s = capture(ret, 0);
	tap_ok(strncmp(s, "vCPU 1, collection on", 21) == 0,
	    "one vCPU's table says which");
	free(s);
	json_object_put(ret);
	return tap_done();
}
