//! Table cache (in progress).
