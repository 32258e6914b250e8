//! The jobs this tray runs for its popover — sweeps, and memory jobs (an epochs run, the user's
//! training watched, a process watched): started by a popover's `ToTray::Sweep` or
//! `ToTray::Memory` (checked and run by the core, [`headroom_core::jobs::live`] and
//! [`headroom_core::jobs::live_memory`]), they go on when the popover is closed and its process
//! has ended — a closed Headroom with a job running is this process and the job's own
//! processes. Each change reaches the event loop ([`Msg::Sweep`], [`Msg::Memory`]): the icon
//! moves with it, a leak is notified, and the popover's process, when one runs, is sent the
//! snapshot (a `sweep` or `memory` line).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use headroom_core::jobs::live::{self, Change, SweepOrder, SweepSlot};
use headroom_core::jobs::live_memory::{self, MemoryOrder, MemorySlot};
use tao::event_loop::EventLoopProxy;

use crate::Msg;

/// The most often a step's progress is passed on (points and the end always are).
const STEP_EVERY: Duration = Duration::from_millis(100);

/// Checks and starts `order` on a thread of its own; the answer (the first snapshot, or why
/// not) comes back as [`Msg::SweepAnswer`], each change after as [`Msg::Sweep`].
pub fn start(slot: &Arc<SweepSlot>, proxy: &EventLoopProxy<Msg>, order: SweepOrder) {
    let (slot, proxy) = (Arc::clone(slot), proxy.clone());
    std::thread::spawn(move || {
        let changes = proxy.clone();
        let last_step = Mutex::new(Instant::now() - STEP_EVERY);
        let answer = live::prepare(&order).and_then(|prepared| {
            slot.launch(prepared, move |s, change| {
                if change == Change::Step {
                    let mut last = last_step.lock().unwrap_or_else(|e| e.into_inner());
                    if last.elapsed() < STEP_EVERY {
                        return;
                    }
                    *last = Instant::now();
                }
                let _ = changes.send_event(Msg::Sweep(Box::new(s.clone()), change));
            })
        });
        // The newest state by now (a step may have come already).
        let answer = answer.map(|first| Box::new(slot.snapshot().unwrap_or(first)));
        let _ = proxy.send_event(Msg::SweepAnswer(answer));
    });
}

/// The line this tray says on its standard error when a sweep moves or ends.
pub fn said(s: &live::SweepSnapshot, change: Change) -> Option<String> {
    let state = match change {
        Change::Step => return None,
        Change::Moved => "running".to_owned(),
        Change::Ended => format!("ended ({})", s.status),
    };
    Some(format!(
        "headroom-tray: sweep of {} {state}: {} point(s); {}",
        s.workload,
        s.points.len(),
        s.message
    ))
}

/// Checks and starts the memory job `order` on a thread of its own; the answer comes back as
/// [`Msg::MemoryAnswer`], each change after as [`Msg::Memory`].
pub fn start_memory(slot: &Arc<MemorySlot>, proxy: &EventLoopProxy<Msg>, order: MemoryOrder) {
    let (slot, proxy) = (Arc::clone(slot), proxy.clone());
    std::thread::spawn(move || {
        let changes = proxy.clone();
        let answer = live_memory::prepare(order).and_then(|prepared| {
            slot.launch(prepared, move |s, change| {
                let _ = changes.send_event(Msg::Memory(Box::new(s.clone()), change));
            })
        });
        let answer = answer.map(|first| Box::new(slot.snapshot().unwrap_or(first)));
        let _ = proxy.send_event(Msg::MemoryAnswer(answer));
    });
}

/// The line this tray says on its standard error when a memory job crosses the leak threshold
/// or ends.
pub fn said_memory(s: &live_memory::MemorySnapshot, change: Change) -> Option<String> {
    let state = match change {
        Change::Step => return None,
        Change::Moved => "past the leak threshold".to_owned(),
        Change::Ended => format!("ended ({})", s.status),
    };
    Some(format!(
        "headroom-tray: memory job {} {state}: {} epoch(s); {}",
        s.title.replace('\n', "; "),
        s.samples.len(),
        s.message
    ))
}
