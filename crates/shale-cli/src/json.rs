//! JSON lines of benchmark results, written with serde_json.
//!
//! The result structs (`bench::report::BenchJson`, the YCSB line) derive `Serialize` and
//! `Deserialize`; this module holds what they share: writing one object per line, and
//! name-to-count maps that keep their order when written. serde is the de-facto standard
//! for this in Rust and serde_json writes non-finite floats as `null`, as JSON has no NaN.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::CliError;

/// `v` as one line of JSON (no trailing newline).
pub fn to_line<T: Serialize>(v: &T) -> Result<String, CliError> {
    serde_json::to_string(v).map_err(|e| CliError::msg(format!("cannot write JSON: {e}")))
}

/// `#[serde(with = "crate::json::ordered_map")]` for `Vec<(String, T)>`: written as a JSON
/// object whose fields keep the vector's order; read back from any object (in key order).
pub mod ordered_map {
    use super::*;

    /// Write the pairs as one object.
    pub fn serialize<S: Serializer, T: Serialize>(
        v: &[(String, T)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(v.iter().map(|(k, v)| (k, v)))
    }

    /// Read an object into pairs.
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Vec<(String, T)>, D::Error> {
        let m = std::collections::BTreeMap::<String, T>::deserialize(d)?;
        Ok(m.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Sample {
        benchmark: String,
        seconds: f64,
        whole: f64,
        nan: Option<f64>,
        found: Option<u64>,
        #[serde(with = "ordered_map")]
        written: Vec<(String, u64)>,
    }

    #[test]
    fn lines_are_valid_json_with_ordered_maps() {
        let s = Sample {
            benchmark: "fill\"random\"\n\\\u{1}é".into(),
            seconds: 1.25,
            whole: 3.0,
            nan: Some(f64::NAN),
            found: None,
            written: vec![("wal".into(), 12), ("flush".into(), 0)],
        };
        let text = to_line(&s).unwrap();
        assert!(!text.contains('\n'));
        assert!(text.contains(r#""whole":3.0"#), "{text}");
        assert!(text.contains(r#""nan":null"#), "{text}");
        assert!(text.contains(r#""written":{"wal":12,"flush":0}"#), "{text}");
        let back: Sample = serde_json::from_str(&text).unwrap();
        assert_eq!(back.benchmark, s.benchmark);
        assert_eq!(back.nan, None);
        assert_eq!(back.written.len(), 2);
    }
}
