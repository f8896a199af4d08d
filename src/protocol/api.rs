//! `[pure]` Supported API version ranges.
//!
//! The one table of (ApiKey → version range) lives with the handlers in
//! `server::dispatch` (each handler file declares its range); this module
//! holds the row type and the lookups ApiVersions and dispatch share.

use kafka_protocol::messages::ApiKey;

/// One row of the supported-API table: we implement `api_key` for every
/// version in `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRange {
    pub api_key: ApiKey,
    pub min: i16,
    pub max: i16,
}

impl ApiRange {
    pub const fn new(api_key: ApiKey, min: i16, max: i16) -> Self {
        Self { api_key, min, max }
    }

    pub fn supports(&self, version: i16) -> bool {
        (self.min..=self.max).contains(&version)
    }
}

/// The row for `api_key`, if we implement it at all.
pub fn find(table: &[ApiRange], api_key: ApiKey) -> Option<&ApiRange> {
    table.iter().find(|r| r.api_key == api_key)
}

/// Rows whose range is empty, duplicated, or outside what the
/// `kafka-protocol` crate can encode; a correct table returns nothing.
pub fn table_problems(table: &[ApiRange]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, row) in table.iter().enumerate() {
        let valid = row.api_key.valid_versions();
        if row.min > row.max {
            problems.push(format!("{:?}: empty range", row.api_key));
        }
        if row.min < valid.min || row.max > valid.max {
            problems.push(format!(
                "{:?}: {}..={} outside codec range {}",
                row.api_key, row.min, row.max, valid
            ));
        }
        if table[..i].iter().any(|r| r.api_key == row.api_key) {
            problems.push(format!("{:?}: listed twice", row.api_key));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_problems_flags_bad_rows() {
        let table = [
            ApiRange::new(ApiKey::Metadata, 0, 12),
            ApiRange::new(ApiKey::Metadata, 0, 1),
            ApiRange::new(ApiKey::ApiVersions, 0, 9),
            ApiRange::new(ApiKey::Fetch, 5, 4),
        ];
        let problems = table_problems(&table);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(table_problems(&table[..1]).is_empty());
    }

    #[test]
    fn find_and_supports_follow_the_row() {
        let table = [ApiRange::new(ApiKey::ApiVersions, 0, 4)];
        let row = find(&table, ApiKey::ApiVersions).unwrap();
        assert!(row.supports(0) && row.supports(4));
        assert!(!row.supports(5) && !row.supports(-1));
        assert!(find(&table, ApiKey::Produce).is_none());
    }
}
