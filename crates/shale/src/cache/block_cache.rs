//! Block cache (in progress).
