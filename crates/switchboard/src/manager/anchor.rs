//! One timer kept armed while requests are being made, so a request's own timers do not wake
//! tokio's time driver.
//!
//! Tokio wakes its time driver (an eventfd write, then a park that returns at once, or a parked
//! worker woken for nothing) whenever a new timer is due before the driver's next wake. A
//! request arms timers due far off (the response timeout, the long-call log line): with no
//! sooner timer armed, each of them was the soonest, so every call woke the driver twice
//! (`perf` on the gateway at `73ed45c`: two eventfd writes a call). While the anchor runs, a
//! timer due within [`PERIOD`] is always armed and a request's timers are never the soonest.
//!
//! The anchor starts with the first request and stops after a [`PERIOD`] in which none
//! started, so an idle host wakes for nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How often the anchor's timer fires: sooner than any timer a request arms.
pub(super) const PERIOD: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct State {
    /// Requests started, ever: the anchor stops after a period in which this did not move.
    started: AtomicU64,
    /// Whether the anchor's task is running (or about to).
    running: AtomicBool,
}

/// The anchor of one host. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(super) struct TimerAnchor(Arc<State>);

impl TimerAnchor {
    /// A request starts: the anchor runs from now until a period passes with no request.
    /// Outside a Tokio runtime it does nothing.
    pub(super) fn touch(&self) {
        self.0.started.fetch_add(1, Ordering::Relaxed);
        if self.0.running.load(Ordering::Relaxed) || self.0.running.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.0.running.store(false, Ordering::Release);
            return;
        };
        let state = self.0.clone();
        runtime.spawn(async move {
            // Cleared however the task ends: idle, or dropped with its runtime.
            let running = Running(state.clone());
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + PERIOD, PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut seen = state.started.load(Ordering::Relaxed);
            loop {
                tick.tick().await;
                let now = state.started.load(Ordering::Relaxed);
                if now == seen {
                    break;
                }
                seen = now;
            }
            drop(running);
        });
    }

    /// Whether the anchor's task is running.
    #[cfg(test)]
    pub(super) fn is_running(&self) -> bool {
        self.0.running.load(Ordering::Acquire)
    }
}

/// Marks the anchor stopped when its task ends. A request that started just before is not
/// lost: it finds the anchor stopped at its next touch, or its own timers wake the driver as
/// they would with no anchor.
struct Running(Arc<State>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_anchor_runs_while_requests_start_and_stops_when_they_stop() {
        let anchor = TimerAnchor::default();
        assert!(!anchor.is_running());
        anchor.touch();
        tokio::task::yield_now().await;
        assert!(anchor.is_running(), "the first request starts it");
        // A request every half period keeps it running.
        for _ in 0..6 {
            tokio::time::sleep(PERIOD / 2).await;
            anchor.touch();
            assert!(anchor.is_running());
        }
        // Two periods with none: it stops, and an idle host has no timer of its own.
        tokio::time::sleep(PERIOD * 3).await;
        assert!(!anchor.is_running());
        // The next request starts it again.
        anchor.touch();
        tokio::task::yield_now().await;
        assert!(anchor.is_running());
    }

    #[test]
    fn outside_a_runtime_a_touch_does_nothing_and_a_later_one_still_starts_it() {
        let anchor = TimerAnchor::default();
        anchor.touch();
        assert!(!anchor.is_running());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            anchor.touch();
            tokio::task::yield_now().await;
            assert!(anchor.is_running());
        });
        // Its runtime gone, the anchor is stopped, ready for a new one.
        drop(runtime);
        assert!(!anchor.is_running());
    }
}
