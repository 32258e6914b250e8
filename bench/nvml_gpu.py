"""What the NVML bench scripts share (`nvml_power_granularity.py`, `nvml_counter_steady.py`):
their two arguments, the first GPU through ctypes on libnvidia-ml (no torch in the process that
polls), and its energy counter in joules."""
import ctypes, sys


def seconds_and_poll(seconds: float, poll_ms: float) -> tuple:
    """SECONDS and POLL_MS from the command line (these defaults where absent); the poll in s."""
    s = float(sys.argv[1]) if len(sys.argv) > 1 else seconds
    p = float(sys.argv[2]) if len(sys.argv) > 2 else poll_ms
    return s, p / 1000


def first_gpu() -> tuple:
    """NVML, initialised, and GPU 0's handle."""
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    assert nvml.nvmlInit_v2() == 0
    dev = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
    return nvml, dev


def energy_j(nvml, dev) -> float:
    """The GPU's energy counter (`nvmlDeviceGetTotalEnergyConsumption`), joules."""
    v = ctypes.c_ulonglong()
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(v)) == 0
    return v.value / 1000
