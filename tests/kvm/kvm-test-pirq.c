/*
 * PCI interrupts in PIC mode through the PIIX3's PIRQ routing: the pirq
 * test guest (tests/guests/pirq.c) runs as a firmware VM's firmware
 * (make-rom.py), on the board SeaBIOS gets (the PIIX3 at 00:01.0, the
 * virtio-rng in slot 12), leaves the IOAPIC masked and takes the rng's
 * INTx on the 8259 at the IRQ it routes the rng's link to: IRQ 10, then
 * 11 after a re-route at run time, nothing while the route is disabled,
 * and the level already up as soon as the link is routed again.
 */
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* The guest's own bound is 3 x 5 s; the rest is a busy machine's. */
#define PIRQ_MS	40000

int
main(void)
{
	const char *rom = h_env("VMMD_GUEST_PIRQ_ROM");
	struct json_object *r, *st, *o;
	struct h_daemon *d;
	struct h_conn *c;
	const char *log;

	h_init();
	c = h_setup(&d);
	h_close(c);
	h_daemon_setting(d, "bios", rom);
	if (h_daemon_restart(d, H_REPLY_MS) < 0)
		tap_bail("restarting vmmd with the test ROM as its BIOS");
	c = h_connect(d);
	if (c == NULL)
		tap_bail("no client after the restart");
	log = h_console_log(d, "pirq");

	if (h_create(c, "pirq", "\"firmware\":\"bios\",\"rng\":true") != 0)
		tap_bail("creating a firmware VM with a virtio-rng");
	if (h_start(c, "pirq") != 0)
		tap_bail("starting it with the test ROM");
	tap_ok(h_file_expect(log, "pirq: piix3 8086:7000, rng in slot 12 "
	    "pin 1, link 3", 1, H_BOOT_MS) == 0,
	    "the guest finds the PIIX3 and the rng on PIRQD (slot 12, INTA#)");
	/* The summary comes whatever happened: wait for it, then judge. */
	(void)h_file_expect(log, "routed again irq 10 ", 1, PIRQ_MS);
	tap_ok(h_file_expect(log, "pirq: irq 10 1, re-routed irq 11 1, "
	    "disabled 0, routed again irq 10 1", 1, H_REPLY_MS) == 0,
	    "INTx on IRQ 10, on 11 after a re-route, none while disabled, "
	    "the held level once routed again");
	tap_ok(h_file_expect(log, "PASS", 1, H_REPLY_MS) == 0,
	    "the guest passes");

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"pirq\"}");
	o = NULL;
	if (json_object_object_get_ex(h_ret(r), "stats", &st) &&
	    json_object_object_get_ex(st, "devices", &st))
		json_object_object_get_ex(st, "piix3-isa", &o);
	tap_ok(o != NULL && h_str(o, "pirq_route") != NULL &&
	    strcmp(h_str(o, "pirq_route"), "0xa808080") == 0,
	    "vm.info: PIRQD routed to IRQ 10, the others off (%s)",
	    o != NULL ? h_text(o) : "no piix3-isa");
	json_object_put(r);

	tap_ok(h_stop(c, "pirq", true, -1, H_REPLY_MS) == 0, "force stop");
	h_close(c);
	return h_done();
}
