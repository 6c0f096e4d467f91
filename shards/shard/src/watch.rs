//! A shard-local watched offset (the metadata log's applied index, the offset the shards serve):
//! tasks wait until it moves past a value. Long polls wait on it with a deadline, so most waits
//! end by their timeout, not by the offset moving: every wait removes its registration when it
//! ends, whichever way, and the list holds only the waits in progress however long nothing
//! changes. (A list that only a change drains grows by one entry per idle poll.)

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Cloneable handle; all clones watch the same offset. Shard-local (not `Send`).
#[derive(Clone, Default)]
pub struct LocalWatch {
    inner: Rc<Inner>,
}

#[derive(Default)]
struct Inner {
    value: Cell<u64>,
    next_id: Cell<u64>,
    /// By id: a wait that ends removes itself in O(1) (connections wait on the shutdown signal
    /// around every request).
    waiters: RefCell<HashMap<u64, Waiter>>,
}

struct Waiter {
    beyond: u64,
    waker: Waker,
}

impl LocalWatch {
    /// A watch at `value`.
    pub fn new(value: u64) -> LocalWatch {
        let watch = LocalWatch::default();
        watch.inner.value.set(value);
        watch
    }

    /// The current value.
    pub fn value(&self) -> u64 {
        self.inner.value.get()
    }

    /// Moves the value to `value` (never back) and wakes every wait it passed.
    pub fn advance(&self, value: u64) {
        let current = self.inner.value.get();
        assert!(
            value >= current,
            "watched offset moved back: {current} → {value}"
        );
        if value == current {
            return;
        }
        self.inner.value.set(value);
        let mut ready = Vec::new();
        self.inner.waiters.borrow_mut().retain(|_, w| {
            let passed = w.beyond < value;
            if passed {
                ready.push(w.waker.clone());
            }
            !passed
        });
        // Woken after the borrow ends: a waker may poll its task inline.
        for waker in ready {
            waker.wake();
        }
    }

    /// Resolves once the value is greater than `beyond`. Dropping the future (a deadline won
    /// the race) removes its registration.
    pub fn wait_beyond(&self, beyond: u64) -> WaitBeyond<'_> {
        WaitBeyond {
            watch: self,
            beyond,
            id: None,
        }
    }

    /// Waits in progress (for tests and metrics).
    pub fn waiting(&self) -> usize {
        self.inner.waiters.borrow().len()
    }

    fn remove(&self, id: u64) {
        self.inner.waiters.borrow_mut().remove(&id);
    }
}

/// The future of [`LocalWatch::wait_beyond`].
pub struct WaitBeyond<'a> {
    watch: &'a LocalWatch,
    beyond: u64,
    id: Option<u64>,
}

impl Future for WaitBeyond<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.watch.value() > self.beyond {
            if let Some(id) = self.id.take() {
                self.watch.remove(id);
            }
            return Poll::Ready(());
        }
        let inner = &self.watch.inner;
        if let Some(id) = self.id {
            let mut waiters = inner.waiters.borrow_mut();
            if let Some(waiter) = waiters.get_mut(&id) {
                if !waiter.waker.will_wake(cx.waker()) {
                    waiter.waker = cx.waker().clone();
                }
                return Poll::Pending;
            }
        }
        let id = inner.next_id.get();
        inner.next_id.set(id + 1);
        inner.waiters.borrow_mut().insert(
            id,
            Waiter {
                beyond: self.beyond,
                waker: cx.waker().clone(),
            },
        );
        self.id = Some(id);
        Poll::Pending
    }
}

impl Drop for WaitBeyond<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.watch.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn run<F: Future<Output = ()> + 'static>(make: impl FnOnce() -> F + Send + 'static) {
        glommio::LocalExecutorBuilder::default()
            .spawn(make)
            .expect("executor")
            .join()
            .expect("executor ran");
    }

    #[test]
    fn waits_that_time_out_leave_nothing_behind() {
        run(|| async {
            let watch = LocalWatch::new(7);
            for poll in 0..5_000u32 {
                let started = Instant::now();
                let woken = futures_lite::future::or(
                    async {
                        watch.wait_beyond(7).await;
                        true
                    },
                    async {
                        glommio::timer::sleep(Duration::from_micros(200)).await;
                        false
                    },
                )
                .await;
                assert!(!woken, "poll {poll}: nothing moved the watch");
                assert!(
                    started.elapsed() >= Duration::from_micros(200),
                    "poll {poll}"
                );
                assert_eq!(watch.waiting(), 0, "poll {poll} left its registration");
            }
        });
    }

    #[test]
    fn advancing_wakes_exactly_the_waits_it_passes() {
        run(|| async {
            let watch = LocalWatch::new(0);
            let mut tasks = Vec::new();
            for beyond in 0..4u64 {
                let w = watch.clone();
                tasks.push(glommio::spawn_local(async move {
                    w.wait_beyond(beyond).await;
                    beyond
                }));
            }
            glommio::yield_if_needed().await;
            glommio::timer::sleep(Duration::from_millis(1)).await;
            assert_eq!(watch.waiting(), 4);
            watch.advance(2);
            let first: Vec<u64> = vec![tasks.remove(0).await, tasks.remove(0).await];
            assert_eq!(first, vec![0, 1]);
            assert_eq!(watch.waiting(), 2, "2 and 3 still wait");
            watch.advance(2); // no move, nobody woken
            assert_eq!(watch.waiting(), 2);
            watch.advance(10);
            for t in tasks {
                t.await;
            }
            assert_eq!(watch.waiting(), 0);
            // A wait for a value already passed resolves at once and registers nothing.
            watch.wait_beyond(3).await;
            assert_eq!(watch.waiting(), 0);
        });
    }

    #[test]
    #[should_panic(expected = "moved back")]
    fn the_watched_offset_never_moves_back() {
        let watch = LocalWatch::new(5);
        watch.advance(4);
    }
}
