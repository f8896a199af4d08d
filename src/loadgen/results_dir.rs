//! `[io]` Where a run's report folder goes by default:
//! `results/<kind>-<UTC timestamp>/` under the current directory (`bench`
//! and `loadgen` alike), with `-2`, `-3`, ... when that name is taken.

use std::path::PathBuf;

/// `YYYYMMDD-HHMMSS` (UTC) of a Unix time in milliseconds.
pub fn utc_timestamp(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian; the
    // well-known era/day-of-era algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// `results/<kind>-<started>`, or the first of `...-2`, `...-3` that does
/// not exist yet.
pub fn default_out_dir(kind: &str, started: &str) -> PathBuf {
    let base = PathBuf::from("results").join(format!("{kind}-{started}"));
    let mut dir = base.clone();
    let mut n = 2;
    while dir.exists() {
        dir = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    dir
}
