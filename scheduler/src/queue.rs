//! The scheduling queue.
