//! Strings many objects of the index share (their namespaces), kept once.
//!
//! Why: every child of a namespace carries the same namespace; one shared `Arc<str>` costs 16
//! inline bytes per object instead of a `String` (24 bytes and a heap copy each).
//!
//! Contract: [`Interner::intern`] returns a string equal to its argument, the same allocation
//! for equal strings while any holder keeps one. Strings no holder keeps any longer are swept
//! when the set has doubled since the last sweep, so a set of namespaces that churns (created
//! and deleted over months) stays within twice the live ones, at an amortised constant cost.

use std::collections::HashSet;
use std::sync::Arc;

/// The set does not sweep below this many strings (a sweep of a few is not worth it).
const MIN_SWEEP: usize = 64;

/// A set of shared strings; see the module contract.
#[derive(Debug, Default)]
pub(super) struct Interner {
    set: HashSet<Arc<str>>,
    /// The size at which the next insertion first sweeps.
    sweep_at: usize,
}

impl Interner {
    /// `s`, shared with every other holder of an equal string.
    pub(super) fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(shared) = self.set.get(s) {
            return Arc::clone(shared);
        }
        if self.set.len() >= self.sweep_at.max(MIN_SWEEP) {
            // Only the set holds these: nobody shares them any longer.
            self.set.retain(|a| Arc::strong_count(a) > 1);
            self.sweep_at = self.set.len() * 2;
        }
        let shared: Arc<str> = Arc::from(s);
        self.set.insert(Arc::clone(&shared));
        shared
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.set.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_one_allocation() {
        let mut i = Interner::default();
        let a = i.intern("ns-1");
        let b = i.intern("ns-1");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*i.intern("ns-2"), "ns-2");
        assert!(!Arc::ptr_eq(&a, &i.intern("ns-2")));
    }

    #[test]
    fn strings_nobody_holds_are_swept_and_held_ones_kept() {
        let mut i = Interner::default();
        let kept = i.intern("kept");
        // Namespaces come and go: only the held one and the newest few may stay.
        for n in 0..10_000 {
            drop(i.intern(&format!("gone-{n}")));
        }
        assert!(i.len() <= 2 * MIN_SWEEP + 1, "{} strings kept", i.len());
        assert!(
            Arc::ptr_eq(&kept, &i.intern("kept")),
            "a held string survives sweeps"
        );
    }
}
