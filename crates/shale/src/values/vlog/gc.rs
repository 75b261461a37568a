//! Value-log garbage collection.
