"""A work queue like client-go's: each key is queued once, and never handled by two workers at a time."""

import heapq
import threading
import time


class WorkQueue(object):
    def __init__(self):
        self._condition = threading.Condition()
        self._queue = []  # keys ready, in order
        self._queued = set()  # keys in _queue
        self._processing = set()  # keys a worker holds
        self._dirty = set()  # keys added while being processed: queued again by done()
        self._delayed = []  # heap of (due time, key)

    def add(self, key, delay=0.0):
        with self._condition:
            if delay > 0:
                heapq.heappush(self._delayed, (time.monotonic() + delay, key))
            else:
                self._add_now(key)
            self._condition.notify()

    def _add_now(self, key):
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)

    def get(self):
        """Block until a key is ready; the caller must call ``done(key)`` afterwards."""
        with self._condition:
            while True:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    self._add_now(heapq.heappop(self._delayed)[1])
                if self._queue:
                    key = self._queue.pop(0)
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                timeout = self._delayed[0][0] - now if self._delayed else None
                self._condition.wait(timeout)

    def done(self, key):
        with self._condition:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._add_now(key)
                self._condition.notify()
