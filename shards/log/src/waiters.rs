//! Tasks waiting for an offset of the log to move: the readable end (fetch long-polls,
//! appends waiting for their predecessors' writes) or the high watermark (one `Waiters`
//! each).

use std::task::Waker;

/// Registered waiters, each resolved once the readable end offset passes its
/// `beyond` offset. Kept as a small vector: waiters per partition are few.
#[derive(Default)]
pub(crate) struct Waiters {
    next_id: u64,
    entries: Vec<(u64, i64, Waker)>,
}

impl Waiters {
    /// Registers (or refreshes the waker of) the waiter `id`.
    pub fn register(&mut self, id: &mut Option<u64>, beyond: i64, waker: &Waker) {
        if let Some(existing) = id.and_then(|i| self.entries.iter_mut().find(|e| e.0 == i)) {
            if !existing.2.will_wake(waker) {
                existing.2 = waker.clone();
            }
            return;
        }
        let new_id = self.next_id;
        self.next_id += 1;
        self.entries.push((new_id, beyond, waker.clone()));
        *id = Some(new_id);
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn remove(&mut self, id: u64) {
        self.entries.retain(|e| e.0 != id);
    }

    /// Removes and returns the wakers of everyone waiting for less than
    /// `readable_end` (they are woken after the caller drops its borrows).
    pub fn take_ready(&mut self, readable_end: i64) -> Vec<Waker> {
        let mut ready = Vec::new();
        self.entries.retain(|(_, beyond, waker)| {
            let done = *beyond < readable_end;
            if done {
                ready.push(waker.clone());
            }
            !done
        });
        ready
    }

    /// Removes and returns every waker: the log stopped advancing.
    pub fn take_all(&mut self) -> Vec<Waker> {
        self.entries.drain(..).map(|e| e.2).collect()
    }
}
