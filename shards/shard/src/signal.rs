//! A shard-local one-shot signal (shutdown, first metadata image): set once, awaited by any number of tasks.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Wakers kept before the list is flushed (see `Wait::poll`).
const WAITERS_MAX: usize = 4096;

/// Cloneable handle; all clones see the same signal. Shard-local (not `Send`).
#[derive(Clone, Default)]
pub struct LocalSignal {
    inner: Rc<Inner>,
}

#[derive(Default)]
struct Inner {
    triggered: Cell<bool>,
    waiters: RefCell<Vec<Waker>>,
}

impl LocalSignal {
    /// A signal not yet triggered.
    pub fn new() -> LocalSignal {
        LocalSignal::default()
    }

    /// Triggers it and wakes every waiter.
    pub fn trigger(&self) {
        self.inner.triggered.set(true);
        let waiters = std::mem::take(&mut *self.inner.waiters.borrow_mut());
        for waker in waiters {
            waker.wake();
        }
    }

    /// Whether it was triggered.
    pub fn is_triggered(&self) -> bool {
        self.inner.triggered.get()
    }

    /// Resolves once triggered.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        Wait { shutdown: self }
    }
}

struct Wait<'a> {
    shutdown: &'a LocalSignal,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.shutdown.is_triggered() {
            return Poll::Ready(());
        }
        let mut waiters = self.shutdown.inner.waiters.borrow_mut();
        // A connection polls this on every request; keep one waker per waiting task.
        if waiters.iter().any(|w| w.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        // Tasks that ended leave their wakers behind; past the bound, wake everyone once
        // (a spurious wake only makes the live ones register again) so the list stays bounded.
        if waiters.len() >= WAITERS_MAX {
            for waker in waiters.drain(..) {
                waker.wake();
            }
        }
        waiters.push(cx.waker().clone());
        Poll::Pending
    }
}
