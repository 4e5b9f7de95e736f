"""A growable count table over pairs ``(a, b) -> value``, listed by ``a``.

The engine keeps two of these: context-term postings (term -> resource, value = term
frequency; DESIGN §4.3's lexical channel) and tool n-grams (context -> next tool, value =
count; §4.5). Both need "add to (a, b)", "everything listed under a" and "how many b under
a", incrementally, from compiled code.

Layout (a :class:`Table`, a namedtuple of arrays, so a kernel can take and return it):

- entries (capacity E; the first ``n[0]`` used, in creation order): ``ea``, ``eb`` int64 the
  pair and ``ev`` float64 the value;
- an open-addressing hash ``hkeys``/``hslot`` (H a power of two, ``-1`` empty, load <= 1/2)
  from ``a * 2**31 + b`` to the entry, with the same hash as the association graph
  (``hebbian.key_home``), so 0 <= a < 2**32 and 0 <= b < 2**31;
- the list of each ``a`` as a block of a shared pool (``kernels.adjacency``): ``off``,
  ``len``, ``cap`` per a (capacity A), ``pool_b``/``pool_e`` the listed b and its entry,
  ``pool_used``. ``len[a]`` is the number of distinct b under a.

``table_add`` grows what is full and returns the table (the same one when nothing grew),
so callers write ``t = table_add(t, a, b, x)``. Values are added in call order, so any
split of a stream of additions into calls gives the same table.
"""

from collections import namedtuple

import numpy as np

from ._jit import jit
from .adjacency import MIN_BLOCK, rebuild_adjacency
from .hebbian import EMPTY, N_KEY, key_home

Table = namedtuple("Table", "ea eb ev n hkeys hslot off len cap pool_b pool_e pool_used")


def new_table(keys: int = 64, entries: int = 256) -> Table:
    """An empty table with room for ``keys`` distinct a and ``entries`` pairs (plain Python)."""
    entries = max(16, entries)
    h = 16
    while h < 2 * entries:
        h *= 2
    return Table(np.zeros(entries, np.int64), np.zeros(entries, np.int64),
                 np.zeros(entries, np.float64), np.zeros(1, np.int64),
                 np.full(h, EMPTY, np.int64), np.zeros(h, np.int64),
                 np.zeros(max(keys, 16), np.int64), np.zeros(max(keys, 16), np.int64),
                 np.zeros(max(keys, 16), np.int64), np.zeros(4 * entries, np.int64),
                 np.zeros(4 * entries, np.int64), np.zeros(1, np.int64))


@jit
def table_find(t, a, b):
    """Entry index of (a, b), or -1."""
    key = a * N_KEY + b
    mask = t.hkeys.shape[0] - 1
    j = key_home(key) & mask
    for _ in range(t.hkeys.shape[0]):
        k = t.hkeys[j]
        if k == key:
            return t.hslot[j]
        if k == EMPTY:
            return -1
        j = (j + 1) & mask
    return -1


@jit
def _grown(arr, size, fill):
    out = np.empty(size, arr.dtype)
    out[: arr.shape[0]] = arr
    out[arr.shape[0]:] = fill
    return out


@jit
def _rehash(t, size):
    hkeys = np.full(size, EMPTY, np.int64)
    hslot = np.zeros(size, np.int64)
    mask = size - 1
    for e in range(t.n[0]):
        key = t.ea[e] * N_KEY + t.eb[e]
        j = key_home(key) & mask
        while hkeys[j] != EMPTY:
            j = (j + 1) & mask
        hkeys[j] = key
        hslot[j] = e
    return hkeys, hslot


@jit
def _relist(t, n_keys):
    """Lay the lists out compactly in a pool with room to grow."""
    off = np.zeros(n_keys, np.int64)
    ln = np.zeros(n_keys, np.int64)
    cap = np.zeros(n_keys, np.int64)
    used = np.zeros(1, np.int64)
    size = max(4 * t.n[0], 64)
    while True:
        pool_b = np.zeros(size, np.int64)
        pool_e = np.zeros(size, np.int64)
        need = rebuild_adjacency(t.ea, t.eb, t.n[0], off, ln, cap, pool_b, pool_e, used)
        if need <= size // 2:
            return off, ln, cap, pool_b, pool_e, used
        size *= 2


@jit
def table_reserve(t, a_max, more):
    """The table, grown if needed so that ``more`` new pairs with a <= a_max fit."""
    n = t.n[0]
    ea, eb, ev, hkeys, hslot = t.ea, t.eb, t.ev, t.hkeys, t.hslot
    off, ln, cap, pool_b, pool_e, used = t.off, t.len, t.cap, t.pool_b, t.pool_e, t.pool_used
    grew = False
    if n + more > ea.shape[0]:
        size = max(2 * ea.shape[0], n + more)
        ea, eb, ev = _grown(ea, size, 0), _grown(eb, size, 0), _grown(ev, size, 0.0)
        grew = True
    if 2 * (n + more) > hkeys.shape[0]:
        size = hkeys.shape[0]
        while 2 * (n + more) > size:
            size *= 2
        hkeys, hslot = _rehash(t, size)
        grew = True
    if a_max >= off.shape[0]:
        size = max(2 * off.shape[0], a_max + 1)
        off, ln, cap = _grown(off, size, 0), _grown(ln, size, 0), _grown(cap, size, 0)
        grew = True
    if not grew:
        return t
    return Table(ea, eb, ev, t.n, hkeys, hslot, off, ln, cap, pool_b, pool_e, used)


@jit
def table_add(t, a, b, x):
    """Add ``x`` to the value of (a, b), creating it (listed under a) if absent; returns the
    table, grown when something was full. (Written out in one function: each call passing
    the table costs a reference count per array.)"""
    key = a * N_KEY + b
    hkeys = t.hkeys
    mask = hkeys.shape[0] - 1
    j = key_home(key) & mask
    while True:
        k = hkeys[j]
        if k == key:
            t.ev[t.hslot[j]] += x
            return t
        if k == EMPTY:
            break
        j = (j + 1) & mask
    n = t.n[0]
    if n + 1 > t.ea.shape[0] or 2 * (n + 1) > hkeys.shape[0] or a >= t.off.shape[0]:
        t = table_reserve(t, a, 1)
        hkeys = t.hkeys
        mask = hkeys.shape[0] - 1
        j = key_home(key) & mask
        while hkeys[j] != EMPTY:
            j = (j + 1) & mask
    e = n
    t.n[0] = e + 1
    t.ea[e] = a
    t.eb[e] = b
    t.ev[e] = x
    hkeys[j] = key
    t.hslot[j] = e
    # append to a's list; a full block moves to the end of the pool with twice the room
    n_a = t.len[a]
    if n_a == t.cap[a]:
        new_cap = max(MIN_BLOCK, 2 * n_a)
        base = t.pool_used[0]
        if base + new_cap > t.pool_b.shape[0]:
            off, ln, cap, pool_b, pool_e, used = _relist(t, t.off.shape[0])
            return Table(t.ea, t.eb, t.ev, t.n, t.hkeys, t.hslot, off, ln, cap, pool_b, pool_e,
                         used)
        old = t.off[a]
        for q in range(n_a):
            t.pool_b[base + q] = t.pool_b[old + q]
            t.pool_e[base + q] = t.pool_e[old + q]
        t.off[a] = base
        t.cap[a] = new_cap
        t.pool_used[0] = base + new_cap
    q = t.off[a] + n_a
    t.pool_b[q] = b
    t.pool_e[q] = e
    t.len[a] = n_a + 1
    return t


@jit
def table_add_many(t, a, b, x):
    """``table_add`` for each (a[i], b[i], x[i]) in order."""
    for i in range(a.shape[0]):
        t = table_add(t, a[i], b[i], x[i])
    return t


def table_from_entries(ea, eb, ev, keys: int = 0) -> Table:
    """A table holding the given distinct pairs (plain Python; loading a saved state)."""
    ea = np.asarray(ea, np.int64)
    t = new_table(max(keys, int(ea.max()) + 1 if ea.size else 0), ea.size)
    return table_add_many(t, ea, np.asarray(eb, np.int64), np.asarray(ev, np.float64))


def table_rows(t: Table, a: int) -> tuple[np.ndarray, np.ndarray]:
    """(b, value) listed under a (plain Python; tests and tools)."""
    if a >= t.off.shape[0]:
        return np.zeros(0, np.int64), np.zeros(0)
    lo = int(t.off[a])
    hi = lo + int(t.len[a])
    return t.pool_b[lo:hi].copy(), t.ev[t.pool_e[lo:hi]]
