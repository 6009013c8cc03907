"""The few edits scripts/originals/compare makes to its scratch copies of the originals, so that
both sides persist the same way (clwb per line, sfence) and keep their files in the pool folder
(POOL_DIR, else /dev/shm).
usage: rewrite.py ORIGINAL FILE...   (each FILE is edited in place; it must be a scratch copy)

Every edit must match exactly once: a version of an original that this script does not know
stops the build instead of being measured half-changed."""
import os
import re
import sys

POOL_DIR = os.environ.get("POOL_DIR") or "/dev/shm"

CLWB_SFENCE = ('  volatile char *ptr = (char *)((unsigned long)data & ~(CACHE_LINE_SIZE - 1));\n'
               '  for (; ptr < data + len; ptr += CACHE_LINE_SIZE)\n'
               '    asm volatile("clwb %0" : "+m"(*(volatile char *)ptr));\n'
               '  asm volatile("sfence" ::: "memory");\n')


def sub_once(what, pattern, repl, text):
    out, n = re.subn(pattern, repl if callable(repl) else lambda _: repl, text, flags=re.S)
    if n != 1:
        sys.exit(f"rewrite: {what} found {n} times, not once: a version this script does not know")
    return out


def fastfair(path, text):
    # btree.h: clflush() is mfence, clflush with an emulated-latency spin, mfence.
    return sub_once(f"FAST_FAIR's clflush() in {path}",
                    r'inline void clflush\(char \*data, int len\) \{.*?\n\}\n',
                    'inline void clflush(char *data, int len) {\n' + CLWB_SFENCE + '}\n', text)


def utree(path, text):
    # utree.h: clflush() is mfence, clflushopt per line, mfence.
    return sub_once(f"uTree's clflush() in {path}",
                    r'inline void clflush\(char \*data, int len\)\s*\{.*?\n\}\n',
                    'inline void clflush(char *data, int len) {\n' + CLWB_SFENCE + '}\n', text)


def roart(path, text):
    if path.endswith('util.h'):
        # PM_FENCE() reads NVM_LATENCY with getenv() at every fence (an emulated PM latency,
        # off when unset): gone. flush_data() is clwb per line then mfence: sfence instead.
        text = sub_once(f"ROART's PM_FENCE() in {path}",
                        r'#define PM_FENCE\(\)\s*\\\n.*?while \(0\)\n',
                        '#define PM_FENCE() do {} while (0)\n', text)
        text = sub_once(f"ROART's flush_data() in {path}",
                        r'static void flush_data\(void \*addr, size_t len\) \{.*?\n\}\n',
                        'static void flush_data(void *addr, size_t len) {\n'
                        '    char *end = (char *)(addr) + len;\n'
                        '    char *ptr = (char *)((unsigned long)addr & ~(CACHE_ALIGN - 1));\n'
                        '    for (; ptr < end; ptr += CACHE_ALIGN)\n'
                        '        asm volatile("clwb %0" : "+m"(*(volatile char *)ptr));\n'
                        '    asm volatile("sfence" ::: "memory");\n'
                        '}\n', text)
    elif path.endswith('N.cpp'):
        # A bug, fixed so that lookups find what was inserted: Leaf::getFingerPrint() hashes
        # the key as `char` (signed here) and Key::getFingerPrint() as uint8_t, so a key with a
        # byte of 0x80 or more gets two fingerprints and its lookup misses (over 97% of the
        # harness's keys). Both now hash unsigned bytes.
        text = sub_once(f"ROART's Leaf::getFingerPrint() in {path}",
                        r'(uint16_t Leaf::getFingerPrint\(\) \{\s*uint16_t re = 0;\s*)auto k = GetKey\(\);',
                        lambda m: m.group(1) + 'auto k = reinterpret_cast<uint8_t *>(GetKey());',
                        text)
    else:
        sys.exit(f"rewrite: nothing to change in ROART's {path}")
    return text


def pactree(path, text):
    if path.endswith('common.h'):
        # One socket here: MULTIPOOL (a second set of pools on /mnt/pmem1 for the second NUMA
        # node, picked per allocation by rdtscp's chip id) is off, as its README allows.
        return sub_once(f"PACTree's MULTIPOOL in {path}", r'\n#define MULTIPOOL\n', '\n', text)
    if path.endswith('pactree.cpp'):
        # Its pools: POOL_DIR/dptree-originals-pactree-{dl,sl,log} instead of /mnt/pmem0/...
        for name in ('dl', 'sl', 'log'):
            text = sub_once(f"PACTree's /mnt/pmem0/{name} in {path}", f'"/mnt/pmem0/{name}"',
                            f'"{POOL_DIR}/dptree-originals-pactree-{name}"', text)
        return text
    sys.exit(f"rewrite: nothing to change in PACTree's {path}")


def dptree(path, text):
    # dptree.hpp: the buffer iterator's prefix ++ falls off its end without returning *this.
    # GCC 12 takes that path as unreachable and the merge's loop over the buffer never ends
    # (it grows a vector until the heap is gone), in the authors' own test too. Its return is
    # added; nothing else changes. Their flushes are already clwb, their fences sfence.
    return sub_once(f"the authors' DPTree's stxtree_kv_iterator::operator++ in {path}",
                    r'inline iterator_type &operator\+\+\(\) \{ \+\+it; \}',
                    'inline iterator_type &operator++() { ++it; return *this; }', text)


def main(original, paths):
    edit = {'fastfair': fastfair, 'utree': utree, 'roart': roart, 'pactree': pactree,
            'dptree': dptree}.get(original)
    if edit is None or not paths:
        sys.exit("usage: rewrite.py fastfair|utree|roart|pactree|dptree FILE...")
    for path in paths:
        text = open(path).read()
        open(path, 'w').write(edit(path, text))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
