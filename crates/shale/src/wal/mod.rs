//! Write-ahead log (in progress: placeholder batch so the API compiles).
#![allow(missing_docs)]
#[derive(Debug, Default, Clone)]
pub struct WriteBatch { n: usize }
impl WriteBatch {
    pub fn new() -> Self { Self::default() }
    pub fn put(&mut self, _k: &[u8], _v: &[u8]) { self.n += 1 }
    pub fn delete(&mut self, _k: &[u8]) { self.n += 1 }
    pub fn len(&self) -> usize { self.n }
    pub fn is_empty(&self) -> bool { self.n == 0 }
}
