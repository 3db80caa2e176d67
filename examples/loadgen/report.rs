//! Latency series, and the report as text, JSON and the BENCHMARKS.md table.

use std::time::Duration;

use serde_json::{Value, json};

/// Round trips of one kind, with their errors and the wall time they took together.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub samples: Vec<Duration>,
    pub errors: u64,
    pub wall: Duration,
}

impl Series {
    pub fn new(name: &str) -> Series {
        Series {
            name: name.to_owned(),
            samples: Vec::new(),
            errors: 0,
            wall: Duration::ZERO,
        }
    }

    pub fn push(&mut self, d: Duration, ok: bool) {
        self.samples.push(d);
        if !ok {
            self.errors += 1;
        }
    }

    fn pct(&self, p: f64) -> f64 {
        let mut s = self.samples.clone();
        s.sort();
        match s.len() {
            0 => 0.0,
            n => s[((n as f64 * p) as usize).min(n - 1)].as_secs_f64() * 1e3,
        }
    }

    pub fn median_ms(&self) -> f64 {
        self.pct(0.5)
    }

    pub fn p99_ms(&self) -> f64 {
        self.pct(0.99)
    }

    pub fn max_ms(&self) -> f64 {
        self.samples
            .iter()
            .max()
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    }

    pub fn per_s(&self) -> f64 {
        let w = self.wall.as_secs_f64();
        if w > 0.0 {
            self.samples.len() as f64 / w
        } else {
            0.0
        }
    }

    pub fn json(&self) -> Value {
        json!({"name": self.name, "calls": self.samples.len(), "errors": self.errors,
            "medianMs": round(self.median_ms()), "p99Ms": round(self.p99_ms()), "maxMs": round(self.max_ms()),
            "perSecond": self.per_s().round()})
    }

    pub fn text(&self, ratio: &str) -> String {
        format!(
            "{:<58} {:>6} {:>4} {:>8.3} {:>8.3} {:>8.3} {:>9.0}  {ratio}",
            self.name,
            self.samples.len(),
            self.errors,
            self.median_ms(),
            self.p99_ms(),
            self.max_ms(),
            self.per_s()
        )
    }
}

pub fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub const HEADER: &str = "series                                                      calls  err  med ms   p99 ms   max ms     per s  ratio";
