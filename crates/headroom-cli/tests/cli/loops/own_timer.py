# The conformance loops' own timer, as a script would keep one: samples trained after the
# first iteration over the time from that iteration's end to the last one's, less the time
# between pause() and resume() (a validation pass, where the script's own meter stops).
# Imported by every loop here (they run with this folder as their working directory).
import time


class OwnTimer:
    def __init__(self):
        self.iterations = 0
        self.samples = 0
        self.first = None
        self.last = None
        self.paused_at = None
        self.pauses = []

    def pause(self):
        self.paused_at = time.perf_counter()

    def resume(self):
        if self.paused_at is not None:
            self.pauses.append((self.paused_at, time.perf_counter()))
        self.paused_at = None

    def iteration(self, samples):
        now = time.perf_counter()
        self.iterations += 1
        if self.first is None:
            self.first = now
        else:
            self.samples += samples
        self.last = now

    def report(self):
        span = 0.0
        if self.first is not None:
            # Only the pauses between the first iteration and the last count.
            paused = sum(max(0.0, min(b, self.last) - max(a, self.first)) for a, b in self.pauses)
            span = self.last - self.first - paused
        rate = self.samples / span if span > 0 else 0.0
        print(f"own: iterations {self.iterations} samples/s {rate:.3f}", flush=True)
