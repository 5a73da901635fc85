//! Server names: what Switchboard accepts, and fitting other names to it.

use std::collections::HashSet;

use crate::config::{MAX_SERVER_NAME as MAX_LEN, ServerName};

/// Whether `name` is a valid Switchboard server name.
pub(super) fn is_valid(name: &str) -> bool {
    ServerName::new(name).is_ok()
}

/// Fits `name` to the rules within `max` characters; an empty result becomes `server`.
pub(super) fn sanitize(name: &str, max: usize) -> String {
    let name = ServerName::sanitize_within(name, max);
    if name.is_empty() {
        "server".to_owned()
    } else {
        name
    }
}

/// Hands out unique valid names in import order.
#[derive(Debug, Default)]
pub(super) struct Namer {
    taken: HashSet<String>,
}

impl Namer {
    /// The name for a server called `source`, and a note when it had to change.
    pub(super) fn assign(&mut self, source: &str) -> (String, Option<String>) {
        let base = if is_valid(source) {
            source.to_owned()
        } else {
            sanitize(source, MAX_LEN)
        };
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            let suffix = format!("-{n}");
            name = format!("{}{suffix}", sanitize(&base, MAX_LEN - suffix.len()));
            n += 1;
        }
        self.taken.insert(name.clone());
        let note = if name == source {
            None
        } else if base == name {
            Some(format!(
                "renamed from \"{source}\" to \"{name}\": Switchboard server names use only \
                 letters, digits, `_` and `-`, at most {MAX_LEN} characters"
            ))
        } else {
            Some(format!(
                "renamed from \"{source}\" to \"{name}\": \"{base}\" was already taken by \
                 another imported server"
            ))
        };
        (name, note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity() {
        assert!(is_valid("github"));
        assert!(is_valid("my-server_2"));
        assert!(!is_valid("_x"));
        assert!(!is_valid("-x"));
        assert!(!is_valid("a__b"));
        assert!(!is_valid("a_"));
        assert!(!is_valid("a.b"));
        assert!(!is_valid(""));
        assert!(!is_valid(&"a".repeat(41)));
        assert!(is_valid(&"a".repeat(40)));
    }

    #[test]
    fn sanitizing() {
        assert_eq!(sanitize("My Server (prod)", 40), "My_Server_prod");
        assert_eq!(sanitize("__a..b__", 40), "a_b");
        assert_eq!(sanitize("-x-", 40), "x");
        assert_eq!(sanitize("日本", 40), "server");
        assert_eq!(
            sanitize(&format!("{}_{}", "a".repeat(39), "b"), 40),
            "a".repeat(39)
        );
    }

    #[test]
    fn collisions_get_suffixes_within_the_limit() {
        let mut namer = Namer::default();
        assert_eq!(namer.assign("a b").0, "a_b");
        assert_eq!(namer.assign("a.b").0, "a_b-2");
        assert_eq!(namer.assign("a_b").0, "a_b-3");
        let long = "x".repeat(40);
        assert_eq!(namer.assign(&long), (long.clone(), None));
        let (second, note) = namer.assign(&long);
        assert_eq!(second, format!("{}-2", "x".repeat(38)));
        assert!(note.is_some_and(|n| n.contains("already taken")));
    }
}
