//! A tiny seeded PRNG (splitmix64 to seed, xorshift64* to draw): reproducible across
//! runs and architectures, no external crates.

#[derive(Clone, Debug)]
pub struct Rng {
    s: u64,
}

/// One splitmix64 step: also used to derive independent sub-seeds.
pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Seed of sub-stream `k` of `seed` (rounds, processes, threads).
pub fn derive(seed: u64, k: u64) -> u64 {
    splitmix(seed ^ splitmix(k.wrapping_add(0x5151)))
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let s = splitmix(seed);
        Rng {
            s: if s == 0 { 0x2545_f491_4f6c_dd1d } else { s },
        }
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.s;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.s = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        self.next_u64() % n
    }
    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability pct/100.
    pub fn pct(&mut self, pct: u32) -> bool {
        (self.below(100) as u32) < pct
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
    /// Index chosen by weights.
    pub fn weighted(&mut self, w: &[u32]) -> usize {
        let total: u64 = w.iter().map(|x| *x as u64).sum();
        let mut r = self.below(total);
        for (i, x) in w.iter().enumerate() {
            if r < *x as u64 {
                return i;
            }
            r -= *x as u64;
        }
        w.len() - 1
    }
    /// A "boundary-ish" 64-bit value: small, near powers of two, all-ones, random.
    pub fn edgy_u64(&mut self) -> u64 {
        match self.below(8) {
            0 => 0,
            1 => self.below(64),
            2 => u64::MAX - self.below(16),
            3 => (1u64 << self.below(64))
                .wrapping_add(self.below(3))
                .wrapping_sub(1),
            4 => self.below(4096) & !7,
            5 => 0x8000_0000_0000_0000 | self.below(1 << 20),
            6 => u32::MAX as u64 - self.below(8),
            _ => self.next_u64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn reproducible() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(derive(1, 2), derive(1, 3));
    }
}
