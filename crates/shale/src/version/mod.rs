//! Versions: the set of table files that make up the store at one point in time.

mod file_meta;
pub use file_meta::FileMeta;
