//! The command line's parts that are not its definition: each in its own module, so that `main.rs` stays the
//! definition and the dispatch.

pub mod check;
pub mod completions;
pub mod progress;
pub mod run;
pub mod sink;

use clap::builder::{PossibleValue, PossibleValuesParser};

use onnx_bcast::diagnostic::Code;

/// `check` and `expand` read sites, not the facts of every value.
pub const SITES_ONLY: onnx_bcast::analysis::Options = onnx_bcast::analysis::Options { value_facts: false };

/// Exit statuses, ordered so that the worst of several models wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Clean = 0,
    Findings = 1,
    Failed = 2,
}

/// `all` and every diagnostic code (without `all` for `explain`), each with its summary for completions.
pub fn code_parser(with_all: bool) -> PossibleValuesParser {
    let all = with_all.then(|| PossibleValue::new("all").help("every code"));
    let codes = Code::ALL.iter().map(|&c| PossibleValue::new(c.as_str()).help(onnx_bcast::explain::summary(c)));
    PossibleValuesParser::new(all.into_iter().chain(codes))
}

/// `-j N`: a number of threads, at least 1.
pub fn parse_jobs(text: &str) -> Result<std::num::NonZeroUsize, String> {
    let n: usize = text.trim().parse().map_err(|_| format!("`{text}` is not a number of threads"))?;
    std::num::NonZeroUsize::new(n).ok_or_else(|| "must be at least 1; leave -j out for one thread per core".to_string())
}

/// A size in bytes: a number, optionally with a unit, `KiB`/`MiB`/`GiB` (powers of 1024, also `K`, `M`, `G`) or
/// `kB`/`MB`/`GB` (powers of 1000); `16MiB`, `1.5 GiB` and `4096` are all sizes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return Err(format!("`{text}`: unknown unit `{unit}`; use B, KiB, MiB, GiB, kB, MB or GB")),
    };
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a size in bytes (e.g. 4096, 16MiB)"))?;
    let bytes = value * scale as f64;
    if !(0.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_and_decimal_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("1KiB"), Ok(1024));
        assert_eq!(parse_bytes("16MiB"), Ok(16 << 20));
        assert_eq!(parse_bytes("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("2kB"), Ok(2000));
        assert_eq!(parse_bytes("1M"), Ok(1 << 20));
        assert!(parse_bytes("12 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_bytes("MiB").is_err());
    }

    #[test]
    fn jobs_must_be_at_least_one() {
        assert_eq!(parse_jobs("3").map(|n| n.get()), Ok(3));
        assert!(parse_jobs("0").unwrap_err().contains("at least 1"));
        assert!(parse_jobs("x").is_err());
    }
}
