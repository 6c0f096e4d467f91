//! Kafka's rules for topic names.

/// Longest legal topic name (Kafka: 249, so that `<topic>-<partition>` fits a file name).
pub const TOPIC_NAME_LENGTH_MAX: usize = 249;

/// Checks a topic name as Kafka's `Topic.validate` does.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the empty string is not a valid topic name".into());
    }
    if name == "." || name == ".." {
        return Err(format!("'{name}' is not a valid topic name"));
    }
    if name.len() > TOPIC_NAME_LENGTH_MAX {
        return Err(format!(
            "topic name is {} characters, longer than the maximum of {TOPIC_NAME_LENGTH_MAX}",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '.' || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "topic name '{name}' contains '{bad}'; legal characters are ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// Kafka refuses two topics whose names differ only in '.' versus '_' (metric names collide).
pub fn collides(a: &str, b: &str) -> bool {
    a != b && a.replace('.', "_") == b.replace('.', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_rules() {
        assert!(validate_topic_name("orders-v1.eu_2").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name(".").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("a b").is_err());
        assert!(validate_topic_name("a/b").is_err());
        assert!(validate_topic_name(&"x".repeat(249)).is_ok());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
        assert!(collides("a.b", "a_b"));
        assert!(!collides("a.b", "a.b"));
        assert!(!collides("a.b", "a-b"));
    }
}
