# Headroom's observer of a training process, put on the import path by `headroom run`.
#
# It does nothing unless HEADROOM_EVENTS names Headroom's event socket, and nothing more than
# watching for one import unless the program imports torch: a program without torch runs as it
# would without Headroom. Once torch is imported it reports, as JSON lines on that socket (never
# on the program's stdout or stderr): the loop's training iterations (or inference iterations)
# and their times, batches and accumulation, the DataLoader's waits, epochs and settings, device
# memory at each iteration, autocast,
# torch.compile, activation checkpointing, the seed, CPU-fallback warnings and an out-of-memory
# exception. Any sitecustomize this file shadows still runs, after it.
#
# With HEADROOM_STALL_S set, a DataLoader that has not produced a batch for that many seconds is
# reported (with its workers alive or not) while the program waits: a hang is seen, not guessed.
# With HEADROOM_AMP set (`bf16`, `f16` or `off`), the program's outermost module calls run under
# torch.autocast with that dtype (`off`: the same hooks, no autocast), so that a sweep can
# measure mixed precision on a script that does not use it.
#
# With HEADROOM_RELEASE set (`gc`, `empty-cache`, `both` or `none`), every epoch end it sees
# first releases memory — `gc.collect()`, the device's `empty_cache()`, or both — and the epoch's
# memory is read after the release, with the allocator's cache before it: the runbook's release
# at each epoch, on the user's own script, without a code change.
#
# With HEADROOM_PROFILE_WINDOW=N set, torch.profiler records N training iterations (CPU and,
# on CUDA, the device's activity) after HEADROOM_PROFILE_WARMUP iterations (10): the
# operators' times are reported as a flag, and the Chrome trace is written into the folder
# HEADROOM_PROFILE_DIR names. The profiled iterations count, untimed.
#
# With HEADROOM_GATE set (a sweep that starts its next run while the current one is measured),
# the process stops before its first batch-sized work (its first DataLoader batch, its first
# module call or, at the latest, after its first optimizer step) and waits until Headroom creates
# the file that variable names: its start-up overlaps another run, its measurement does not.
# Its DataLoader's workers have started by then and prefetch while it waits; the sweep stops
# its whole group while another start is timed. (Waiting before the workers start was measured
# on the H200 — bench/README.md — and made each sweep about 5 s slower for no gain.)

import os
import sys


def _chain():
    """Runs the sitecustomize that this one shadows on the import path, if there is one."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


class _Observer:
    """The state of one process's observation; every hook below reports through it."""

    def __init__(self, address):
        import time

        self.address = address
        self.clock = time.perf_counter
        self.wall = time.time
        # Only the process Headroom started waits at the gate, once: the variable is taken out
        # of the environment so that its workers and subprocesses never see it, and a forked
        # child keeps its parent's pid here.
        self.gate_path = os.environ.pop("HEADROOM_GATE", None)
        self.gate_pid = os.getpid()
        self.gated = False
        try:
            self.stall_s = float(os.environ.get("HEADROOM_STALL_S", "0"))
        except ValueError:
            self.stall_s = 0.0
        self.amp = os.environ.get("HEADROOM_AMP") or None
        # How often what was buffered is sent (a sweep's start asks for less, to be stopped
        # soon after its timing settles).
        try:
            self.flush_s = float(os.environ.get("HEADROOM_FLUSH_S", "0.25"))
        except ValueError:
            self.flush_s = 0.25
        # Set while Headroom runs copies of the model itself (`headroom numerics`): its own
        # module calls are not the program's.
        self.quiet = False
        # The outermost call under way is on symbolic inputs (see `symbolic`).
        self.symbolic = False
        # Backward passes under way: a checkpointed block's forward run again inside one is no
        # module call of the loop, and a backward called inside one (reentrant checkpointing
        # calls one per block) is part of it, not another.
        self.in_backward = 0
        # The outermost modules given hooks of their own (ids): a forked child keeps them.
        self.hooked = set()
        # generate() calls under way (transformers): the model's calls inside are one iteration.
        self.generating = 0
        # A method call of the model's own (see outer_call) under way, not watched from its start.
        self.gen_pending = False
        # When the last outermost module call returned (clock).
        self.forward_done_at = None
        self.release = os.environ.get("HEADROOM_RELEASE") or None
        self.reset()

    def reset(self):
        """Fresh state (at start, and in a forked child, which must not resend its parent's).
        The lock is new too: a fork while another thread held it must not leave it held."""
        import threading

        self.lock = threading.Lock()
        self.stall_lock = threading.Lock()
        self.waiting_since = None
        self.waiting_iter = None
        self.stall_reported = None
        self.sock = None
        self.dead = False
        self.buffer = []
        self.last_flush = 0.0
        self.data_s = 0.0
        self.copy_s = 0.0
        self.batch = None
        # The loop's iterations (see _install): what closed, and what the open one holds.
        self.iters = 0
        self.infers = 0
        self.last_close = None
        self.last_kind = None
        self.backward = 0
        self.stepped = 0
        self.skipped = 0
        self.forwards = 0
        self.drawn = {}
        self.drawn_states = {}
        self.fresh = {}
        self.inputs = []
        self.began = False
        self.ever_backward = False
        self.ever_stepped = False
        self.optimizers = 0
        self.step_calls = {}
        self.pace = None
        self.paced = False
        self.cycle = set()
        self.last_stepper = None
        self.loader_batches = 0
        self.open_loaders = []
        # Evaluation passes (a loader's pass in which no training iteration ran, once the loop
        # trains: its validation) since the open iteration began: their time is no iteration's.
        self.eval_s = 0.0
        self.eval_pass = None
        # The trained model's calls in eval mode under no_grad: [first's start, last's end,
        # what the open iteration held before them, loader batches then].
        self.eval_calls = None
        # The observer stopped at a fault of its own (see `guarded`).
        self.off = False
        # Epochs ended by any loader's pass.
        self.epochs_ended = 0
        # Host syncs the program asked for in the open iteration (`.item()`, `.tolist()`, a
        # device tensor's `.cpu()`), and the time they took.
        self.syncs = 0
        self.sync_s = 0.0
        self.sync_site = None
        self.outer = {}
        self.main_outer = None
        # Whether the main module was chosen from a call with gradients on (see outer_call).
        self.main_grad = False
        # The outermost call under way was given no tensor the pre-hook could see: its
        # keywords are read after it (see outer_call).
        self.keywords_due = False
        self.layout_read = False
        self.layout_checked = set()
        self.depth = 0
        self.own_depth = 0
        self.seen = set()
        self.checkpoints = 0
        self.seeded = False
        self.device = None

    def end_wait(self, start):
        """A DataLoader wait that began at `start` ended: says so if it was reported a stall."""
        with self.stall_lock:
            self.waiting_since = None
            self.waiting_iter = None
            reported = self.stall_reported == start
            if reported:
                self.stall_reported = None
        if reported:
            self.send({"ev": "stall_end", "waited_s": self.clock() - start}, now=True)

    def gate(self):
        """Waits at the gate (see the file's head), once: says so beside it, then polls for it.
        Ends the process if Headroom is gone (its folder removed, or this process reparented)."""
        path = self.gate_path
        if self.gated or not path or os.getpid() != self.gate_pid:
            return
        self.gated = True
        import time

        self.flush()
        folder = os.path.dirname(path)
        parent = os.getppid()
        try:
            with open(path + ".waiting", "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            return
        while not os.path.exists(path):
            if not os.path.isdir(folder) or os.getppid() != parent:
                sys.stderr.write("headroom: the sweep that started this run is gone; exiting\n")
                sys.stderr.flush()
                os._exit(75)
            time.sleep(0.02)

    # The channel: one stream connection per process, opened at its first event.
    def send(self, event, now=False):
        import json

        event["pid"] = os.getpid()
        # An event may say when it happened (an epoch found over at the program's end).
        event.setdefault("t", self.wall())
        with self.lock:
            if self.dead:
                return
            self.buffer.append(json.dumps(event, separators=(",", ":")))
            if now or self.clock() - self.last_flush > self.flush_s:
                self.flush_locked()

    def flush(self):
        with self.lock:
            self.flush_locked()

    def flush_locked(self):
        import socket

        if not self.buffer or self.dead:
            return
        data = ("\n".join(self.buffer) + "\n").encode()
        self.buffer = []
        self.last_flush = self.clock()
        try:
            if self.sock is None:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.address)
                self.sock = s
            self.sock.sendall(data)
        except OSError:
            # Headroom is gone or never listened: the program runs on, unobserved.
            self.dead = True

    def flag(self, name, value=True):
        """A feature seen in use, reported once per value."""
        key = (name, value)
        if key not in self.seen:
            self.seen.add(key)
            self.send({"ev": "flag", "name": name, "value": value})


_SIZED = set()


def _memory(torch, device):
    """The device's memory now: what the allocator holds for live tensors, what it keeps."""
    try:
        if device.type == "cuda":
            s = torch.cuda.memory_stats(device)
            torch.cuda.reset_peak_memory_stats(device)
            m = {
                "device": str(device),
                "allocated": s.get("allocated_bytes.all.current", 0),
                "reserved": s.get("reserved_bytes.all.current"),
                "peak": s.get("allocated_bytes.all.peak"),
                "reserved_peak": s.get("reserved_bytes.all.peak"),
            }
            # The device's size and what was free, once per device (the budget of a sweep).
            if str(device) not in _SIZED:
                _SIZED.add(str(device))
                free, total = torch.cuda.mem_get_info(device)
                m["free"], m["total"] = free, total
            return m
        if device.type == "mps":
            return {
                "device": "mps",
                "allocated": torch.mps.current_allocated_memory(),
                "driver": torch.mps.driver_allocated_memory(),
                "recommended_max": torch.mps.recommended_max_memory(),
            }
    except Exception:
        return None
    return {"device": str(device)}


def _release(torch, device, policy):
    """The release policy at an epoch's end: garbage collected, the device's cache emptied."""
    import gc

    if policy in ("gc", "both"):
        gc.collect()
    if policy in ("empty-cache", "both") and device is not None:
        try:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
                torch.cuda.empty_cache()
            elif device.type == "mps":
                torch.mps.synchronize()
                torch.mps.empty_cache()
        except Exception:
            pass


def _start_method():
    """The multiprocessing start method in force, without fixing it (the program may still set
    one): the one set, else the platform's default."""
    import multiprocessing

    method = multiprocessing.get_start_method(allow_none=True)
    if method is None:
        try:
            method = multiprocessing.context._default_context._default_context._name
        except AttributeError:
            method = None
    return method


def _batch_size(batch):
    """The first dimension of the first tensor in a batch; for a batch of graphs (PyTorch
    Geometric's `Batch`, DGL's batched graph), its graphs, not the nodes its tensors stack."""
    for _ in range(4):
        shape = getattr(batch, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else None
        if isinstance(batch, dict):
            batch = next(iter(batch.values()), None)
        elif isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        else:
            for name in ("num_graphs", "batch_size"):
                try:
                    n = getattr(batch, name, None)
                except Exception:
                    n = None
                if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                    return n
            return None
    return None


def _install(torch, ob):
    """Hooks into a freshly imported torch."""
    import atexit
    import functools
    import warnings

    # The observer's own bookkeeping never raises into the program: a fault in it is reported
    # once (`probe_error`) and the observer stops there, every hook passing through, while the
    # program trains on. HEADROOM_OBSERVER_FAULT names a guarded function that raises instead
    # (Headroom's tests of this).
    fault = os.environ.get("HEADROOM_OBSERVER_FAULT")

    def guarded(fn):
        name = fn.__name__
        inject = fault == name

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if ob.off:
                return None
            try:
                if inject:
                    raise RuntimeError(f"a fault injected into {name}")
                return fn(*args, **kwargs)
            except Exception as e:
                ob.off = True
                ob.send({"ev": "probe_error", "message": f"{name}: {e!r}"[:2000]}, now=True)
                return None

        return call

    gate = ob.gate_path
    if gate and os.getpid() == ob.gate_pid:
        try:
            open(gate + ".armed", "w").close()
        except OSError:
            pass

    mps = getattr(torch.backends, "mps", None)
    ob.send(
        {
            "ev": "hello",
            "torch": torch.__version__,
            "mps_built": bool(mps and mps.is_built()),
            "mps_available": bool(mps and mps.is_available()),
            "start_method": _start_method(),
            "argv": sys.argv[:8],
        },
        now=True,
    )

    # Training iterations. A loop's unit of progress is its iteration, whatever the loop looks
    # like; its signals are optimizer steps (and steps a GradScaler skipped), backward calls,
    # DataLoader batches and calls of the outermost modules:
    # - with optimizers, an iteration ends at a step of the "pace" optimizer: the one that
    #   stepped last before any optimizer stepped a second time (one optimizer: itself; a GAN's
    #   D then G: G; a critic stepped five times per generator step: the critic);
    # - with no optimizer made (manual SGD on `.grad`), each backward call ends one;
    # - with no backward ever, each batch asked of a DataLoader (or, with none, each call of the
    #   first outermost module) ends an inference iteration, sent as such; a training loop's
    #   first step makes those void.
    # Its batches ("micro" batches) are the most batches one loader gave in it (else the most
    # fresh inputs one outermost module got), at most its backward calls: accumulation is
    # several backward calls over different batches before one step.
    from torch.optim import optimizer as optim_module
    from torch.optim.optimizer import register_optimizer_step_post_hook
    import weakref

    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)
    Tensor = torch.Tensor

    from torch.utils.data import get_worker_info

    # Host syncs: `.item()`, `.tolist()`, a device tensor's `.cpu()` and a tensor printed or
    # formatted (`print(loss)`, `f"{loss:.3f}"`, which read it back) called from the program
    # (torch's own calls, an optimizer reading its step count, are not the program's), counted
    # per iteration with the time they blocked; the first call site is named once.
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep

    def site_of(frame):
        """`file.py:LINE`, or `In[N] line L` for a notebook cell (IPython's own cell names)."""
        path = frame.f_code.co_filename
        if "ipykernel_" in path or path.startswith("<ipython-input"):
            ipython = sys.modules.get("IPython")
            shell = getattr(ipython, "get_ipython", lambda: None)()
            cells = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
            if path in cells:
                return f"In[{cells[path]}] line {frame.f_lineno}"
        return f"{os.path.basename(path)}:{frame.f_lineno}"

    def counted(name, real, device_only):
        label = {"__repr__": "print()", "__format__": "format()"}.get(name, f".{name}()")

        @functools.wraps(real)
        def call(self, *args, **kwargs):
            if compiling() or (device_only and self.device.type == "cpu") or (
                get_worker_info() is not None
            ):
                return real(self, *args, **kwargs)
            frame = sys._getframe(1)
            if frame.f_code.co_filename.startswith(torch_dir):
                return real(self, *args, **kwargs)
            start = ob.clock()
            try:
                return real(self, *args, **kwargs)
            finally:
                ob.syncs += 1
                ob.sync_s += ob.clock() - start
                if ob.sync_site is None:
                    ob.sync_site = f"{site_of(frame)} {label}"
                    ob.flag("sync_site", ob.sync_site)

        return call

    for name, device_only in (
        ("item", False),
        ("tolist", False),
        ("cpu", True),
        ("__repr__", False),
        ("__format__", False),
    ):
        real = getattr(Tensor, name, None)
        if real is not None:
            setattr(Tensor, name, counted(name, real, device_only))

    @guarded
    def began():
        if not ob.began and get_worker_info() is None:
            ob.began = True
            ob.send({"ev": "begin"}, now=True)

    def training():
        return ob.ever_backward or ob.ever_stepped

    window = _ProfileWindow(torch, ob)

    def held():
        """What the open iteration has gathered so far (waits, copies, syncs, its batch and
        its fresh inputs): given back by `evaluated` if what follows is an evaluation."""
        return (ob.data_s, ob.copy_s, ob.syncs, ob.sync_s, ob.batch, dict(ob.fresh))

    def evaluated(began_at, ended_at, was):
        """An evaluation ran from `began_at` to `ended_at`: its time is no iteration's, and what
        the open iteration held before it (`was`, from `held`) is given back — its inputs
        were never trained on, no batch or accumulation is read from them."""
        ob.eval_s += max(ended_at - began_at, 0.0)
        ob.data_s, ob.copy_s, ob.syncs, ob.sync_s, ob.batch, ob.fresh = was

    @guarded
    def evaluation_calls_end():
        """The model's evaluation calls (see `outer_call`) are over: their time, and what the
        open iteration gathered meanwhile, belong to no iteration — unless a DataLoader gave
        batches through them (its evaluation pass is taken off on its own)."""
        began_at, ended_at, was, batches = ob.eval_calls
        ob.eval_calls = None
        if batches == ob.loader_batches:
            evaluated(began_at, ended_at, was)

    @guarded
    def close(kind, at=None):
        """An iteration of `kind` ended, now or `at` (a clock reading before now)."""
        # A DataLoader worker (its transforms may be modules) runs no iteration of the loop.
        if get_worker_info() is not None:
            return
        if ob.eval_calls is not None:
            evaluation_calls_end()
        now = ob.clock() if at is None else at
        if kind == "train":
            ob.iters += 1
            n = ob.iters
            # A pass that ran out while batches drawn ahead of their iteration were still to
            # train (a prefetcher holding the next batch, accelerate's loader): the iterations
            # after its end train them, drawing nothing.
            for state in ob.open_loaders:
                if (state["due"] and state["consumed"] < state["drawn"]
                        and id(state) not in ob.drawn_states):
                    ob.drawn_states[id(state)] = state
            # A loader's batches not yet trained (one prefetched ahead by accelerate, say)
            # count where the loader gave a batch in this iteration.
            drawn = max((s["drawn"] - s["consumed"] for s in ob.drawn_states.values()),
                        default=0) or max(ob.fresh.values(), default=0)
            micro = min(drawn, ob.backward) if ob.backward else drawn
        else:
            ob.infers += 1
            n = ob.infers
            micro = 1
        micro = max(micro, 1)
        device = ob.device
        event = {
            "ev": "step",
            "kind": kind,
            "n": n,
            "data_ms": ob.data_s * 1e3,
            "copy_ms": ob.copy_s * 1e3,
            "backward": ob.backward,
            "micro": micro,
            "opt": ob.stepped,
            "skipped": ob.skipped,
            "batch": ob.batch,
            "mem": _memory(torch, device) if device is not None else None,
            "syncs": ob.syncs,
            "sync_ms": ob.sync_s * 1e3,
        }
        ob.syncs, ob.sync_s = 0, 0.0
        if ob.last_close is not None and ob.last_kind == kind and not window.busy():
            event["ms"] = max(now - ob.last_close - ob.eval_s, 0.0) * 1e3
        if ob.eval_s > 0:
            event["eval_ms"] = ob.eval_s * 1e3
        ob.eval_s = 0.0
        ob.last_close, ob.last_kind = now, kind
        ob.data_s = ob.copy_s = 0.0
        ob.backward = ob.stepped = ob.skipped = ob.forwards = 0
        ob.drawn = {}
        if kind == "train":
            ob.fresh = {}
            ob.inputs = []
        if at is not None:
            event["t"] = ob.wall() - (ob.clock() - at)
        ob.send(event)
        if window.tick(kind, n, event.get("ms")):
            # The profiler's start or its trace's writing is no iteration's time.
            ob.last_close = ob.clock()
        if kind == "train":
            if ob.eval_pass is not None:
                # An evaluation pass stopped at its length, and no loader asked for since: it
                # ran into this iteration, where it ended is not known, so nothing is taken
                # off; it ends, no epoch.
                pending, ob.eval_pass = ob.eval_pass, None
                loader_done(pending)
            for state in ob.drawn_states.values():
                state["consumed"] = min(state["drawn"], state["consumed"] + micro)
                state["trained"] += 1
            for state in list(ob.open_loaders):
                if state["due"] and state["consumed"] >= state["drawn"]:
                    loader_done(state)
        # Batches an inference iteration used (a framework's check of its validation before
        # training) were not trained either.
        ob.drawn_states = {}
        # The outermost modules are found over five iterations. Found over inference alone
        # (a policy's rollouts before its first update, a framework's sanity check), they
        # are looked for again once the loop trains: its updates may call other modules (the
        # policy's sub-networks).
        if ob.outer is not None and (ob.iters >= 5 or (not ob.iters and ob.infers >= 5)):
            settle_outer()
        elif ob.outer is None and kind == "train" and ob.iters == 1:
            discover()

    def device_of(optimizer):
        device = getattr(optimizer, "_headroom_device", None)
        if device is None:
            device = torch.device("cpu")
            for group in optimizer.param_groups:
                if group["params"]:
                    device = group["params"][0].device
                    break
            try:
                optimizer._headroom_device = device
            except Exception:
                pass
        return device

    @guarded
    def on_step(optimizer, skipped):
        began()
        oid = id(optimizer)
        ob.ever_stepped = True
        ob.stepped += 1
        ob.skipped += skipped
        ob.device = device_of(optimizer)
        if not ob.seeded:
            ob.seeded = True
            ob.flag("seed", torch.initial_seed())
        if ob.paced and oid not in ob.cycle:
            # An optimizer made anew (each epoch, say): its cycle is learnt again.
            ob.paced, ob.cycle, ob.pace = False, set(), None
        if not ob.paced:
            if oid in ob.cycle:
                ob.pace, ob.paced = ob.last_stepper, True
            else:
                ob.cycle.add(oid)
        ob.last_stepper = oid
        if ob.pace is None:
            ob.pace = oid
        if oid == ob.pace:
            close("train")

    @guarded
    def after_step(optimizer, args, kwargs):
        # A program that reached its first step without a batch or a module call waits here.
        ob.gate()
        ob.step_calls[id(optimizer)] = ob.step_calls.get(id(optimizer), 0) + 1
        on_step(optimizer, False)

    register_optimizer_step_post_hook(after_step)

    real_optimizer_init = optim_module.Optimizer.__init__

    @functools.wraps(real_optimizer_init)
    def optimizer_init(self, *args, **kwargs):
        ob.optimizers += 1
        return real_optimizer_init(self, *args, **kwargs)

    optim_module.Optimizer.__init__ = optimizer_init

    # A GradScaler that found inf/NaN gradients skips the optimizer's step: the iteration ran
    # all the same.
    scaler_class = getattr(getattr(torch, "amp", None), "GradScaler", None)
    if scaler_class is not None:
        real_scaler_step = scaler_class.step

        @functools.wraps(real_scaler_step)
        def scaler_step(self, optimizer, *args, **kwargs):
            before = ob.step_calls.get(id(optimizer), 0)
            out = real_scaler_step(self, optimizer, *args, **kwargs)
            if ob.step_calls.get(id(optimizer), 0) == before:
                on_step(optimizer, True)
            return out

        scaler_class.step = scaler_step

    real_backward = torch.autograd.backward

    @guarded
    def backward_done():
        if not compiling():
            ob.backward += 1
            ob.ever_backward = True
            if ob.optimizers == 0:
                close("train")

    def outermost(real, done, begin=False):
        """`real` (a backward, a gradient) wrapped so that `done` follows it only when no other
        backward is under way: one called inside one is part of it."""

        @functools.wraps(real)
        def call(*args, **kwargs):
            if begin:
                began()
            ob.in_backward += 1
            try:
                out = real(*args, **kwargs)
            finally:
                ob.in_backward -= 1
            if not ob.in_backward:
                done()
            return out

        return call

    torch.autograd.backward = outermost(real_backward, backward_done, begin=True)

    # Gradients taken with torch.autograd.grad and applied by hand (functional loops) end an
    # iteration each where no optimizer exists; beside an optimizer (a gradient penalty, an
    # inner loop) they are part of its iteration.
    real_grad = torch.autograd.grad

    @guarded
    def grad_done():
        if ob.optimizers == 0 and not compiling():
            began()
            ob.backward += 1
            ob.ever_backward = True
            close("train")

    torch.autograd.grad = outermost(real_grad, grad_done)

    # The outermost module calls: the batch and the accumulation of a loop without a
    # DataLoader, and inference without one. Global hooks find the outermost modules over the
    # first iterations; then hooks on those modules alone take over (every other module's call
    # keeps its fast path).
    def first_tensor(value):
        return _first_tensor(Tensor, value)

    def known(ptr):
        for ref in ob.inputs:
            t = ref()
            if t is not None:
                try:
                    if t.data_ptr() == ptr:
                        return True
                except Exception:
                    pass
        return False

    def remember(t):
        if len(ob.inputs) >= 64:
            ob.inputs = [r for r in ob.inputs if r() is not None]
        if len(ob.inputs) < 64:
            try:
                ob.inputs.append(weakref.ref(t))
            except TypeError:
                pass

    # Layers that declare their layout (a `batch_first` flag: RNNs, attention, transformer
    # layers). Where it is False their input is (sequence, batch, features): a sequence-first
    # language model's outermost input is (sequence, batch) too, so its first dimension is not
    # the batch. The first such layer called in a forward pass says what the batch is, whatever
    # the loop or its loader gave (a transposed input included).
    @guarded
    def layout_pre(module, args):
        if ob.layout_read or get_worker_info() is not None:
            return
        ob.layout_read = True
        t = args[0] if args else None
        batch = None
        if type(t).__name__ == "PackedSequence":
            sizes = getattr(t, "batch_sizes", None)
            if sizes is not None and len(sizes):
                batch = int(sizes[0])
        elif isinstance(t, Tensor) and t.dim() == 3:
            batch = int(t.shape[0 if module.batch_first else 1])
        if batch:
            ob.batch = batch

    def watch_layout(module):
        if id(module) in ob.layout_checked:
            return
        ob.layout_checked.add(id(module))
        hooked = 0
        for sub in module.modules():
            if hooked < 8 and isinstance(getattr(sub, "batch_first", None), bool):
                try:
                    sub.register_forward_pre_hook(layout_pre)
                    hooked += 1
                except Exception:
                    pass

    def outer_call(module, args, kwargs=None):
        if get_worker_info() is not None:
            return
        ob.gate()
        began()
        ob.forwards += 1
        ob.layout_read = False
        mid = id(module)
        watch_layout(module)
        if ob.outer is not None:
            ob.outer.setdefault(mid, module)
            # The main module is the model the loop runs: the first outermost module called,
            # unless that call had gradients off and a later one has them on — a frozen
            # teacher called before the student it distils into is not the model trained.
            grad = torch.is_grad_enabled()
            if ob.main_outer is None or (grad and not ob.main_grad):
                ob.main_outer, ob.main_grad = mid, grad
        # A model that runs itself from a method of its own (a `generate()` that calls the
        # model once per new token): the method's call is the inference iteration.
        if (ob.outer is not None and mid == ob.main_outer and not ob.generating
                and not ob.loader_batches and not training()):
            code = own_method_loop(module)
            if code is not None and watch_method(module, code):
                # The call under way began before its method was watched: it ends where the
                # method is next entered, or with the program.
                ob.generating += 1
                ob.gen_pending = True
        # The trained model called in eval mode under no_grad, once the loop trains: its
        # evaluation (the classic language model's `evaluate()`, nanoGPT's `estimate_loss`),
        # from the first such call to the end of the last — over until the model is called
        # otherwise or an iteration ends. Other modules' calls (its loss module, a teacher, a
        # momentum encoder) neither begin nor end it.
        if mid == ob.main_outer and training():
            if not module.training and not torch.is_grad_enabled():
                if ob.eval_calls is None:
                    now = ob.clock()
                    ob.eval_calls = [now, now, held(), ob.loader_batches]
            elif ob.eval_calls is not None:
                evaluation_calls_end()
        if ob.device is None:
            for p in module.parameters():
                ob.device = p.device
                break
        t = first_tensor(args)
        # Inputs passed by keyword (`model(input_ids=x, labels=y)`, `model(**batch)`): a
        # global pre-hook is given no keywords (`kwargs` None), the global post-hook is.
        if t is None and kwargs:
            t = first_tensor(kwargs)
        ob.keywords_due = t is None and kwargs is None
        if t is not None:
            input_seen(mid, t)

    def input_seen(mid, t):
        """The outermost module `mid` was given `t` first: a fresh batch, unless it is a
        tensor the loop's modules have given or been given already."""
        try:
            ptr = t.data_ptr()
        except Exception:
            return
        if ptr and not known(ptr):
            ob.fresh[mid] = ob.fresh.get(mid, 0) + 1
            if not ob.drawn and len(t.shape):
                ob.batch = int(t.shape[0])
        remember(t)

    def outer_done(module, output):
        ob.forward_done_at = ob.clock()
        t = first_tensor(output)
        if t is not None:
            remember(t)
        if ob.eval_calls is not None and id(module) == ob.main_outer:
            ob.eval_calls[1] = ob.clock()
        if (not training() and ob.loader_batches == 0 and id(module) == ob.main_outer
                and not ob.generating):
            close("infer")

    def symbolic(args):
        """Whether a call's inputs hold no data: Keras building a model on a `KerasTensor`
        (its batch dimension None), torch.fx tracing it with proxies, a shape pass on the meta
        device. Such a call is no iteration and does not make its module the model."""
        v = args[0] if args else None
        if v is None:
            return False
        if isinstance(v, Tensor):
            return v.device.type == "meta"
        if type(v).__name__ == "Proxy":
            return True
        shape = getattr(v, "shape", None)
        try:
            return shape is not None and any(d is None for d in shape)
        except TypeError:
            return False

    def outer_begins(module, args, kwargs=None):
        if symbolic(args):
            ob.symbolic = True
        else:
            outer_call(module, args, kwargs)

    def outer_ends(module, output):
        if ob.symbolic:
            ob.symbolic = False
        else:
            outer_done(module, output)

    @guarded
    def global_pre(module, args):
        if compiling() or ob.quiet or ob.in_backward:
            return
        # A module with hooks of its own (found before) is seen through them.
        if ob.depth == 0 and id(module) not in ob.hooked:
            outer_begins(module, args)
        ob.depth += 1

    @guarded
    def global_post(module, args, *rest):
        # (kwargs, output) where the hook is given keywords, else (output,).
        if compiling() or ob.quiet or ob.in_backward:
            return
        ob.depth = max(ob.depth - 1, 0)
        if ob.depth == 0 and id(module) not in ob.hooked:
            if ob.keywords_due:
                ob.keywords_due = False
                t = first_tensor(rest[0]) if len(rest) == 2 else None
                if t is not None and not ob.symbolic:
                    input_seen(id(module), t)
            outer_ends(module, rest[-1])

    @guarded
    def own_pre(module, args, kwargs=None):
        if compiling() or ob.quiet or ob.in_backward:
            return
        if ob.own_depth == 0:
            outer_begins(module, args, kwargs)
        ob.own_depth += 1

    @guarded
    def own_post(module, args, output):
        if compiling() or ob.quiet or ob.in_backward:
            return
        ob.own_depth = max(ob.own_depth - 1, 0)
        if ob.own_depth == 0:
            outer_ends(module, output)

    from torch.nn.modules import module as nn_module

    global_hooks = []
    compile_filter = []

    def discover():
        """Global hooks find the outermost modules over the iterations to come, until
        `settle_outer` hands them hooks of their own."""
        global_hooks.append(nn_module.register_module_forward_pre_hook(global_pre))
        try:
            global_hooks.append(nn_module.register_module_forward_hook(
                global_post, with_kwargs=True, always_call=True))
        except TypeError:
            global_hooks.append(
                nn_module.register_module_forward_hook(global_post, always_call=True))
        # torch.compile warns at a compiled module's call while any global module hook is
        # set: while these (Headroom's, not the program's) are, that warning is Headroom's
        # doing and not shown.
        warnings.filterwarnings(
            "ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks",
            category=UserWarning)
        compile_filter.append(warnings.filters[0])
        if ob.outer is None:
            ob.outer = {}

    discover()

    @guarded
    def settle_outer():
        """Hands the outermost modules found so far their own hooks and drops the global ones
        (called between iterations, where no module call is under way)."""
        found, ob.outer = ob.outer or {}, None
        # Removing a global forward hook given keywords leaves its id in torch's
        # `_global_forward_hooks_with_kwargs` (torch 2.11): every module call of the program
        # would then go on taking the hooked path, and torch.compile warn of global hooks.
        with_kwargs = getattr(nn_module, "_global_forward_hooks_with_kwargs", {})
        while global_hooks:
            handle = global_hooks.pop()
            handle.remove()
            with_kwargs.pop(handle.id, None)
        while compile_filter:
            try:
                warnings.filters.remove(compile_filter.pop())
                warnings._filters_mutated()
            except Exception:
                pass
        ob.depth = 0
        for mid, module in found.items():
            if mid in ob.hooked:
                continue
            ob.hooked.add(mid)
            try:
                try:
                    module.register_forward_pre_hook(own_pre, with_kwargs=True)
                except TypeError:
                    module.register_forward_pre_hook(own_pre)
                module.register_forward_hook(own_post, always_call=True)
            except Exception:
                pass

    # The DataLoader: settings once per loader, batches and waits, epochs.
    from torch.utils.data import dataloader as dl

    real_iter = dl.DataLoader.__iter__
    real_next = dl._BaseDataLoaderIter.__next__

    @guarded
    def loader_done(state, at=None):
        """The loader's pass ended: an epoch, if training iterations ran in it and trained on
        its batches (a pass a framework stops at its length ends after the iteration of its
        last batch; a validation pass between two epochs is none). A pass left before its
        end (asked anew without being exhausted) is an epoch too (a loop that breaks after so
        many steps), unless another loader's pass ended as one meanwhile: loaders zipped in
        one loop end their epochs with the shortest."""
        ran = ob.iters - state["from_step"]
        left = not state.get("due") and ob.epochs_ended > state.get("epochs_before", 0)
        if state["open"] and ran > 0 and state.get("trained", 0) > 0 and not left:
            state["epochs"] += 1
            state["last_ran"] = ran
            ob.epochs_ended += 1
            device = ob.device
            event = {"ev": "epoch", "n": state["epochs"], "steps": ran, "start": state["start"]}
            if at is not None:
                event["t"] = at
            if ob.release and ob.release != "none":
                # What the allocator kept before the release, then the release itself.
                before = _memory(torch, device) if device is not None else None
                if before is not None and before.get("reserved") is not None:
                    event["cache_before"] = max(0, before["reserved"] - before["allocated"])
                elif before is not None and before.get("driver") is not None:
                    event["cache_before"] = max(0, before["driver"] - before["allocated"])
                _release(torch, device, ob.release)
            event["mem"] = _memory(torch, device) if device is not None else None
            ob.send(event, now=True)
        state["open"] = False
        if state in ob.open_loaders:
            ob.open_loaders.remove(state)

    def evaluation(state):
        """Whether the pass of `state`, now at its end, was an evaluation: no training
        iteration ran from its start to its last batch, in a loop that trains."""
        first = state.get("first")
        return training() and first is not None and first[0] == ob.iters

    @guarded
    def pass_evaluated(state, end):
        """Ends an evaluation pass (see `evaluation`) at `end`: it is no iteration's, and its
        batches (drawn with grad on, as HF's evaluation does) were never trained."""
        if ob.eval_pass is state:
            ob.eval_pass = None
        _, began_at, was = state["first"]
        evaluated(began_at, end, was)
        ob.drawn.pop(id(state), None)
        ob.drawn_states.pop(id(state), None)
        loader_done(state)

    @guarded
    def pass_begins(self):
        """A pass over a loader begins: its state (made at the loader's first pass)."""
        state = self.__dict__.get("_headroom")
        if state is None:
            state = {"epochs": 0, "open": False, "from_step": 0}
            self.__dict__["_headroom"] = state
            context = self.multiprocessing_context
            ob.send(
                {
                    "ev": "loader",
                    "num_workers": self.num_workers,
                    "pin_memory": bool(self.pin_memory),
                    "persistent_workers": bool(self.persistent_workers),
                    "start_method": (
                        context.get_start_method() if context is not None else _start_method()
                    ),
                    "worker_init_fn": self.worker_init_fn is not None,
                    "batch_size": self.batch_size,
                }
            )
        loader_done(state)
        # Where the pass began (its workers' start included), and what the open iteration
        # held then: given back if the pass turns out to be an evaluation.
        first = (ob.iters, ob.clock(), held())
        state.update(open=True, from_step=ob.iters, start=ob.wall(), drawn=0, consumed=0,
                     due=False, trained=0, first=first, epochs_before=ob.epochs_ended)
        ob.open_loaders.append(state)
        return state

    def loader_iter(self):
        state = pass_begins(self)
        it = real_iter(self)
        if state is not None:
            try:
                it._headroom = state
            except Exception:
                pass
        return it

    @guarded
    def batch_asked(self):
        """A batch is asked of a loader: when, and the state of its pass."""
        ob.gate()
        began()
        # Inference: a batch asked for ends the iteration of the one before.
        if not training() and ob.forwards and ob.drawn:
            close("infer")
        start = ob.clock()
        state = getattr(self, "_headroom", None)
        if ob.eval_pass is not None and ob.eval_pass is not state:
            # An evaluation that stopped at its length ends where another loader is asked.
            pass_evaluated(ob.eval_pass, start)
        with ob.stall_lock:
            ob.waiting_iter = self
            ob.waiting_since = start
        return start, state

    @guarded
    def pass_ended(start, state):
        """The loader's pass ran out of batches."""
        ob.end_wait(start)
        if not training() and ob.forwards and ob.drawn:
            close("infer")
        if state is not None:
            state["due"] = True
            if evaluation(state):
                pass_evaluated(state, ob.clock())
            elif state["consumed"] >= state["drawn"] or not training():
                loader_done(state)

    def loader_next(self):
        asked = batch_asked(self)
        if asked is None:
            return real_next(self)
        start, state = asked
        try:
            batch = real_next(self)
        except StopIteration:
            pass_ended(start, state)
            raise
        except BaseException:
            ob.end_wait(start)
            raise
        batch_given(self, start, state, batch)
        return batch

    @guarded
    def batch_given(self, start, state, batch):
        """A batch was given: its wait, its size, and what its pass has given so far."""
        ob.end_wait(start)
        ob.data_s += ob.clock() - start
        ob.loader_batches += 1
        key = id(state) if state is not None else 0
        # A batch asked for under no_grad once the loop trains is evaluated, not trained.
        evaluated = training() and not torch.is_grad_enabled()
        if not evaluated:
            ob.drawn[key] = ob.drawn.get(key, 0) + 1
            if state is not None:
                ob.drawn_states[key] = state
            size = _batch_size(batch)
            # Loaders zipped in one iteration: the batch is the first one's (the labelled
            # batch beside its unlabelled one, the source beside the target).
            if size is not None and len(ob.drawn) == 1:
                ob.batch = size
        if state is not None:
            if not evaluated:
                state["drawn"] += 1
            try:
                if self._num_yielded >= len(self):
                    state["due"] = True
                    # A pass stopped at its length (Lightning's validation) is over once
                    # its last batch is evaluated: where the next loader is asked.
                    if evaluation(state):
                        ob.eval_pass = state
            except Exception:
                pass

    dl.DataLoader.__iter__ = loader_iter
    dl._BaseDataLoaderIter.__next__ = loader_next
    if ob.stall_s > 0:
        _watch_stalls(ob)

    if ob.amp:
        _force_amp(torch, ob)
    if os.environ.get("HEADROOM_NUMERICS"):
        _numerics(torch, ob)
    if ob.release:
        ob.flag("release_forced", ob.release)

    # Host-to-device copies (`.to(device)`, `.cuda()` of a CPU tensor): their time, so that the
    # pin_memory advice rests on a measure. A blocking copy waits for the device's queued work
    # anyway; that wait is taken first, outside the timer, so only the copy is counted.
    # Skipped while torch.compile traces.
    def target(args, kwargs):
        where = kwargs.get("device")
        if where is None and args:
            where = args[0]
        if isinstance(where, Tensor):
            return where.device.type
        if isinstance(where, int):
            return "cuda"
        if isinstance(where, (str, torch.device)):
            return torch.device(where).type
        return None

    def settle(kind):
        if kind == "cuda" and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        elif kind == "mps":
            torch.mps.synchronize()

    def timed_copy(real, fixed=None):
        @functools.wraps(real)
        def copy(self, *args, **kwargs):
            if self.device.type != "cpu" or compiling():
                return real(self, *args, **kwargs)
            kind = fixed or target(args, kwargs)
            if kind in (None, "cpu", "meta"):
                return real(self, *args, **kwargs)
            # A copy from pageable memory waits for the device's queued work whatever
            # non_blocking says (only a pinned source can overlap it), so that wait is taken
            # outside the timer as well: the timer holds the copy, not the step's compute.
            blocking = not kwargs.get("non_blocking") and True not in args[1:]
            if blocking or not self.is_pinned():
                settle(kind)
            start = ob.clock()
            out = real(self, *args, **kwargs)
            ob.copy_s += ob.clock() - start
            return out

        return copy

    Tensor.to = timed_copy(Tensor.to)
    Tensor.cuda = timed_copy(Tensor.cuda, "cuda")

    # Precision, compilation, checkpointing.
    autocast = torch.amp.autocast_mode.autocast
    real_enter = autocast.__enter__

    def autocast_enter(self):
        result = real_enter(self)
        if getattr(self, "_enabled", False):
            dtype = str(getattr(self, "fast_dtype", "")).replace("torch.", "")
            ob.flag("autocast", f"{self.device}:{dtype}")
        return result

    autocast.__enter__ = autocast_enter

    real_compile = torch.compile

    @functools.wraps(real_compile)
    def compile(*args, **kwargs):
        ob.flag("compile")
        return real_compile(*args, **kwargs)

    torch.compile = compile

    # Generation with transformers: `model.generate()` runs the model once per new token, and
    # the loop's iteration is the call (a batch of sequences), not each token's forward. With
    # no DataLoader and no training, each outermost call of generate() ends one inference
    # iteration at its input's batch.
    def watch_generation(module):
        mixin = getattr(module, "GenerationMixin", None)
        real_generate = getattr(mixin, "generate", None)
        if real_generate is None or getattr(real_generate, "_headroom", False):
            return
        mixin.generate = one_iteration(real_generate)

    def one_iteration(real):
        """`real` (a method that runs the model once per new token) wrapped so that each of
        its outermost calls is one inference iteration (see `generated`)."""

        @functools.wraps(real)
        def call(self, *args, **kwargs):
            if ob.gen_pending:
                end_pending()
            ob.generating += 1
            try:
                return real(self, *args, **kwargs)
            finally:
                ob.generating -= 1
                if not ob.generating:
                    generated(args, kwargs)

        call._headroom = True
        return call

    def own_method_loop(module):
        """The code of the method of `module` itself that is calling it now (its own
        `generate()`), or None: the first frame above the hooks and torch's call machinery."""
        skip = (outer_call.__code__.co_filename, nn_module.__file__)
        f = sys._getframe(2)
        for _ in range(12):
            if f is None:
                return None
            if f.f_code.co_filename not in skip:
                break
            f = f.f_back
        else:
            return None
        code = f.f_code
        if code.co_name in ("forward", "__call__", "_call_impl", "_wrapped_call_impl"):
            return None
        try:
            if f.f_locals.get("self") is not module:
                return None
        except Exception:
            return None
        return code

    def watch_method(module, code):
        """Wraps the method of `module`'s class whose code is `code` (through its decorators,
        `torch.no_grad()` say) so that each of its calls is one inference iteration."""
        cls, name = type(module), code.co_name
        real = cls.__dict__.get(name, getattr(cls, name, None))
        inner = real
        for _ in range(6):
            if inner is None or getattr(inner, "_headroom", False):
                return False
            if getattr(inner, "__code__", None) is code:
                break
            inner = getattr(inner, "__wrapped__", None)
        else:
            return False

        try:
            setattr(cls, name, one_iteration(real))
        except Exception:
            return False
        return True

    @guarded
    def end_pending():
        """The method call under way when its method was watched is over: one iteration,
        ended with its last forward pass."""
        ob.gen_pending = False
        ob.generating = max(ob.generating - 1, 0)
        if not training() and not ob.loader_batches and ob.forward_done_at is not None:
            close("infer", at=ob.forward_done_at)

    @guarded
    def generated(args, kwargs):
        if training() or ob.loader_batches or get_worker_info() is not None:
            return
        t = first_tensor(args)
        if t is None:
            t = first_tensor(kwargs.get("input_ids", kwargs.get("inputs", kwargs)))
        if t is not None and len(t.shape):
            ob.batch = int(t.shape[0])
        close("infer")

    generation = sys.modules.get("transformers.generation.utils")
    if generation is not None:
        watch_generation(generation)
    else:
        sys.meta_path.insert(0, _ImportWatch("transformers.generation.utils", watch_generation))

    import torch.utils.checkpoint as checkpointing

    real_checkpoint = checkpointing.checkpoint

    @functools.wraps(real_checkpoint)
    def checkpoint(*args, **kwargs):
        ob.checkpoints += 1
        if ob.checkpoints == 1:
            ob.flag("checkpoint")
        return real_checkpoint(*args, **kwargs)

    checkpointing.checkpoint = checkpoint

    # CPU fallbacks, as PyTorch warns of them.
    real_show = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if "fall back to run on the CPU" in text:
            ob.send({"ev": "warning", "message": text[:2000]})
        return real_show(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning

    # An out-of-memory error that ends the program.
    real_hook = sys.excepthook

    def excepthook(kind, value, tb):
        text = str(value)
        if isinstance(value, getattr(torch, "OutOfMemoryError", ())) or "out of memory" in text:
            ob.send({"ev": "oom", "message": text[:2000]}, now=True)
        return real_hook(kind, value, tb)

    sys.excepthook = excepthook

    def at_exit():
        if ob.gen_pending:
            end_pending()
        # An inference iteration over a loader's last batch, where the loop stopped at the
        # loader's length (Lightning's predict) and asked for no batch after it, ended with its
        # last forward pass.
        if not training() and ob.forwards and ob.drawn and ob.forward_done_at is not None:
            close("infer", at=ob.forward_done_at)
        # A pass whose last batch was given and trained ends with the program; so does one
        # left before its end after as many iterations as the loader's epoch before it (a
        # loop that breaks after so many steps each epoch), not one cut short (a step limit).
        for state in list(ob.open_loaders):
            whole = state.get("last_ran") == ob.iters - state.get("from_step", 0)
            if state.get("due"):
                loader_done(state)
            elif whole and ob.last_close is not None:
                # It ended with its last iteration, not with the program.
                loader_done(state, at=ob.wall() - (ob.clock() - ob.last_close))
        # A window the program ended in is reported as far as it went.
        window.finish(cut=True)
        ob.send({"ev": "end", "steps": ob.iters, "checkpoints": ob.checkpoints}, now=True)
        ob.flush()

    atexit.register(at_exit)


class _ProfileWindow:
    """torch.profiler over a window of the loop's iterations (see the file's head), in the
    process that trains; reported once, as the flag `profile`."""

    # Host calls that wait for the device: the syncs a profile shows.
    WAITS = (
        "aten::_local_scalar_dense",
        "aten::item",
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
    )

    def __init__(self, torch, ob):
        self.torch = torch
        self.ob = ob
        try:
            self.size = max(0, int(os.environ.get("HEADROOM_PROFILE_WINDOW", "0")))
            self.warmup = max(1, int(os.environ.get("HEADROOM_PROFILE_WARMUP", "10")))
        except ValueError:
            self.size, self.warmup = 0, 10
        self.folder = os.environ.get("HEADROOM_PROFILE_DIR")
        self.prof = None
        self.done = self.size == 0
        self.kind = None
        self.first = 0
        self.last = 0
        self.started = 0.0
        self.before = []

    def busy(self):
        return self.prof is not None

    def tick(self, kind, n, ms):
        """After iteration `n` of `kind` closed: starts or ends the window. True when it did
        (the time that took is no iteration's)."""
        if self.done:
            return False
        if self.prof is None:
            if ms is not None:
                self.before = (self.before + [ms])[-10:]
            if n < self.warmup or (kind != "train" and self.ob.ever_backward):
                return False
            return self.start(kind, n)
        if kind != self.kind:
            return False
        self.last = n
        if n - self.first >= self.size:
            self.finish(cut=False)
            return True
        return False

    def start(self, kind, n):
        try:
            from torch.profiler import ProfilerActivity, profile

            device = self.ob.device
            acts = [ProfilerActivity.CPU]
            if device is not None and device.type == "cuda":
                acts.append(ProfilerActivity.CUDA)
            self.prof = profile(activities=acts)
            self.prof.__enter__()
        except Exception as e:
            self.done = True
            self.prof = None
            self.report({"error": f"{type(e).__name__}: {e}"[:500]})
            return True
        self.kind, self.first, self.last = kind, n, n
        self.started = self.ob.clock()
        return True

    def finish(self, cut):
        if self.prof is None or self.done:
            return
        import warnings

        self.done = True
        prof, self.prof = self.prof, None
        ob = self.ob
        device = ob.device.type if ob.device is not None else "cpu"
        try:
            if device == "cuda":
                self.torch.cuda.synchronize()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prof.__exit__(None, None, None)
                ended = ob.clock()
                rows = []
                for e in prof.key_averages():
                    on_device = str(getattr(e, "device_type", "")).split(".")[-1] not in ("CPU", "")
                    rows.append({
                        "name": e.key,
                        "calls": int(e.count),
                        "self_cpu_us": float(e.self_cpu_time_total),
                        "cpu_us": float(e.cpu_time_total),
                        "self_device_us": float(getattr(e, "self_device_time_total", 0.0) or 0.0),
                        "device_us": float(getattr(e, "device_time_total", 0.0) or 0.0),
                        "on_device": on_device,
                    })
                # The heaviest rows by either clock, and every wait: the trace has the rest.
                keep = set()
                for key in ("self_cpu_us", "self_device_us"):
                    for r in sorted(rows, key=lambda r: -r[key])[:40]:
                        keep.add(r["name"])
                rows = [r for r in rows if r["name"] in keep or r["name"] in self.WAITS]
                trace = None
                if self.folder:
                    os.makedirs(self.folder, exist_ok=True)
                    stamp = time_stamp()
                    trace = os.path.join(self.folder, f"trace-{stamp}-{os.getpid()}.json")
                    prof.export_chrome_trace(trace)
            value = {
                "iterations": max(0, self.last - self.first),
                "asked": self.size,
                "warmup": self.first,
                "window_s": ended - self.started,
                "write_s": ob.clock() - ended,
                "before_ms": sorted(self.before)[len(self.before) // 2] if self.before else None,
                "device": device,
                "trace": trace,
                "cut": bool(cut),
                "ops": rows,
            }
        except Exception as e:
            value = {"error": f"{type(e).__name__}: {e}"[:500]}
        self.report(value)

    def report(self, value):
        self.ob.send({"ev": "flag", "name": "profile", "value": value}, now=True)


def time_stamp():
    import time

    return time.strftime("%Y%m%d-%H%M%S")


def _watch_stalls(ob):
    """A daemon thread that reports a DataLoader wait longer than `ob.stall_s` once per wait,
    with how many of its workers are alive (the wait's end is reported where it ends)."""
    import threading
    import time

    def workers_alive(it):
        workers = getattr(it, "_workers", None) or []
        alive = 0
        for w in workers:
            try:
                alive += bool(w.is_alive())
            except Exception:
                pass
        return len(workers), alive

    def loop():
        while True:
            time.sleep(min(1.0, max(ob.stall_s / 4, 0.05)))
            # Under the lock, so that the wait's end (reported where the wait ends) cannot
            # come before the stall itself.
            with ob.stall_lock:
                since, it = ob.waiting_since, ob.waiting_iter
                # An observer stopped at a fault of its own no longer clears the waits it set.
                if ob.off or since is None or it is None or ob.stall_reported == since:
                    continue
                waited = ob.clock() - since
                if waited < ob.stall_s:
                    continue
                ob.stall_reported = since
                workers, alive = workers_alive(it)
                ob.send(
                    {
                        "ev": "stall",
                        "waited_s": waited,
                        "workers": workers,
                        "alive": alive,
                        "step": ob.iters,
                    },
                    now=True,
                )

    threading.Thread(target=loop, name="headroom-stall-watch", daemon=True).start()


def _force_amp(torch, ob):
    """Runs the outermost module call of each forward pass under torch.autocast (see the file's
    head). `off` installs the same hooks without autocast, so both arms of a sweep pay alike."""
    from torch.nn.modules import module as nn_module

    dtype = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "f16": torch.float16,
             "fp16": torch.float16, "float16": torch.float16}.get(ob.amp)
    state = {"depth": 0, "ctx": None}

    def device_of(module, args):
        for p in module.parameters():
            return p.device.type
        for a in args:
            if isinstance(a, torch.Tensor):
                return a.device.type
        return "cpu"

    def pre(module, args):
        state["depth"] += 1
        if state["depth"] == 1 and dtype is not None:
            ctx = torch.autocast(device_of(module, args), dtype=dtype)
            ctx.__enter__()
            state["ctx"] = ctx

    def post(module, args, output):
        state["depth"] -= 1
        if state["depth"] <= 0:
            state["depth"] = 0
            ctx, state["ctx"] = state["ctx"], None
            if ctx is not None:
                ctx.__exit__(None, None, None)

    nn_module.register_module_forward_pre_hook(pre)
    nn_module.register_module_forward_hook(post, always_call=True)
    ob.flag("amp_forced", ob.amp)


def _first_tensor(tensor_type, value):
    """The first tensor in a module's arguments or output (itself, a dict's first value, a
    sequence's first item, up to four levels down), or None."""
    for _ in range(4):
        if isinstance(value, tensor_type):
            return value
        if isinstance(value, dict):
            value = next(iter(value.values()), None)
        elif isinstance(value, (list, tuple)) and value:
            value = value[0]
        else:
            return None
    return None


def _numerics(torch, ob):
    """`headroom numerics`: at the second training forward pass of the program's outermost
    module (the first finds it), the same module and inputs run once on a CPU copy in f32 (the reference) and once on
    a copy where the program keeps it, under HEADROOM_NUMERICS's dtype (`f32`, or autocast to
    `bf16`/`f16`); both copies in eval mode (dropout off), so both compute one function. Each
    layer's output and the gradients of the outputs' sum are compared; the program's own model
    and step are untouched. HEADROOM_NUMERICS_PERTURB names a layer whose output the compared
    side scales by 1.04 (for the tests: a layer that is wrong must be caught there).
    HEADROOM_NUMERICS_REFERENCE=device keeps the f32 reference on the program's device: the
    dtype's own difference there, without the device's against the CPU."""
    import copy
    import time
    from torch.nn.modules import module as nn_module

    dtype_name = os.environ.get("HEADROOM_NUMERICS", "f32")
    try:
        tolerance = float(os.environ.get("HEADROOM_NUMERICS_TOLERANCE", "1e-3"))
    except ValueError:
        tolerance = 1e-3
    perturb = os.environ.get("HEADROOM_NUMERICS_PERTURB") or None
    on_device = os.environ.get("HEADROOM_NUMERICS_REFERENCE") == "device"
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(dtype_name)
    state = {"done": False, "depth": 0, "handle": None}

    def floats(t):
        return t.detach().to("cpu", torch.float64)

    def first(value):
        return _first_tensor(torch.Tensor, value)

    def moved(value, device, to_f32):
        if isinstance(value, torch.Tensor):
            v = value.detach().to(device)
            return v.float() if to_f32 and v.is_floating_point() else v
        if isinstance(value, (list, tuple)):
            return type(value)(moved(v, device, to_f32) for v in value)
        if isinstance(value, dict):
            return {k: moved(v, device, to_f32) for k, v in value.items()}
        return value

    def error(a, b):
        """Largest absolute difference, and it over the reference's largest magnitude."""
        if a.shape != b.shape:
            return None
        diff = float((a - b).abs().max()) if a.numel() else 0.0
        scale = float(b.abs().max()) if b.numel() else 0.0
        # An all-zero reference has no scale: its difference is its own measure.
        return {"abs": diff, "rel": diff / scale if scale > 0 else diff}

    def run(model, args, kwargs, device, to_f32, autocast_dtype, scale_layer):
        outs = {}
        hooks = []
        for name, sub in model.named_modules():
            if not name:
                continue

            def keep(mod, inp, out, name=name):
                t = first(out)
                if scale_layer == name and isinstance(t, torch.Tensor):
                    out = out * 1.04 if isinstance(out, torch.Tensor) else out
                    t = first(out)
                if isinstance(t, torch.Tensor) and t.is_floating_point() and name not in outs:
                    outs[name] = floats(t)
                return out if scale_layer == name else None

            hooks.append(sub.register_forward_hook(keep))
        try:
            a, k = moved(args, device, to_f32), moved(kwargs, device, to_f32)
            if autocast_dtype is not None:
                with torch.autocast(torch.device(device).type, dtype=autocast_dtype):
                    out = model(*a, **k)
            else:
                out = model(*a, **k)
            t = first(out)
            grads = {}
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad:
                t.float().sum().backward()
                for name, p in model.named_parameters():
                    if p.grad is not None:
                        grads[name] = floats(p.grad)
            return outs, (floats(t) if isinstance(t, torch.Tensor) else None), grads
        finally:
            for h in hooks:
                h.remove()

    def compare(module, args, kwargs):
        began = time.perf_counter()
        event = {"dtype": dtype_name, "tolerance": tolerance, "reference": "cpu f32",
                 "mode": "eval (dropout off)", "layers": [], "grads": []}
        try:
            device = None
            for p in module.parameters():
                device = p.device
                break
            device = device or torch.device("cpu")
            event["device"] = str(device)
            if device.type == "cuda":
                # What cuDNN and cuBLAS may compute in TF32 there (read quietly: newer PyTorch
                # warns that these flags give way to fp32_precision).
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tf32 = []
                    try:
                        if torch.backends.cudnn.allow_tf32:
                            tf32.append("convolutions")
                        if torch.backends.cuda.matmul.allow_tf32:
                            tf32.append("matrix multiplications")
                    except Exception:
                        pass
                if tf32:
                    event["tf32"] = tf32
            ref_device = device if on_device else torch.device("cpu")
            event["reference"] = f"{ref_device} f32"
            ref = copy.deepcopy(module).to(ref_device).float().eval()
            test = copy.deepcopy(module).eval()
            r_outs, r_out, r_grads = run(ref, args, kwargs, ref_device, True, None, None)
            t_outs, t_out, t_grads = run(test, args, kwargs, device, False, dtype, perturb)
            for name, b in r_outs.items():
                a = t_outs.get(name)
                e = error(a, b) if a is not None else None
                if e is not None:
                    event["layers"].append({"name": name, **e})
            if r_out is not None and t_out is not None:
                e = error(t_out, r_out)
                if e is not None:
                    event["output"] = {"name": "(output)", **e}
            for name, b in r_grads.items():
                a = t_grads.get(name)
                e = error(a, b) if a is not None else None
                if e is not None:
                    event["grads"].append({"name": name, **e})
            event["grads"].sort(key=lambda g: -g["rel"])
            del event["grads"][20:]
            del event["layers"][400:]
            del ref, test
        except Exception as e:
            event["error"] = repr(e)[:500]
        event["seconds"] = time.perf_counter() - began
        ob.send({"ev": "flag", "name": "numerics", "value": event}, now=True)

    def local(module, args, kwargs):
        if state["done"]:
            return None
        state["done"] = True
        if state["handle"] is not None:
            state["handle"].remove()
        ob.quiet = True
        try:
            compare(module, args, kwargs)
        finally:
            ob.quiet = False
        return None

    def pre(module, args):
        if ob.quiet:
            return None
        state["depth"] += 1
        # The first training call of an outermost module: its next call (with its keyword
        # arguments, which a global hook does not see) is compared.
        if state["depth"] == 1 and state["handle"] is None and module.training \
                and torch.is_grad_enabled():
            try:
                state["handle"] = module.register_forward_pre_hook(local, with_kwargs=True)
            except Exception:
                state["done"] = True
        return None

    def post(module, args, output):
        if not ob.quiet:
            state["depth"] = max(state["depth"] - 1, 0)
        return None

    nn_module.register_module_forward_pre_hook(pre)
    nn_module.register_module_forward_hook(post, always_call=True)


class _ImportWatch:
    """A meta-path finder that waits for one module's import and calls `then(module)` once it
    has run (torch: to hook in; transformers' generation: to watch `generate`)."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module
        then = self.then

        def exec_module(module):
            real_exec(module)
            then(module)

        spec.loader.exec_module = exec_module
        return spec


def _start():
    address = os.environ.get("HEADROOM_EVENTS")
    if not address:
        return
    ob = _Observer(address)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=ob.reset)

    def install(torch):
        try:
            _install(torch, ob)
        except Exception as e:
            ob.send({"ev": "probe_error", "message": repr(e)[:2000]}, now=True)

    if "torch" in sys.modules:
        install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _ImportWatch("torch", install))


_start()
_chain()
