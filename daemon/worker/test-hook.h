/*
 * Hooks for the kvm test suite, compiled in only with -Dtest_hooks=true
 * (test-hook.c); an ordinary build links test-hook-none.c, whose hooks
 * do nothing, so that no product binary honours them.
 */
#ifndef VMMD_TEST_HOOK_H
#define VMMD_TEST_HOOK_H

#include <stdbool.h>
#include <sys/types.h>
#include <json-c/json.h>

struct worker;
struct sandbox_facts;
struct blk_backend;

/*
 * The worker has just entered its sandbox (the loop's thread).  With
 * VMMD_TEST_FORBIDDEN_CALL=NAME[:ARG[,ARG]...] in the environment, the
 * test build makes system call NAME with those arguments (numbers, in
 * C's notation; 0 for the ones not given) half a second later on the
 * loop: the sandbox must kill the worker and vmmd report it crashed,
 * naming NAME ("fcntl:0,8" is fcntl(0, F_SETOWN, 0)).
 */
void	test_hook_sandboxed(struct worker *w);

/*
 * The pid worker.adopt reports: pid, the worker's own.  With
 * VMMD_TEST_ADOPT_PID=N in the environment the test build reports N
 * instead, as a worker that lies about who it is would: vmmd must not
 * adopt it (nor ever signal N).
 */
pid_t	test_hook_adopt_pid(pid_t pid);

/*
 * Bytes the guest wrote were just read (what: "disk read" by the disk
 * reader, disk-reader.h; "disks opened" by the worker), by a process
 * confined as f says (NULL: the caller, asked now), which took at
 * most max_rss_kib (0: unknown) and held open_fds descriptors (-1:
 * not counted): the test build logs it in one line
 * starting "test hook: WHAT by uid", for the kvm suite to check
 * against what the sandbox promises.
 */
void	test_hook_reading(const char *what, const struct sandbox_facts *f,
	    long max_rss_kib, int open_fds);

/*
 * The disk reader's deadline: ms, or VMMD_TEST_READER_TIMEOUT_MS from
 * the environment in the test build.
 */
int	test_hook_reader_timeout_ms(int ms);

/*
 * In the disk reader, its filter and limits loaded, before it reads:
 * with VMMD_TEST_READER=hog the test build allocates and touches memory
 * until none is given (then -ENOMEM, err saying how much it got, or
 * -E2BIG past 4 GiB: no bound held); with VMMD_TEST_READER=stall it
 * never answers.  0 otherwise: read as usual.
 */
int	test_hook_reader(char *err, size_t errlen);

/*
 * A snapshot is about to save the devices (snapshot.c): 0, or -EBUSY
 * with err as a device with work in flight answers, which makes the
 * snapshot try again from the loop.  With VMMD_TEST_SNAPSHOT_BUSY=resume
 * in the environment the test build answers -EBUSY until a worker.resume
 * has been asked for (test_hook_resume_asked), so that a test can send
 * one while the snapshot waits, whatever the machine's speed; with
 * VMMD_TEST_SNAPSHOT_BUSY=shutdown, until a worker.shutdown has
 * (test_hook_shutdown_asked).
 */
int	test_hook_snapshot_busy(char *err, size_t errlen);
/* A worker.resume came, whatever its answer (see above). */
void	test_hook_resume_asked(void);
/* A worker.shutdown came, whatever its answer (see above). */
void	test_hook_shutdown_asked(void);
/*
 * A worker.snapshot is about to pause the guest (snapshot.c).  With
 * VMMD_TEST_SNAPSHOT_LATE=MS the test build first keeps the loop from
 * running for MS milliseconds, as a loop busy elsewhere would: what the
 * guest asks of its devices meanwhile (a doorbell rung) waits for the
 * loop, and so finds the snapshot.
 */
void	test_hook_snapshot_late(void);

/*
 * Disk i's backend (be) was just made (requests.c), before a machine
 * takes it; restored: for a guest that goes on from a snapshot.  With
 * VMMD_TEST_HOLD=disk-write in the environment the test build wraps
 * disk 0's of a guest that boots so that the first write submitted to
 * it is held: taken (in flight, as the device counts it) but not handed
 * on, and "test hook: a disk write held" logged, until a snapshot tries
 * to save the devices: test_hook_snapshot_busy() then hands it to the
 * backend ("... released") and answers -EBUSY, as a device with work in
 * flight does.  So a test makes a request in flight at the snapshot
 * certain, whatever the machine's pace.
 */
void	test_hook_disk_made(unsigned int i, struct blk_backend *be,
    bool restored);

/*
 * A message the worker is about to send its supervisor (link.c).  With
 * VMMD_TEST_ADOPT_UID=N or VMMD_TEST_ADOPT_CID=N in the environment,
 * the test build makes worker.adopt's answer (the one reply with a
 * "uid") say that it runs as uid N, or that its vsock CID is N, as a
 * worker that lies about what it is would: vmmd must believe the
 * kernel and the record it wrote itself (worker-record.h), not that.
 */
void	test_hook_sending(struct json_object *msg);

/*
 * The paused guest is about to resume (vm.resume).  With
 * VMMD_TEST_VCPU_STATE=restore in the environment the test build
 * captures vCPU 0's state (vcpu-state.h) and writes it as a section,
 * clobbers the vCPU's registers (the general ones, rip, rflags, the SSE
 * registers), then reads the section back into a fresh state and
 * restores that: the guest must go on as if nothing happened.  With
 * =clobber it stops after clobbering, so that a test can show it would
 * notice.  Either way it logs one line "test hook: vcpu 0 state ...".
 * With =machine it does so with the whole machine (machine-state.h and
 * every vCPU) through machine_restore, junk first (every IOAPIC pin and
 * PIC line masked, registers clobbered), and logs "test hook: machine
 * state ..."; =machine-clobber stops at the junk.
 */
void	test_hook_resuming(struct worker *w);

/*
 * The machine was just built (the first one, or after a reset), before
 * its vCPUs run.  With VMMD_TEST_HOLD=fw-cfg-dma in the environment the
 * test build pauses the guest at its firmware's first fw_cfg DMA
 * transfer, as vm.pause does (the "paused" state event included), and
 * logs "test hook: held at the first fw_cfg DMA": a firmware held at a
 * point of its own, whatever the host's pace, for a test to wait for.
 * The transfer wakes the loop, which pauses: the vCPU may get a few
 * more transfers done meanwhile (a vCPU cannot park itself inside an
 * exit), microseconds of guest time, where OVMF's DXE is a second away.
 */
void	test_hook_machine_built(struct worker *w);

/*
 * The worker is about to enter its sandbox (the loop's thread): what a
 * hook must open by name, it opens here.  With
 * VMMD_TEST_MIGRATE_HOLD=PATH the test build opens PATH to read, for
 * test_hook_migrate_frame().
 */
void	test_hook_sandboxing(struct worker *w);

/*
 * A live migration's source is about to send a frame of guest RAM
 * (migrate-out.c, its own thread).  The test build waits first while
 * the file test_hook_sandboxing() opened is not empty (fstat() every
 * 10 ms, 300 s at most): the stream stands still where a test wants
 * to cut it, however slow the machine (a delay a frame lost that race
 * on a loaded host).  The file must exist when the VM starts; a test
 * holds by writing to it and lets go by truncating it.
 */
void	test_hook_migrate_frame(void);

#endif
