//! A subscriber's queue of a shared watch ([`super::shared`]) that never makes the watch wait.
//!
//! Why: one watch per catalog kind feeds several controllers; with a bounded channel per
//! subscriber, one controller that stops reading (a full queue, a long stall) held the watch
//! back, and every other controller and the kind's cache with it. An unbounded channel would
//! trade that for memory growing with the stall.
//!
//! Contract: [`queue`] gives a [`Sender`] and a [`Receiver`]. [`Sender::push`] never waits: a
//! value under a key that is already queued replaces it in its place (the subscriber reads
//! the latest version of each object, once), any other joins the end; [`Sender::forget`]
//! drops a queued value. So a queue holds at most one value per key, however far its reader
//! is behind: bounded by the number of objects the watch has seen, and nothing a subscriber
//! maps by name or by the object's current content is lost (intermediate versions of one
//! object are: the reconciles read the cache, which has the latest). The [`Receiver`] is a
//! stream in queue order that ends once the sender is gone and the queue is drained; once the
//! receiver is gone, [`Sender::push`] says so and the queue holds nothing.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use futures::Stream;

struct State<R, T> {
    /// The keys in queue order, each once.
    order: VecDeque<R>,
    /// The latest value of each queued key.
    latest: HashMap<R, T>,
    /// The reader waiting for a value.
    waker: Option<Waker>,
    sender_gone: bool,
    receiver_gone: bool,
}

type Shared<R, T> = Arc<Mutex<State<R, T>>>;

fn lock<R, T>(s: &Mutex<State<R, T>>) -> MutexGuard<'_, State<R, T>> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The writing end of a [`queue`].
pub(super) struct Sender<R, T> {
    shared: Shared<R, T>,
}

/// The reading end of a [`queue`]: a stream of the queued values.
pub(super) struct Receiver<R, T> {
    shared: Shared<R, T>,
}

/// A coalescing queue; see the module contract.
pub(super) fn queue<R, T>() -> (Sender<R, T>, Receiver<R, T>) {
    let shared = Arc::new(Mutex::new(State {
        order: VecDeque::new(),
        latest: HashMap::new(),
        waker: None,
        sender_gone: false,
        receiver_gone: false,
    }));
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared },
    )
}

impl<R: Eq + Hash + Clone, T> Sender<R, T> {
    /// Queues `value` under `key` without waiting (replacing a queued value of `key` in its
    /// place); false when the receiver is gone (nothing is kept then).
    pub(super) fn push(&self, key: R, value: T) -> bool {
        let waker = {
            let mut s = lock(&self.shared);
            if s.receiver_gone {
                return false;
            }
            if s.latest.insert(key.clone(), value).is_none() {
                s.order.push_back(key);
            }
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        true
    }

    /// Drops the value queued under `key`, if any.
    pub(super) fn forget(&self, key: &R) {
        let mut s = lock(&self.shared);
        if s.latest.remove(key).is_some() {
            s.order.retain(|k| k != key);
        }
    }

    /// Whether the receiver is gone.
    pub(super) fn is_closed(&self) -> bool {
        lock(&self.shared).receiver_gone
    }
}

impl<R, T> Drop for Sender<R, T> {
    fn drop(&mut self) {
        let waker = {
            let mut s = lock(&self.shared);
            s.sender_gone = true;
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<R: Eq + Hash, T> Stream for Receiver<R, T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut s = lock(&self.shared);
        while let Some(key) = s.order.pop_front() {
            if let Some(value) = s.latest.remove(&key) {
                return Poll::Ready(Some(value));
            }
        }
        if s.sender_gone {
            return Poll::Ready(None);
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl<R, T> Drop for Receiver<R, T> {
    fn drop(&mut self) {
        let mut s = lock(&self.shared);
        s.receiver_gone = true;
        s.order.clear();
        s.latest.clear();
    }
}

#[cfg(test)]
mod tests {
    use futures::{FutureExt, StreamExt};

    use super::*;

    /// What `rx` hands out now: `Ok(None)` once it ended, `Err(())` while it waits.
    fn ready<R: Eq + Hash, T>(rx: &mut Receiver<R, T>) -> Result<Option<T>, ()> {
        rx.next().now_or_never().ok_or(())
    }

    #[test]
    fn a_queued_key_keeps_its_place_and_takes_the_latest_value() {
        let (tx, mut rx) = queue();
        assert!(tx.push("a", 1));
        assert!(tx.push("b", 1));
        assert!(tx.push("a", 2));
        assert!(tx.push("c", 1));
        assert_eq!(ready(&mut rx), Ok(Some(2)), "a, at its first place");
        assert_eq!(ready(&mut rx), Ok(Some(1)), "b");
        // Read: a new value of a joins the end.
        assert!(tx.push("a", 3));
        assert_eq!(ready(&mut rx), Ok(Some(1)), "c");
        assert_eq!(ready(&mut rx), Ok(Some(3)));
        assert_eq!(ready(&mut rx), Err(()), "empty: waits");
    }

    #[test]
    fn a_forgotten_value_is_not_handed_out() {
        let (tx, mut rx) = queue();
        tx.push("a", 1);
        tx.push("b", 1);
        tx.forget(&"a");
        tx.forget(&"z");
        tx.push("c", 1);
        tx.push("a", 2);
        let mut got = Vec::new();
        for _ in 0..3 {
            let v = ready(&mut rx).ok().flatten().unwrap_or(-1);
            got.push((v, lock(&tx.shared).order.len()));
        }
        assert_eq!(got, [(1, 2), (1, 1), (2, 0)], "b, c, then a's new value");
        assert_eq!(ready(&mut rx), Err(()));
    }

    #[tokio::test]
    async fn a_waiting_reader_is_woken_and_the_stream_ends_with_its_sender() {
        let (tx, mut rx) = queue::<&str, i32>();
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(v) = rx.next().await {
                got.push(v);
            }
            got
        });
        tokio::task::yield_now().await;
        tx.push("a", 1);
        tx.push("b", 2);
        drop(tx);
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), reader)
            .await
            .expect("the reader ends once the sender is gone")
            .expect("reader");
        assert_eq!(got, [1, 2], "the queue is drained first");
    }

    #[test]
    fn a_gone_receiver_closes_the_queue_and_frees_it() {
        let (tx, rx) = queue();
        tx.push("a", vec![0u8; 1024]);
        assert!(!tx.is_closed());
        drop(rx);
        assert!(tx.is_closed());
        assert!(
            lock(&tx.shared).latest.is_empty(),
            "what was queued is freed"
        );
        assert!(!tx.push("b", Vec::new()), "nothing is queued for nobody");
        assert!(lock(&tx.shared).latest.is_empty());
    }
}
