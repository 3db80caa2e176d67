//! Per-address slowing of wrong secrets.
//!
//! Every computer of a Minecraft server links from that server's one address, so an address
//! cannot simply be banned: a right secret from it must always link at once. Instead the
//! *refusal* of a wrong secret is delayed, doubling per strike after a few free ones, and only
//! that connection waits; linked computers and other connections never do. A guesser who opens
//! many sockets at once is capped too: while too many refusals from one address are waiting,
//! further hellos from it are turned away with 1013 (try again later) before their secret is
//! looked at, so parallel sockets do not buy more guesses.
//!
//! Memory is bounded: at most [`MAX_ADDRS`] addresses are remembered, and an address that has
//! been quiet for [`FORGET`] starts over.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Wrong secrets per address answered without delay (a typo, a stale installer).
pub const FREE: u32 = 3;
/// Delay of the first slowed refusal; each further strike doubles it.
pub const BASE: Duration = Duration::from_millis(100);
/// Longest delay of one refusal.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// Refusals of one address that may wait at once; more are turned away unchecked.
pub const MAX_WAITING: u32 = 16;
/// An address quiet this long is forgotten.
pub const FORGET: Duration = Duration::from_secs(600);
/// Addresses remembered at once.
pub const MAX_ADDRS: usize = 4096;

#[derive(Debug)]
struct Strikes {
    count: u32,
    last: Instant,
    waiting: u32,
}

/// The strike table of one gateway.
#[derive(Debug, Default)]
pub struct Throttle {
    table: Mutex<HashMap<IpAddr, Strikes>>,
}

impl Throttle {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Strikes>> {
        // A panic elsewhere while holding this cannot leave counts that matter more than serving.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `ip` already has so many refusals waiting that a new hello from it is turned away
    /// before its secret is checked.
    pub fn saturated(&self, ip: IpAddr) -> bool {
        self.table()
            .get(&ip)
            .is_some_and(|s| s.waiting >= MAX_WAITING)
    }

    /// Records a wrong secret from `ip` and says how long its refusal waits (zero: at once).
    /// Call [`Throttle::done`] once the refusal is sent.
    pub fn strike(&self, ip: IpAddr) -> Duration {
        let now = Instant::now();
        let mut table = self.table();
        if !table.contains_key(&ip) && table.len() >= MAX_ADDRS {
            table.retain(|_, s| s.waiting > 0 || now.duration_since(s.last) < FORGET);
            if table.len() >= MAX_ADDRS
                && let Some(oldest) = table
                    .iter()
                    .filter(|(_, s)| s.waiting == 0)
                    .min_by_key(|(_, s)| s.last)
                    .map(|(ip, _)| *ip)
            {
                table.remove(&oldest);
            }
        }
        let s = table.entry(ip).or_insert(Strikes {
            count: 0,
            last: now,
            waiting: 0,
        });
        if now.duration_since(s.last) >= FORGET {
            s.count = 0;
        }
        s.count = s.count.saturating_add(1);
        s.last = now;
        s.waiting += 1;
        delay(s.count)
    }

    /// A refusal of `ip` was sent (or its socket went away).
    pub fn done(&self, ip: IpAddr) {
        if let Some(s) = self.table().get_mut(&ip) {
            s.waiting = s.waiting.saturating_sub(1);
        }
    }

    /// Addresses remembered (for tests and the reliability figures).
    pub fn len(&self) -> usize {
        self.table().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The delay of the `count`th wrong secret.
pub fn delay(count: u32) -> Duration {
    if count <= FREE {
        return Duration::ZERO;
    }
    let doublings = (count - FREE - 1).min(16);
    BASE.saturating_mul(1 << doublings).min(MAX_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_is_free_then_doubles_then_caps() {
        assert_eq!(delay(1), Duration::ZERO);
        assert_eq!(delay(FREE), Duration::ZERO);
        assert_eq!(delay(FREE + 1), BASE);
        assert_eq!(delay(FREE + 2), BASE * 2);
        assert_eq!(delay(FREE + 3), BASE * 4);
        assert_eq!(delay(1000), MAX_DELAY);
    }

    #[tokio::test(start_paused = true)]
    async fn strikes_are_per_address_and_forgotten() {
        let t = Throttle::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        for _ in 0..FREE {
            assert_eq!(t.strike(a), Duration::ZERO);
            t.done(a);
        }
        assert_eq!(t.strike(a), BASE);
        t.done(a);
        // Another address is not slowed by a's strikes.
        assert_eq!(t.strike(b), Duration::ZERO);
        t.done(b);
        tokio::time::advance(FORGET).await;
        assert_eq!(t.strike(a), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn parallel_refusals_saturate_and_the_table_is_bounded() {
        let t = Throttle::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        for _ in 0..MAX_WAITING {
            assert!(!t.saturated(a));
            let _ = t.strike(a);
        }
        assert!(t.saturated(a));
        t.done(a);
        assert!(!t.saturated(a));
        for i in 0..(MAX_ADDRS as u32 + 100) {
            let ip: IpAddr = std::net::Ipv4Addr::from(0x0b00_0000 + i).into();
            let _ = t.strike(ip);
            t.done(ip);
        }
        assert!(t.len() <= MAX_ADDRS);
        // The address with refusals still waiting is never evicted.
        assert!(t.table().contains_key(&a));
    }
}
