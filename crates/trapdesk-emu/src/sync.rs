//! Locking the state that threads share. A leaf: every module may use it without importing the
//! machine's kernel.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, accepting a poisoned one: the data is plain state that stays consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
