//! Test helpers for iterators: a seeded generator, random internal entries and a child
//! that fails on demand.

use super::{InternalIterator, VecIter};
use crate::Result;
use crate::key::{SeqNo, ValueKind, compare_internal, make_internal_key};

/// SplitMix64: tiny, seeded, and the same on every platform, so failures replay.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    /// A generator whose state is `state` as given (no seed mixing): the memtable tests'
    /// sequences.
    pub(crate) fn from_state(state: u64) -> Rng {
        Rng(state)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A short user key over a small alphabet that includes 0x00 and 0xff, so keys collide
    /// often and prefixes with 0xff bytes occur.
    pub(crate) fn user_key(&mut self) -> Vec<u8> {
        const ALPHABET: [u8; 4] = [0x00, b'a', b'b', 0xff];
        let len = self.below(4) as usize;
        (0..len)
            .map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize])
            .collect()
    }

    /// Mostly values, some tombstones, a few pointers.
    pub(crate) fn kind(&mut self) -> ValueKind {
        match self.below(20) {
            0..=13 => ValueKind::Value,
            14..=18 => ValueKind::Delete,
            _ => ValueKind::ValuePointer,
        }
    }

    /// An internal key to seek to: an existing one, or a random user key with a random trailer.
    pub(crate) fn probe_internal_key(&mut self, keys: &[Vec<u8>]) -> Vec<u8> {
        if !keys.is_empty() && self.below(2) == 0 {
            return keys[self.below(keys.len() as u64) as usize].clone();
        }
        let seq = self.below(300);
        let kind = ValueKind::from_u8(self.below(3) as u8).unwrap_or(ValueKind::Value);
        make_internal_key(&self.user_key(), seq, kind)
    }
}

/// One logical write, before encoding.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) user_key: Vec<u8>,
    pub(crate) seq: SeqNo,
    pub(crate) kind: ValueKind,
    pub(crate) value: Vec<u8>,
}

impl Entry {
    pub(crate) fn encode(&self) -> (Vec<u8>, Vec<u8>) {
        (
            make_internal_key(&self.user_key, self.seq, self.kind),
            self.value.clone(),
        )
    }
}

/// `n` writes with distinct sequence numbers `1..=n` in random order, sorted by internal key.
pub(crate) fn random_entries(rng: &mut Rng, n: usize) -> Vec<Entry> {
    let mut seqs: Vec<SeqNo> = (1..=n as SeqNo).collect();
    for i in (1..seqs.len()).rev() {
        seqs.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut out: Vec<Entry> = seqs
        .into_iter()
        .map(|seq| {
            let kind = rng.kind();
            let value = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                format!("v{seq}").into_bytes()
            };
            Entry {
                user_key: rng.user_key(),
                seq,
                kind,
                value,
            }
        })
        .collect();
    out.sort_by(|a, b| a.user_key.cmp(&b.user_key).then(b.seq.cmp(&a.seq)));
    out
}

/// Encoded random entries, sorted by internal key.
pub(crate) fn random_internal_entries(rng: &mut Rng, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let v: Vec<_> = random_entries(rng, n).iter().map(Entry::encode).collect();
    debug_assert!(
        v.windows(2)
            .all(|w| compare_internal(&w[0].0, &w[1].0).is_lt())
    );
    v
}

/// Deal sorted items into `m` sorted groups at random (some may be empty).
pub(crate) fn split_randomly<T: Clone>(rng: &mut Rng, all: &[T], m: usize) -> Vec<Vec<T>> {
    let mut parts = vec![Vec::new(); m.max(1)];
    for e in all {
        let i = rng.below(parts.len() as u64) as usize;
        parts[i].push(e.clone());
    }
    parts
}

/// Cut sorted items into consecutive, possibly uneven, non-empty runs.
pub(crate) fn cut_into_runs<T: Clone>(rng: &mut Rng, all: &[T], max_runs: usize) -> Vec<Vec<T>> {
    let mut runs: Vec<Vec<T>> = Vec::new();
    let mut cur = Vec::new();
    for e in all {
        cur.push(e.clone());
        if rng.below(all.len() as u64 / max_runs.max(1) as u64 + 1) == 0 {
            runs.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        runs.push(cur);
    }
    runs
}

/// A [`VecIter`] whose movements fail once `budget` movements have succeeded, as a table
/// that hits a bad block would. After failing it is not valid.
pub(crate) struct FailingIter {
    inner: VecIter,
    budget: usize,
    failed: bool,
}

impl FailingIter {
    pub(crate) fn new(entries: Vec<(Vec<u8>, Vec<u8>)>, budget: usize) -> FailingIter {
        FailingIter {
            inner: VecIter::new(entries),
            budget,
            failed: false,
        }
    }

    fn step(&mut self, f: impl FnOnce(&mut VecIter) -> Result<()>) -> Result<()> {
        if self.budget == 0 {
            self.failed = true;
            return Err(crate::Error::corruption(
                "test.sst",
                4096,
                "injected block checksum mismatch",
            ));
        }
        self.budget -= 1;
        self.failed = false;
        f(&mut self.inner)
    }
}

impl InternalIterator for FailingIter {
    fn valid(&self) -> bool {
        !self.failed && self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.step(|i| i.seek_to_first())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.step(|i| i.seek_to_last())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.step(|i| i.seek(target))
    }
    fn next(&mut self) -> Result<()> {
        self.step(|i| i.next())
    }
    fn prev(&mut self) -> Result<()> {
        self.step(|i| i.prev())
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

/// A level iterator over `runs`, one file per run, opened from memory.
pub(crate) fn level_iter(
    runs: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
) -> crate::layout::concat::ConcatIterator {
    use std::sync::Arc;

    use crate::version::FileMeta;
    let files = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Arc::new(FileMeta {
                number: i as u64,
                size: 0,
                smallest: r.first().map(|e| e.0.clone()).unwrap_or_default(),
                largest: r.last().map(|e| e.0.clone()).unwrap_or_default(),
                smallest_seq: 0,
                largest_seq: 0,
                entries: r.len() as u64,
                tombstones: 0,
                filter: Default::default(),
            })
        })
        .collect();
    let runs = Arc::new(runs);
    let opener: crate::layout::concat::FileOpener = Arc::new(move |f: &FileMeta| {
        let run = runs.get(f.number as usize).cloned().unwrap_or_default();
        Ok(Box::new(VecIter::new(run)) as Box<dyn InternalIterator>)
    });
    crate::layout::concat::ConcatIterator::new(files, opener)
}
