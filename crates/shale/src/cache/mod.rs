//! Caches: decoded blocks under a byte budget, and open tables under a file-count budget.

pub mod block_cache;
pub mod table_cache;
