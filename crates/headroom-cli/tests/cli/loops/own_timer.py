# The conformance loops' own timer, as a script would keep one: samples trained after the
# first iteration over the time from that iteration's end to the last one's. Imported by
# every loop here (they run with this folder as their working directory).
import time


class OwnTimer:
    def __init__(self):
        self.iterations = 0
        self.samples = 0
        self.first = None
        self.last = None

    def iteration(self, samples):
        now = time.perf_counter()
        self.iterations += 1
        if self.first is None:
            self.first = now
        else:
            self.samples += samples
        self.last = now

    def report(self):
        span = (self.last - self.first) if self.first is not None else 0.0
        rate = self.samples / span if span > 0 else 0.0
        print(f"own: iterations {self.iterations} samples/s {rate:.3f}", flush=True)
