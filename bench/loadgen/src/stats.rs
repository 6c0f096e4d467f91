//! Latency histograms (HdrHistogram, µs, 3 significant digits) and a small
//! JSON writer for the result.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

/// Highest latency recorded: 10 minutes in µs (larger values are clamped).
const MAX_US: u64 = 600_000_000;

/// A latency histogram in microseconds.
#[derive(Clone)]
pub struct Latency {
    h: Histogram<u64>,
}

impl std::fmt::Debug for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Latency({} values)", self.h.len())
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Latency {
        // 3 significant digits over 1 µs ..= 10 min: the bounds are valid, so
        // construction cannot fail; fall back to auto-resizing just in case.
        let h = Histogram::new_with_bounds(1, MAX_US, 3)
            .or_else(|_| Histogram::new(3))
            .unwrap_or_else(|_| unreachable!("3 significant digits are valid"));
        Latency { h }
    }

    /// Records one value (µs), clamped to the histogram's range.
    pub fn record(&mut self, us: u64) {
        let _ = self.h.record(us.clamp(1, MAX_US));
    }

    /// Adds another histogram.
    pub fn merge(&mut self, other: &Latency) {
        let _ = self.h.add(&other.h);
    }

    /// JSON object: count, mean, p50, p90, p99, p99.9, p99.99, max (ms), and
    /// the percentile curve (`curve`: [percentile, ms] pairs, HdrHistogram's
    /// "percentile distribution" with 5 ticks per half distance).
    pub fn to_json(&self) -> Json {
        if self.h.is_empty() {
            return Json::obj(vec![("count", Json::Int(0))]);
        }
        let ms = |us: u64| Json::Num(us as f64 / 1000.0);
        let mut curve = Vec::new();
        for v in self.h.iter_quantiles(5) {
            let q = v.quantile_iterated_to() * 100.0;
            curve.push(Json::Arr(vec![
                Json::Num(q),
                ms(self.h.highest_equivalent(v.value_iterated_to())),
            ]));
            if q >= 99.9999 {
                break;
            }
        }
        Json::obj(vec![
            ("count", Json::Int(self.h.len() as i64)),
            ("mean_ms", Json::Num(self.h.mean() / 1000.0)),
            ("p50_ms", ms(self.h.value_at_quantile(0.50))),
            ("p90_ms", ms(self.h.value_at_quantile(0.90))),
            ("p99_ms", ms(self.h.value_at_quantile(0.99))),
            ("p999_ms", ms(self.h.value_at_quantile(0.999))),
            ("p9999_ms", ms(self.h.value_at_quantile(0.9999))),
            ("max_ms", ms(self.h.max())),
            ("curve", Json::Arr(curve)),
        ])
    }
}

/// A JSON value (enough for the result file).
#[derive(Debug, Clone)]
pub enum Json {
    /// null
    Null,
    /// true / false
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float (non-finite values are written as null).
    Num(f64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, in insertion order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(key, value)` pairs.
    pub fn obj(pairs: Vec<(&str, Json)>) -> Json {
        Json::Obj(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    /// Serializes compactly.
    pub fn render(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn write(&self, s: &mut String) {
        match self {
            Json::Null => s.push_str("null"),
            Json::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(s, "{i}");
            }
            Json::Num(f) if f.is_finite() => {
                let _ = write!(s, "{f}");
            }
            Json::Num(_) => s.push_str("null"),
            Json::Str(t) => write_str(s, t),
            Json::Arr(a) => {
                s.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    v.write(s);
                }
                s.push(']');
            }
            Json::Obj(o) => {
                s.push('{');
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    write_str(s, k);
                    s.push(':');
                    v.write(s);
                }
                s.push('}');
            }
        }
    }
}

fn write_str(s: &mut String, t: &str) {
    s.push('"');
    for c in t.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_json() {
        let mut l = Latency::new();
        for us in 1..=10_000u64 {
            l.record(us);
        }
        let j = l.to_json().render();
        assert!(j.contains("\"count\":10000"), "{j}");
        assert!(j.contains("\"p50_ms\":5.0"), "{j}");
        assert!(j.contains("\"curve\":[["), "{j}");
        assert_eq!(
            Json::obj(vec![("a\"b", Json::Str("x\ny".into())), ("n", Json::Null)]).render(),
            "{\"a\\\"b\":\"x\\ny\",\"n\":null}"
        );
    }
}
