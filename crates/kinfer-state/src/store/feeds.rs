//! The feeds (watches) that count one object in the index (`inner`'s contract), kept inline
//! for the common case of one.
//!
//! Why: almost every object is reported by a single watch, and a `Vec<u64>` per object cost a
//! heap allocation besides its 24 inline bytes (0.43 MiB of the 9.9 MiB the index's
//! bookkeeping took for 13,000 children, heaptrack 2026-11-21). Sets of several feeds are
//! rare (per-namespace controllers sharing a cluster-wide kind) and change rarely, so they are
//! rebuilt, exactly sized, on each change. The set takes 16 bytes in every entry of the
//! index's object map (the id of `One` sits where `Many` keeps its length: the null pointer is
//! the niche), whose tables keep up to about twice as many slots as objects.

/// A non-empty set of feed ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Feeds {
    One(u64),
    /// Two or more distinct ids, in the order the feeds first reported the object.
    Many(Box<[u64]>),
}

impl Feeds {
    fn as_slice(&self) -> &[u64] {
        match self {
            Self::One(f) => std::slice::from_ref(f),
            Self::Many(fs) => fs,
        }
    }

    pub(super) fn contains(&self, feed: u64) -> bool {
        self.as_slice().contains(&feed)
    }

    /// These feeds and `feed`.
    #[must_use]
    pub(super) fn with(self, feed: u64) -> Self {
        if self.contains(feed) {
            return self;
        }
        let mut all = Vec::with_capacity(self.as_slice().len() + 1);
        all.extend_from_slice(self.as_slice());
        all.push(feed);
        Self::Many(all.into_boxed_slice())
    }

    /// These feeds but `feed`; `None` when none is left.
    pub(super) fn without(self, feed: u64) -> Option<Self> {
        if !self.contains(feed) {
            return Some(self);
        }
        let rest: Vec<u64> = self
            .as_slice()
            .iter()
            .copied()
            .filter(|f| *f != feed)
            .collect();
        match rest.len() {
            0 => None,
            1 => rest.first().copied().map(Self::One),
            _ => Some(Self::Many(rest.into_boxed_slice())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Feeds;

    #[test]
    fn one_feed_is_inline_and_sets_grow_and_shrink_back() {
        assert!(std::mem::size_of::<Feeds>() <= 16);
        let one = Feeds::One(3);
        assert_eq!(one.clone().with(3), one, "adding a feed twice");
        let two = one.clone().with(5);
        assert!(two.contains(3) && two.contains(5) && !two.contains(4));
        let three = two.clone().with(7);
        assert_eq!(three.clone().without(4), Some(three.clone()), "not there");
        assert_eq!(three.without(7), Some(two.clone()));
        assert_eq!(two.clone().without(3), Some(Feeds::One(5)), "back inline");
        assert_eq!(Feeds::One(5).without(5), None);
    }
}
