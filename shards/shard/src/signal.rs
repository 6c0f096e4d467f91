//! A shard-local one-shot signal (shutdown, first metadata image): set once, awaited by any number
//! of tasks. A `LocalWatch` that moves once from 0 to 1, so a wait that ends any other way (its
//! connection closed, a race lost) takes its registration with it: the list holds only the
//! waits in progress, however many connections come and go over the shard's life.

use std::future::Future;

use crate::watch::LocalWatch;

/// Cloneable handle; all clones see the same signal. Shard-local (not `Send`).
#[derive(Clone, Default)]
pub struct LocalSignal {
    watch: LocalWatch,
}

impl LocalSignal {
    /// A signal not yet triggered.
    pub fn new() -> LocalSignal {
        LocalSignal::default()
    }

    /// Triggers it and wakes every waiter.
    pub fn trigger(&self) {
        if !self.is_triggered() {
            self.watch.advance(1);
        }
    }

    /// Whether it was triggered.
    pub fn is_triggered(&self) -> bool {
        self.watch.value() > 0
    }

    /// Resolves once triggered.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        self.watch.wait_beyond(0)
    }

    /// Waits in progress (for tests and metrics).
    pub fn waiting(&self) -> usize {
        self.watch.waiting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More live waits than the old list's bound (4,096, past which every waiter was woken,
    /// re-registered and woken again without end) and as many ended ones: the list holds exactly
    /// the live ones, and one trigger wakes them all once.
    #[test]
    fn the_list_holds_only_live_waits() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let signal = LocalSignal::new();
                let polls = std::rc::Rc::new(std::cell::Cell::new(0u64));
                let mut live = Vec::new();
                for _ in 0..5_000 {
                    let (s, polls) = (signal.clone(), polls.clone());
                    live.push(glommio::spawn_local(async move {
                        let mut wait = std::pin::pin!(s.wait());
                        std::future::poll_fn(|cx| {
                            polls.set(polls.get() + 1);
                            wait.as_mut().poll(cx)
                        })
                        .await;
                    }));
                }
                for _ in 0..5_000 {
                    let s = signal.clone();
                    glommio::spawn_local(async move {
                        futures_lite::future::or(s.wait(), async {}).await;
                    })
                    .await;
                }
                glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
                assert_eq!(signal.waiting(), 5_000, "only the live waits are listed");
                assert_eq!(
                    polls.get(),
                    5_000,
                    "each live wait was polled once, never re-woken"
                );
                signal.trigger();
                for task in live {
                    task.await;
                }
                assert_eq!(polls.get(), 10_000, "one trigger, one wake each");
                assert_eq!(signal.waiting(), 0);
                assert!(signal.is_triggered());
                signal.wait().await;
            })
            .expect("executor")
            .join()
            .expect("the test ran");
    }
}
