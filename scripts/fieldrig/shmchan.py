"""A one-writer, many-reader control channel in shared memory, as vLLM's
shm broadcast: rank 0 writes each message once and every other rank sees it
within microseconds by polling, so the ranks start a step together (a TCP
broadcast would let rank 1 start tens of microseconds late every step, and
rank 0's first collective would wait that long).

Layout (int64 words): [seq, length, ack_1 .. ack_R, data ...]. The writer
waits until every reader has acknowledged the previous message before it
overwrites the data; x86 stores are seen in order, and the sequence number is
written last.
"""
import mmap
import os
import time

import numpy

SPIN_S = 0.05  # poll without sleeping this long after the last message


class Channel:
    @staticmethod
    def create(path, words, readers):
        """Writes the zeroed channel file (before any rank opens it)."""
        with open(path + ".tmp", "w+b") as f:
            f.truncate(8 * (2 + readers + words))
        os.replace(path + ".tmp", path)

    def __init__(self, path, words, readers, rank):
        self.readers, self.rank, self.words = readers, rank, words
        self.head = 2 + readers
        size = 8 * (self.head + words)
        f = open(path, "r+b")  # noqa: SIM115 (kept open with the mapping)
        self.f = f
        self.mm = mmap.mmap(f.fileno(), size)
        self.a = numpy.frombuffer(self.mm, dtype=numpy.int64)
        self.seq = 0

    def _wait(self, cond):
        t0 = time.monotonic()
        n = 0
        while not cond():
            n += 1
            if n % 256 == 0 and time.monotonic() - t0 > SPIN_S:
                time.sleep(0.0002)

    def send(self, words):
        a = self.a
        if len(words) > self.words:
            raise ValueError("control message of %d words, room for %d" % (len(words), self.words))
        seq = self.seq
        self._wait(lambda: all(int(a[2 + r]) >= seq for r in range(self.readers)))
        a[self.head:self.head + len(words)] = words
        a[1] = len(words)
        a[0] = seq + 1
        self.seq = seq + 1

    def recv(self):
        a, seq = self.a, self.seq
        self._wait(lambda: int(a[0]) > seq)
        n = int(a[1])
        out = a[self.head:self.head + n].tolist()
        self.seq = int(a[0])
        a[2 + self.rank - 1] = self.seq
        return out
