//! Keeping configured secrets out of what is shown: URLs in errors and logs lose their
//! userinfo and query values ([`redact_url`], [`redact_urls_in`]); values shown as written
//! keep their `${VAR}` references and lose their literal text ([`mask_written`],
//! [`redact_written_url`]).
//!
//! URLs are taken apart by hand, not with `url::Url`: a URL as written may hold `${VAR}`
//! references that do not parse, and what is shown should differ from the input only where it
//! is masked.

/// What a masked value is shown as.
pub const MASK: &str = "***";

/// `url` with its userinfo (`user:pass@`) and every query and fragment value masked:
/// `https://***@host/mcp?api_key=***`. The scheme, host, port and path stay.
pub fn redact_url(url: &str) -> String {
    redact_url_with(url, &|_| MASK.to_owned())
}

/// [`redact_url`] for a URL as written in a configuration file: `${VAR}` references stay
/// (they name a variable, not its value), literal secrets are masked as by [`mask_written`].
pub fn redact_written_url(url: &str) -> String {
    redact_url_with(url, &mask_written)
}

/// Every URL (`scheme://…`, up to white space or a closing quote or bracket) in `text`
/// passed through [`redact_url`]: for messages that may quote a URL, such as errors of the
/// HTTP client.
pub fn redact_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(sep) = rest.find("://") {
        let scheme_start = rest[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[sep..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | ')'))
            .map_or(rest.len(), |i| sep + i);
        if scheme_start == sep {
            // `://` without a scheme before it: not a URL.
            out.push_str(&rest[..sep + 3]);
            rest = &rest[sep + 3..];
            continue;
        }
        out.push_str(&rest[..scheme_start]);
        out.push_str(&redact_url(&rest[scheme_start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A value as written (a header, an environment variable) with its secrets masked: `${VAR}`
/// references stay, and so does a leading authorization scheme (`Bearer `, `Basic `); any
/// other run of literal text with a letter or digit in it becomes [`MASK`], and so does a
/// reference's default (`${VAR:-***}`). `Bearer ${API_TOKEN}` is shown as written,
/// `Bearer sk-123` as `Bearer ***`.
pub fn mask_written(value: &str) -> String {
    const SCHEMES: [&str; 5] = ["bearer ", "basic ", "token ", "bot ", "digest "];
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    if let Some(scheme) = SCHEMES.iter().find(|s| {
        rest.get(..s.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(s))
    }) {
        out.push_str(&rest[..scheme.len()]);
        rest = &rest[scheme.len()..];
    }
    let literal = |text: &str, out: &mut String| {
        if text.chars().any(char::is_alphanumeric) {
            out.push_str(MASK);
        } else {
            out.push_str(text);
        }
    };
    while let Some(start) = rest.find("${") {
        literal(&rest[..start], &mut out);
        let Some(len) = rest[start..].find('}') else {
            literal(&rest[start..], &mut out);
            return out;
        };
        let reference = &rest[start..start + len + 1];
        match reference.split_once(":-") {
            Some((name, default)) if default.len() > 1 => {
                out.push_str(name);
                out.push_str(":-");
                literal(&default[..default.len() - 1], &mut out);
                out.push('}');
            }
            _ => out.push_str(reference),
        }
        rest = &rest[start + len + 1..];
    }
    literal(rest, &mut out);
    out
}

fn redact_url_with(url: &str, mask: &dyn Fn(&str) -> String) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    let authority_end = if scheme.is_empty() {
        0
    } else {
        rest.find(['/', '?', '#']).unwrap_or(rest.len())
    };
    let (authority, rest) = rest.split_at(authority_end);
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(&mask(&authority[..at]));
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let (before_fragment, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (path, query) = match before_fragment.find('?') {
        Some(i) => (&before_fragment[..i], Some(&before_fragment[i + 1..])),
        None => (before_fragment, None),
    };
    out.push_str(path);
    if let Some(query) = query {
        out.push('?');
        out.push_str(&mask_pairs(query, mask, true));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        // A fragment without `=` is an anchor; `#access_token=…` is not.
        out.push_str(&mask_pairs(fragment, mask, false));
    }
    out
}

/// `a=1&b=2` with each value masked; a bare item (`?secret`) is masked whole when `bare`.
fn mask_pairs(pairs: &str, mask: &dyn Fn(&str) -> String, bare: bool) -> String {
    pairs
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, "")) => format!("{key}="),
            Some((key, value)) => format!("{key}={}", mask(value)),
            None if bare && !pair.is_empty() => mask(pair),
            None => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_userinfo_and_query_values() {
        assert_eq!(
            redact_url("https://user:pw@example.com:8443/mcp?api_key=k&x=&flag#token=t"),
            "https://***@example.com:8443/mcp?api_key=***&x=&***#token=***"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:1/mcp"),
            "http://127.0.0.1:1/mcp"
        );
        assert_eq!(redact_url("http://h/p#section"), "http://h/p#section");
        assert_eq!(redact_url("/message?sessionId=1"), "/message?sessionId=***");
    }

    #[test]
    fn urls_inside_text_are_redacted() {
        assert_eq!(
            redact_urls_in(
                "error sending request for url (http://u:p@h:1/mcp?api_key=s): refused; see `ws://h/?t=1`"
            ),
            "error sending request for url (http://***@h:1/mcp?api_key=***): refused; see `ws://h/?t=***`"
        );
        assert_eq!(redact_urls_in("no url :// here"), "no url :// here");
    }

    #[test]
    fn written_values_keep_references_and_hide_literals() {
        assert_eq!(mask_written("Bearer ${API_TOKEN}"), "Bearer ${API_TOKEN}");
        assert_eq!(mask_written("Bearer literal-secret"), "Bearer ***");
        assert_eq!(mask_written("literal"), "***");
        assert_eq!(mask_written("${A}:${B}"), "${A}:${B}");
        assert_eq!(mask_written("${A:-fallback}"), "${A:-***}");
        assert_eq!(mask_written("${A:-}"), "${A:-}");
        assert_eq!(mask_written("key-${A}"), "***${A}");
        assert_eq!(mask_written(""), "");
        assert_eq!(
            redact_written_url("https://user:pw@h/mcp?api_key=${API_TOKEN}&b=lit"),
            "https://***@h/mcp?api_key=${API_TOKEN}&b=***"
        );
    }
}
