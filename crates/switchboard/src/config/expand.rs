//! `${VAR}` and `${VAR:-default}` expansion in configuration values. `${user_config.KEY}` is
//! a variable too: an MCPB bundle's entry keeps its sensitive values as such references, and
//! the loader sets them from the secret store for that entry only (elsewhere they are unset).

use super::Environment;

/// The prefix of a bundle's `user_config` values among variables (`${user_config.KEY}`).
pub(crate) const USER_CONFIG_PREFIX: &str = "user_config.";

/// A reference to a variable that is not set and has no default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("variable `{var}` is not set")]
pub struct ExpandError {
    pub var: String,
}

/// Expands `${NAME}` and `${NAME:-default}` (the default is used when the variable is unset or
/// empty, as in the shell). Text that is not a well-formed reference is kept as written.
pub fn expand_vars(input: &str, env: &Environment) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        if is_var_name(name) {
            match (
                env.get(name).filter(|v| !v.is_empty() || default.is_none()),
                default,
            ) {
                (Some(value), _) => out.push_str(value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    return Err(ExpandError {
                        var: name.to_owned(),
                    });
                }
            }
        } else {
            out.push_str(&rest[start..start + 2 + end + 1]);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(name: &str) -> bool {
    if let Some(key) = name.strip_prefix(USER_CONFIG_PREFIX) {
        return !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    }
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        [("HOME", "/home/me"), ("EMPTY", ""), ("TOKEN", "t0k")]
            .into_iter()
            .collect()
    }

    #[test]
    fn expands_set_variables_and_defaults() {
        let env = env();
        assert_eq!(expand_vars("${HOME}/x", &env).unwrap(), "/home/me/x");
        assert_eq!(expand_vars("Bearer ${TOKEN}", &env).unwrap(), "Bearer t0k");
        assert_eq!(expand_vars("${NOPE:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand_vars("${EMPTY:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand_vars("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand_vars("${NOPE:-}", &env).unwrap(), "");
    }

    #[test]
    fn keeps_text_that_is_not_a_reference() {
        let env = env();
        assert_eq!(
            expand_vars("$HOME ${ not a var} ${unclosed", &env).unwrap(),
            "$HOME ${ not a var} ${unclosed"
        );
        assert_eq!(
            expand_vars("${input:api-key}", &env).unwrap(),
            "${input:api-key}"
        );
    }

    #[test]
    fn user_config_references_are_variables() {
        let mut env = env();
        env.set("user_config.api_key", "k3y");
        assert_eq!(
            expand_vars("Bearer ${user_config.api_key}", &env).unwrap(),
            "Bearer k3y"
        );
        assert_eq!(
            expand_vars("${user_config.other}", &env).unwrap_err().var,
            "user_config.other"
        );
    }

    #[test]
    fn names_the_missing_variable() {
        assert_eq!(
            expand_vars("a ${MISSING} b", &env()).unwrap_err().var,
            "MISSING"
        );
    }
}
