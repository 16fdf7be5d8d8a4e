//! Settings a configuration reload may replace while the loops run. Each
//! loop reads the current value through a [`Tuned`] on every pass rather
//! than keeping a copy, so a reload needs no restart of anything: a read is
//! one uncontended read lock and an `Arc` clone.

use std::sync::Arc;

use parking_lot::RwLock;

/// A value shared by the loops that a reload swaps whole.
pub struct Tuned<T>(RwLock<Arc<T>>);

impl<T> Tuned<T> {
    pub fn new(value: T) -> Self {
        Self(RwLock::new(Arc::new(value)))
    }

    /// The current value; a reload after this call does not change it.
    pub fn get(&self) -> Arc<T> {
        self.0.read().clone()
    }

    /// Replaces the value for every later [`Tuned::get`].
    pub fn set(&self, value: T) {
        *self.0.write() = Arc::new(value);
    }
}

impl<T: Default> Default for Tuned<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Tuned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.read().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_taken_stays_while_later_reads_see_the_new_one() {
        let t = Tuned::new(1);
        let before = t.get();
        t.set(2);
        assert_eq!((*before, *t.get()), (1, 2));
    }
}
