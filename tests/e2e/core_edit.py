#!/usr/bin/env python3
"""Make the cores that crash handlers and debuggers write from a kernel core.

Usage: core_edit.py IN OUT EDIT...

EDIT, applied in order:
  no-file        drop the NT_FILE note (an older gcore; a handler that
                 writes its own notes)
  file-only=S    keep only NT_FILE's entries whose path holds S (a note
                 that does not cover the modules)
  cut-notes      end the PT_NOTE segment halfway into NT_FILE's
                 descriptor (notes cut short, as systemd-coredump may)
  zero-dt-debug  zero the executable's DT_DEBUG in the core's memory (no
                 way to the loader's r_debug list)
  no-exe-path    zero AT_EXECFN in NT_AUXV and clear NT_PRPSINFO's
                 pr_psargs (nothing names the executable)

Notes are rewritten at the end of the file and PT_NOTE pointed there; the
memory is untouched except by zero-dt-debug.  Fails (exit 1) when the core
lacks what an edit needs, so a test never runs on a core it did not make.
"""
import struct
import sys

NT_FILE, NT_AUXV, NT_PRPSINFO = 0x46494C45, 6, 3
PT_LOAD, PT_DYNAMIC, PT_NOTE, PT_PHDR = 1, 2, 4, 6
AT_PHDR, AT_PHNUM, AT_EXECFN, DT_DEBUG = 3, 5, 31, 21


def die(msg):
    print("core_edit: " + msg, file=sys.stderr)
    sys.exit(1)


def align4(n):
    return (n + 3) & ~3


class Core:
    def __init__(self, data):
        self.d = data
        if data[:4] != b"\x7fELF" or data[4] != 2 or struct.unpack_from("<H", data, 16)[0] != 4:
            die("not a 64-bit ELF core")
        self.phoff = struct.unpack_from("<Q", data, 32)[0]
        self.phnum = struct.unpack_from("<H", data, 56)[0]
        self.ph = [list(struct.unpack_from("<IIQQQQQQ", data, self.phoff + i * 56))
                   for i in range(self.phnum)]
        notes = [i for i, p in enumerate(self.ph) if p[0] == PT_NOTE]
        if len(notes) != 1:
            die("%d PT_NOTE segments, want 1" % len(notes))
        self.note_ix = notes[0]

    def notes(self):
        """[(offset in file, name, type, desc)] of the PT_NOTE segment."""
        p = self.ph[self.note_ix]
        off, end, out = p[2], p[2] + p[5], []
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", self.d, off)
            name_at = off + 12
            desc_at = name_at + align4(namesz)
            if desc_at + descsz > end:
                break
            out.append((off, bytes(self.d[name_at:name_at + namesz]), ntype,
                        bytes(self.d[desc_at:desc_at + descsz])))
            off = desc_at + align4(descsz)
        return out

    def set_notes(self, notes):
        blob = bytearray()
        for _, name, ntype, desc in notes:
            blob += struct.pack("<III", len(name), len(desc), ntype)
            blob += name + b"\0" * (align4(len(name)) - len(name))
            blob += desc + b"\0" * (align4(len(desc)) - len(desc))
        while len(self.d) % 8:
            self.d.append(0)
        at = len(self.d)
        self.d += blob
        self.ph[self.note_ix][2] = at
        self.ph[self.note_ix][5] = len(blob)
        self.write_ph(self.note_ix)

    def write_ph(self, i):
        struct.pack_into("<IIQQQQQQ", self.d, self.phoff + i * 56, *self.ph[i])

    def file_offset(self, vaddr, size):
        for p in self.ph:
            if p[0] == PT_LOAD and p[3] <= vaddr and vaddr + size <= p[3] + p[5]:
                return p[2] + vaddr - p[3]
        die("0x%x (%d bytes) is not in the core" % (vaddr, size))

    def read(self, vaddr, size):
        at = self.file_offset(vaddr, size)
        return bytes(self.d[at:at + size])


def nt_file_entries(desc):
    count, page = struct.unpack_from("<QQ", desc, 0)
    triples = [struct.unpack_from("<QQQ", desc, 16 + i * 24) for i in range(count)]
    names = desc[16 + count * 24:].split(b"\0")[:count]
    return page, list(zip(triples, names))


def nt_file_desc(page, entries):
    out = struct.pack("<QQ", len(entries), page)
    for t, _ in entries:
        out += struct.pack("<QQQ", *t)
    for _, n in entries:
        out += n + b"\0"
    return out


def main():
    if len(sys.argv) < 4:
        die("usage: core_edit.py IN OUT EDIT...")
    c = Core(bytearray(open(sys.argv[1], "rb").read()))
    for edit in sys.argv[3:]:
        notes = c.notes()
        files = [n for n in notes if n[2] == NT_FILE and n[1].rstrip(b"\0") == b"CORE"]
        if edit == "no-file":
            if not files:
                die("no NT_FILE note to drop")
            c.set_notes([n for n in notes if n[2] != NT_FILE])
        elif edit.startswith("file-only="):
            if not files:
                die("no NT_FILE note to cut")
            want = edit.split("=", 1)[1].encode()
            page, entries = nt_file_entries(files[0][3])
            kept = [e for e in entries if want in e[1]]
            if not kept or len(kept) == len(entries):
                die("file-only=%s keeps %d of %d entries" % (want.decode(), len(kept), len(entries)))
            c.set_notes([(o, nm, t, nt_file_desc(page, kept) if t == NT_FILE else d)
                         for o, nm, t, d in notes])
        elif edit == "cut-notes":
            if not files:
                die("no NT_FILE note to cut into")
            off, name, _, desc = files[0]
            p = c.ph[c.note_ix]
            c.ph[c.note_ix][5] = off + 12 + align4(len(name)) + len(desc) // 2 - p[2]
            c.write_ph(c.note_ix)
        elif edit == "zero-dt-debug":
            auxv = [n for n in notes if n[2] == NT_AUXV]
            if not auxv:
                die("no NT_AUXV note")
            a, d = {}, auxv[0][3]
            for i in range(0, len(d) - 15, 16):
                k, v = struct.unpack_from("<QQ", d, i)
                a.setdefault(k, v)
            phdrs = [struct.unpack_from("<IIQQQQQQ", c.read(a[AT_PHDR] + i * 56, 56))
                     for i in range(a[AT_PHNUM])]
            bias = [a[AT_PHDR] - p[3] for p in phdrs if p[0] == PT_PHDR]
            dyn = [p for p in phdrs if p[0] == PT_DYNAMIC]
            if not bias or not dyn:
                die("the executable has no PT_PHDR or PT_DYNAMIC")
            at, done = bias[0] + dyn[0][3], False
            for i in range(dyn[0][6] // 16):
                tag, val = struct.unpack_from("<qQ", c.read(at + i * 16, 16))
                if tag == 0:
                    break
                if tag == DT_DEBUG:
                    if not val:
                        die("DT_DEBUG is 0 already")
                    struct.pack_into("<Q", c.d, c.file_offset(at + i * 16 + 8, 8), 0)
                    done = True
            if not done:
                die("no DT_DEBUG in the executable's dynamic section")
        elif edit == "no-exe-path":
            out, did = [], set()
            for o, nm, t, d in notes:
                d = bytearray(d)
                if t == NT_AUXV:
                    for i in range(0, len(d) - 15, 16):
                        if struct.unpack_from("<Q", d, i)[0] == AT_EXECFN:
                            struct.pack_into("<Q", d, i + 8, 0)
                            did.add("execfn")
                elif t == NT_PRPSINFO and len(d) >= 136:
                    d[56:136] = b"\0" * 80
                    did.add("psargs")
                out.append((o, nm, t, bytes(d)))
            if did != {"execfn", "psargs"}:
                die("no AT_EXECFN or no pr_psargs to clear")
            c.set_notes(out)
        else:
            die("unknown edit " + edit)
    open(sys.argv[2], "wb").write(c.d)


if __name__ == "__main__":
    main()
