//! `[pure]` Kafka's topic name rule, the one copy every layer uses
//! (`org.apache.kafka.common.internals.Topic.validate`): 1..=249
//! characters of `[a-zA-Z0-9._-]`, and not `.` or `..`.
//!
//! Metadata answers INVALID_TOPIC_EXCEPTION for a name that breaks it,
//! DescribeConfigs and the Produce path refuse it, and topic creation
//! reports the reason with Kafka's own messages (the `Display` below:
//! `Topic.detectInvalidTopic` of Kafka 3.9, the text a 3.9 broker's
//! CreateTopics answers; tests/differential_kafka.rs compares them).

/// Kafka's `Topic.MAX_NAME_LENGTH`.
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// Why a topic name is illegal; `Display` is Kafka's message for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicNameError {
    #[error("Topic name is invalid: the empty string is not allowed")]
    Empty,
    /// `.` or `..` (the name).
    #[error("Topic name is invalid: '{0}' is not allowed")]
    DotOrDotDot(String),
    #[error(
        "Topic name is invalid: the length of '{0}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    )]
    TooLong(String),
    #[error(
        "Topic name is invalid: '{0}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    )]
    IllegalChars(String),
}

/// Kafka's `Topic.validate`, checks in Kafka's order (empty, `.`/`..`,
/// length, characters) so the first broken rule is the one reported.
pub fn validate_topic_name(name: &str) -> Result<(), TopicNameError> {
    if name.is_empty() {
        return Err(TopicNameError::Empty);
    }
    if name == "." || name == ".." {
        return Err(TopicNameError::DotOrDotDot(name.to_owned()));
    }
    if name.len() > MAX_TOPIC_NAME_LENGTH {
        return Err(TopicNameError::TooLong(name.to_owned()));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
    {
        return Err(TopicNameError::IllegalChars(name.to_owned()));
    }
    Ok(())
}

/// [`validate_topic_name`] as a yes/no, for callers that answer one error
/// code whatever the reason.
pub fn is_valid_topic_name(name: &str) -> bool {
    validate_topic_name(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_name_rule_matches_kafka() {
        let long = "a".repeat(250);
        let rows = [
            ("a", true),
            ("A.b_c-9", true),
            ("", false),
            (".", false),
            ("..", false),
            ("a b", false),
            ("é", false),
            (&long[..249], true),
            (&long[..], false),
        ];
        for (name, ok) in rows {
            assert_eq!(is_valid_topic_name(name), ok, "{name}");
        }
    }

    #[test]
    fn the_first_broken_rule_is_reported_with_kafkas_message() {
        let long = "a".repeat(250);
        let rows = [
            ("", "Topic name is invalid: the empty string is not allowed".to_owned()),
            (".", "Topic name is invalid: '.' is not allowed".to_owned()),
            ("..", "Topic name is invalid: '..' is not allowed".to_owned()),
            (
                long.as_str(),
                format!("Topic name is invalid: the length of '{long}' is longer than the max allowed length 249"),
            ),
            (
                "a b",
                "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'".to_owned(),
            ),
        ];
        for (name, message) in rows {
            assert_eq!(
                validate_topic_name(name).unwrap_err().to_string(),
                message,
                "{name:?}"
            );
        }
    }
}
