//! Byte sizes as users write them (`65536`, `64k`, `64m`, `64MB`, `1g`) and as we print them
//! (`64M`, `1536K`, `1.5M`).
//!
//! Units are binary: `k` is 1024 bytes, `m` 1024², `g` 1024³, in either case, optionally followed
//! by `b`/`B`. Only whole numbers are accepted (`1.5g` is rejected with a hint to write `1536m`),
//! never negative, and never a value that overflows `usize`. Whether a size may be zero is the
//! caller's decision (validation), not the parser's.

use std::fmt;

/// One kibibyte, 1024 bytes.
pub const KIB: usize = 1024;
/// One mebibyte, 1024 KiB.
pub const MIB: usize = 1024 * KIB;
/// One gibibyte, 1024 MiB.
pub const GIB: usize = 1024 * MIB;

/// The units [`parse_size`] accepts and [`format_size`] prints, largest first.
const UNITS: [(char, usize); 3] = [('G', GIB), ('M', MIB), ('K', KIB)];

/// Why a text is not a size. Its `Display` is the reason alone (no value), so that callers can
/// say which key and value it was about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeError {
    /// Nothing (or only whitespace) was given.
    Empty,
    /// A leading minus sign.
    Negative,
    /// A decimal fraction such as `1.5g`; `suggestion` is the same size in a smaller unit when
    /// it is a whole number there (`1536m`).
    Fraction {
        /// The same size written without a fraction, if there is such a spelling.
        suggestion: Option<String>,
    },
    /// Not a number followed by an optional k, m or g suffix.
    Malformed,
    /// The size does not fit in `usize`, far beyond the largest heap ([`super::MAX_HEAP`]).
    Overflow,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const EXPECTED: &str = "expected a number with an optional k, m or g suffix, e.g. 64m";
        match self {
            SizeError::Empty => write!(f, "it is empty; {EXPECTED}"),
            SizeError::Negative => write!(f, "sizes cannot be negative"),
            SizeError::Fraction {
                suggestion: Some(s),
            } => {
                write!(f, "fractions are not allowed; write {s} instead")
            }
            SizeError::Fraction { suggestion: None } => {
                write!(
                    f,
                    "fractions are not allowed; use a smaller unit, e.g. 1536m for 1.5g"
                )
            }
            SizeError::Malformed => write!(f, "{EXPECTED}"),
            SizeError::Overflow => write!(
                f,
                "too large: no size setting allows more than {}",
                format_size(super::MAX_HEAP)
            ),
        }
    }
}

impl std::error::Error for SizeError {}

/// The multiplier of a unit suffix (`""`, `b`, `k`, `kb`, `m`, `mb`, `g`, `gb`, any case), or
/// `None` if `suffix` is not one.
fn unit_multiplier(suffix: &str) -> Option<usize> {
    let lower = suffix.to_ascii_lowercase();
    let unit = lower.strip_suffix('b').unwrap_or(&lower);
    match unit {
        "" => Some(1),
        "k" => Some(KIB),
        "m" => Some(MIB),
        "g" => Some(GIB),
        _ => None,
    }
}

/// Parses a size in bytes: `65536`, `64k`, `64K`, `64kb`, `64m`, `64MB`, `1g`, `100b`.
///
/// Surrounding whitespace is ignored; anything else that is not digits followed by an optional
/// unit is an error. Zero is accepted here; validation decides where a size must be positive.
pub fn parse_size(text: &str) -> Result<usize, SizeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(SizeError::Empty);
    }
    if text.starts_with('-') {
        return Err(SizeError::Negative);
    }
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, rest) = text.split_at(digits_end);
    if let Some(after_point) = rest.strip_prefix('.') {
        return Err(fraction_error(digits, after_point));
    }
    if digits.is_empty() {
        return Err(SizeError::Malformed);
    }
    let multiplier = unit_multiplier(rest).ok_or(SizeError::Malformed)?;
    // `digits` is non-empty and all ASCII digits, so the only possible failure is overflow.
    let number: usize = digits.parse().map_err(|_| SizeError::Overflow)?;
    number.checked_mul(multiplier).ok_or(SizeError::Overflow)
}

/// The error for `<whole>.<after_point>`: a fraction if the rest is digits and a unit (with a
/// suggested whole spelling in a smaller unit, when one exists), else a malformed size.
fn fraction_error(whole: &str, after_point: &str) -> SizeError {
    let frac_end = after_point
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after_point.len());
    let (frac, suffix) = after_point.split_at(frac_end);
    let Some(multiplier) = unit_multiplier(suffix) else {
        return SizeError::Malformed;
    };
    if whole.is_empty() && frac.is_empty() {
        return SizeError::Malformed;
    }
    SizeError::Fraction {
        suggestion: whole_spelling(whole, frac, multiplier),
    }
}

/// `whole.frac × multiplier` written as a whole number of the largest smaller unit that makes
/// it exact (`1.5`, GiB → `1536m`), or `None` if there is none or the numbers are too long.
fn whole_spelling(whole: &str, frac: &str, multiplier: usize) -> Option<String> {
    if whole.len() > 12 || frac.len() > 12 {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac_value: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let scale = 10u128.pow(frac.len() as u32);
    let multiplier = multiplier as u128;
    let smaller_units = UNITS
        .iter()
        .map(|&(name, bytes)| (Some(name), bytes as u128))
        .chain(std::iter::once((None, 1u128)))
        .filter(|&(_, bytes)| bytes < multiplier);
    for (name, unit_bytes) in smaller_units {
        let factor = multiplier / unit_bytes;
        let (frac_units, rest) = (frac_value * factor / scale, frac_value * factor % scale);
        if rest == 0 {
            let count = whole * factor + frac_units;
            let total = count.checked_mul(unit_bytes)?;
            if total > usize::MAX as u128 {
                return None;
            }
            return Some(match name {
                Some(name) => format!("{count}{}", name.to_ascii_lowercase()),
                None => count.to_string(),
            });
        }
    }
    None
}

/// Formats a byte count the way HotSpot logs do: `100B`, `64K`, `1536K`, `64M`, `1G`.
///
/// A count that is a multiple of 1 KiB is printed exactly in the largest unit that divides it
/// (so the text parses back to the same number). Other counts of at least 1 KiB are printed with
/// one decimal in the largest unit not above them (`1.5M`), which is approximate.
pub fn format_size(bytes: usize) -> String {
    // Units are powers of two: `bytes & (unit - 1)` is `bytes % unit`.
    if bytes & (KIB - 1) == 0 && bytes != 0 {
        let (name, unit) = UNITS
            .iter()
            .copied()
            .find(|&(_, unit)| bytes & (unit - 1) == 0)
            .expect("a multiple of KIB is divisible by KIB");
        return format!("{}{name}", bytes / unit);
    }
    format_size_rounded(bytes)
}

/// Formats a byte count for people: in the largest unit not above it, exactly when it is a
/// whole number of that unit (`24G`), else with one decimal, approximately (`23.5G`).
pub fn format_size_rounded(bytes: usize) -> String {
    let Some(index) = UNITS.iter().position(|&(_, unit)| bytes >= unit) else {
        return format!("{bytes}B");
    };
    let (name, unit) = UNITS[index];
    if bytes & (unit - 1) == 0 {
        return format!("{}{name}", bytes / unit);
    }
    // Tenths of the unit, rounded to nearest.
    let tenths = (bytes as u128 * 10 + unit as u128 / 2) / unit as u128;
    if tenths >= 10_240 && index > 0 {
        // Rounds up to the next unit (e.g. 1 MiB - 1 byte): say "1.0M", not "1024.0K".
        let (bigger_name, bigger_unit) = UNITS[index - 1];
        let tenths = (bytes as u128 * 10 + bigger_unit as u128 / 2) / bigger_unit as u128;
        return format!("{}.{}{bigger_name}", tenths / 10, tenths % 10);
    }
    format!("{}.{}{name}", tenths / 10, tenths % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_bytes_and_suffixes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("100b"), Ok(100));
        assert_eq!(parse_size("100B"), Ok(100));
        assert_eq!(parse_size("64k"), Ok(64 * KIB));
        assert_eq!(parse_size("64K"), Ok(64 * KIB));
        assert_eq!(parse_size("64kb"), Ok(64 * KIB));
        assert_eq!(parse_size("64m"), Ok(64 * MIB));
        assert_eq!(parse_size("64M"), Ok(64 * MIB));
        assert_eq!(parse_size("64mb"), Ok(64 * MIB));
        assert_eq!(parse_size("64MB"), Ok(64 * MIB));
        assert_eq!(parse_size("64Mb"), Ok(64 * MIB));
        assert_eq!(parse_size("1g"), Ok(GIB));
        assert_eq!(parse_size("1G"), Ok(GIB));
        assert_eq!(parse_size("1GB"), Ok(GIB));
        assert_eq!(parse_size("  8m \n"), Ok(8 * MIB));
    }

    #[test]
    fn bad_inputs_are_rejected_with_a_reason() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert_eq!(parse_size("   "), Err(SizeError::Empty));
        assert_eq!(parse_size("12q"), Err(SizeError::Malformed));
        assert_eq!(parse_size("m"), Err(SizeError::Malformed));
        assert_eq!(parse_size("64 m"), Err(SizeError::Malformed));
        assert_eq!(parse_size("64bb"), Err(SizeError::Malformed));
        assert_eq!(parse_size("64mbb"), Err(SizeError::Malformed));
        assert_eq!(parse_size("0x10"), Err(SizeError::Malformed));
        assert_eq!(parse_size("+5m"), Err(SizeError::Malformed));
        assert_eq!(parse_size("1_000"), Err(SizeError::Malformed));
        assert_eq!(parse_size("1.5q"), Err(SizeError::Malformed));
        assert_eq!(parse_size("."), Err(SizeError::Malformed));
        assert_eq!(parse_size("-5m"), Err(SizeError::Negative));
        assert_eq!(parse_size("-0"), Err(SizeError::Negative));
        for bad in ["", "12q", "-5m", "1.5g"] {
            let reason = parse_size(bad).unwrap_err().to_string();
            assert!(!reason.is_empty(), "{bad:?} has no reason");
        }
        assert!(parse_size("12q")
            .unwrap_err()
            .to_string()
            .contains("k, m or g"));
        assert!(parse_size("-5m")
            .unwrap_err()
            .to_string()
            .contains("negative"));
    }

    #[test]
    fn fractions_are_rejected_with_a_whole_spelling() {
        assert_eq!(
            parse_size("1.5g"),
            Err(SizeError::Fraction {
                suggestion: Some("1536m".into())
            })
        );
        assert!(parse_size("1.5g")
            .unwrap_err()
            .to_string()
            .contains("1536m"));
        assert_eq!(
            parse_size("0.25m"),
            Err(SizeError::Fraction {
                suggestion: Some("256k".into())
            })
        );
        assert_eq!(
            parse_size(".5k"),
            Err(SizeError::Fraction {
                suggestion: Some("512".into())
            })
        );
        assert_eq!(
            parse_size("1.5"),
            Err(SizeError::Fraction { suggestion: None })
        );
        assert_eq!(
            parse_size("0.3k"),
            Err(SizeError::Fraction { suggestion: None })
        );
    }

    #[test]
    fn overflow_is_an_error() {
        assert_eq!(
            parse_size("99999999999999999999999999"),
            Err(SizeError::Overflow)
        );
        let max = usize::MAX.to_string();
        assert_eq!(parse_size(&max), Ok(usize::MAX));
        assert_eq!(parse_size(&format!("{max}k")), Err(SizeError::Overflow));
        let just_too_big = (usize::MAX / GIB + 1).to_string();
        assert_eq!(
            parse_size(&format!("{just_too_big}g")),
            Err(SizeError::Overflow)
        );
        // The message names the real limit, the largest heap, not the largest `usize`.
        assert_eq!(
            parse_size(&format!("{max}g")).unwrap_err().to_string(),
            format!(
                "too large: no size setting allows more than {}",
                format_size(crate::config::MAX_HEAP)
            )
        );
    }

    #[test]
    fn formatting_is_exact_when_divisible() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(100), "100B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(KIB), "1K");
        assert_eq!(format_size(1536 * KIB), "1536K");
        assert_eq!(format_size(64 * MIB), "64M");
        assert_eq!(format_size(GIB), "1G");
        assert_eq!(format_size(1024 * GIB), "1024G");
        assert_eq!(format_size(3 * GIB + MIB), "3073M");
    }

    #[test]
    fn formatting_uses_one_decimal_otherwise() {
        assert_eq!(format_size(MIB + MIB / 2 + 1), "1.5M");
        assert_eq!(format_size(KIB + 1), "1.0K");
        assert_eq!(format_size(KIB + 512 + 1), "1.5K");
        assert_eq!(format_size(MIB - 1), "1.0M");
        assert_eq!(format_size(GIB + 1), "1.0G");
        // Rounded: in the largest unit not above, whole units exactly.
        assert_eq!(format_size_rounded(24_684_084 * KIB), "23.5G");
        assert_eq!(format_size_rounded(1536 * KIB), "1.5M");
        assert_eq!(format_size_rounded(24 * GIB), "24G");
        assert_eq!(format_size_rounded(100), "100B");
        assert_eq!(
            format_size(usize::MAX),
            format!("{}.0G", usize::MAX / GIB + 1)
        );
    }

    #[test]
    fn exact_formats_parse_back() {
        for bytes in [0, 1, 100, KIB, 1536 * KIB, 64 * MIB, 5 * GIB, 89_456_640] {
            let text = format_size(bytes);
            assert_eq!(parse_size(&text), Ok(bytes), "{text}");
        }
    }
}
