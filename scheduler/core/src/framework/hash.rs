//! A fast, non-cryptographic hasher for the maps plugins consult per node (topology domains
//! keyed by label values): the standard SipHash costs more than the rest of a lookup, and
//! these keys come from the cluster's own objects, not from an adversary.

use std::hash::{BuildHasherDefault, Hasher};

/// The multiply-rotate hash of rustc's FxHasher, one word at a time.
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8-byte chunk")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Builds [`FastHasher`]s: `HashMap<K, V, FastBuildHasher>`.
pub type FastBuildHasher = BuildHasherDefault<FastHasher>;

/// A `HashMap` with [`FastHasher`].
pub type FastHashMap<K, V> = std::collections::HashMap<K, V, FastBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn equal_keys_hash_equal_and_different_keys_differ() {
        struct Case {
            name: &'static str,
            a: &'static str,
            b: &'static str,
            want_equal: bool,
        }
        let cases = [
            Case {
                name: "same",
                a: "zone1",
                b: "zone1",
                want_equal: true,
            },
            Case {
                name: "last byte",
                a: "zone1",
                b: "zone2",
                want_equal: false,
            },
            Case {
                name: "long",
                a: "kubernetes.io/hostname",
                b: "kubernetes.io/hostnamf",
                want_equal: false,
            },
            Case {
                name: "prefix",
                a: "node-1",
                b: "node-10",
                want_equal: false,
            },
        ];
        let build = FastBuildHasher::default();
        let hash = |s: &str| build.hash_one(s);
        for case in cases {
            assert_eq!(
                hash(case.a) == hash(case.b),
                case.want_equal,
                "{}",
                case.name
            );
        }
    }
}
