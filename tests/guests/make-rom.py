#!/usr/bin/env python3
"""Make a test ROM: a test guest run as a firmware VM's firmware.

make-rom.py OUT GUEST.elf STUB.elf SIZE

The guest's loadable segments (linked from 1 MiB) go at the start of a
flash image of SIZE bytes, the stub's page (rom-stub.S) at its end, with
where the guest starts in the flash, how many dwords to copy and the
guest's entry point filled in.  vmmd maps the image to end at 4 GiB, as
it maps bios-256k.bin.
"""
import struct
import sys

GUEST_BASE = 0x100000
PAGE = 0x1000
FILLED = 0xfe0  # rom_base, rom_dwords, rom_entry in the stub's page


def segments(path):
    """(entry, [(paddr, bytes)]) of an ELF64 file's PT_LOAD segments."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:4] != b'\x7fELF' or data[4] != 2:
        sys.exit(path + ': not an ELF64 file')
    entry, phoff = struct.unpack_from('<QQ', data, 24)
    phentsize, phnum = struct.unpack_from('<HH', data, 54)
    segs = []
    for i in range(phnum):
        (ptype, _flags, off, _vaddr, paddr, filesz,
         _memsz, _align) = struct.unpack_from('<IIQQQQQQ', data,
                                              phoff + i * phentsize)
        if ptype == 1 and filesz > 0:
            segs.append((paddr, data[off:off + filesz]))
    return entry, segs


def main():
    out, guest, stub, size = sys.argv[1], sys.argv[2], sys.argv[3], \
        int(sys.argv[4], 0)
    rom = bytearray(size)
    room = size - PAGE
    entry, segs = segments(guest)
    for paddr, b in segs:
        at = paddr - GUEST_BASE
        if at < 0 or at + len(b) > room:
            sys.exit('%s: segment at 0x%x does not fit %d bytes'
                     % (guest, paddr, room))
        rom[at:at + len(b)] = b
    _, ssegs = segments(stub)
    for paddr, b in ssegs:
        at = paddr - (0x100000000 - PAGE)
        if at < 0 or at + len(b) > PAGE:
            sys.exit('%s: not one page at 0xfffff000' % stub)
        rom[room + at:room + at + len(b)] = b
    struct.pack_into('<III', rom, room + FILLED, 0x100000000 - size,
                     room // 4, entry)
    with open(out, 'wb') as f:
        f.write(rom)


main()
