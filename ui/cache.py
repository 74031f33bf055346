"""One bounded, thread-safe cache shared by every session of the server (least recently used out): the recorded
traces (ui.stepping.Recordings) and the figures built from them (ui.charts.Figures) both keep their entries here."""
from __future__ import annotations

import threading
from collections import OrderedDict


class SharedLRU:
    def __init__(self, size: int):
        self.size = size
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key, make):
        """The entry for key, or make() stored under it. make runs outside the lock (building a drafter or a figure
        takes a moment); if another session stored the key meanwhile, its entry wins, so all share one."""
        with self.lock:
            hit = self.items.get(key)
            if hit is not None:
                self.items.move_to_end(key)
                return hit
        value = make()
        with self.lock:
            value = self.items.setdefault(key, value)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value
