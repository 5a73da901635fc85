//! Rewriting VS Code's and Cursor's `${…}` variables to Switchboard's form.

use std::collections::BTreeSet;
use std::path::Path;

/// What a rewrite needs to know, and which forms the host understands.
#[derive(Debug)]
pub(super) struct Vars<'a> {
    pub(super) project_dir: &'a Path,
    pub(super) home: Option<&'a Path>,
    /// Whether `${input:ID}` is understood (VS Code, not Cursor).
    pub(super) inputs: bool,
}

/// What a rewrite found along the way.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// Input ids referenced by `${input:ID}`.
    pub(super) inputs: BTreeSet<String>,
    /// References left as they were because their form is unknown.
    pub(super) unknown: BTreeSet<String>,
}

/// The environment variable that stands for VS Code input `id`.
pub(super) fn input_var(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether `${inner}` is already Switchboard's `${VAR}` or `${VAR:-default}`.
fn is_switchboard_form(inner: &str) -> bool {
    let name_end = inner.find(":-").unwrap_or(inner.len());
    let name = &inner[..name_end];
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Vars<'_> {
    /// Rewrites every `${…}` in `s` that has a Switchboard equivalent.
    pub(super) fn rewrite(&self, s: &str, found: &mut Found) -> String {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                return out;
            };
            let inner = &after[..end];
            match self.replacement(inner, found) {
                Some(text) => out.push_str(&text),
                None => {
                    if !is_switchboard_form(inner) {
                        found.unknown.insert(format!("${{{inner}}}"));
                    }
                    out.push_str(&rest[start..start + 2 + end + 1]);
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn replacement(&self, inner: &str, found: &mut Found) -> Option<String> {
        if let Some(name) = inner.strip_prefix("env:") {
            return Some(format!("${{{name}}}"));
        }
        if self.inputs
            && let Some(id) = inner.strip_prefix("input:")
        {
            found.inputs.insert(id.to_owned());
            return Some(format!("${{{}}}", input_var(id)));
        }
        match inner {
            "workspaceFolder" => Some(self.project_dir.display().to_string()),
            "workspaceFolderBasename" => self
                .project_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()),
            "userHome" => Some(match self.home {
                Some(home) => home.display().to_string(),
                None => "${HOME}".to_owned(),
            }),
            "pathSeparator" | "/" => Some(std::path::MAIN_SEPARATOR_STR.to_owned()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_known_forms_and_reports_the_rest() {
        let vars = Vars {
            project_dir: Path::new("/work/proj"),
            home: Some(Path::new("/home/u")),
            inputs: true,
        };
        let mut found = Found::default();
        let out = vars.rewrite(
            "${workspaceFolder}/a ${env:TOKEN} ${input:api-key.v2} ${userHome} ${X:-d} ${config:x} ${",
            &mut found,
        );
        assert_eq!(
            out,
            "/work/proj/a ${TOKEN} ${API_KEY_V2} /home/u ${X:-d} ${config:x} ${"
        );
        assert_eq!(found.inputs.into_iter().collect::<Vec<_>>(), ["api-key.v2"]);
        assert_eq!(
            found.unknown.into_iter().collect::<Vec<_>>(),
            ["${config:x}"]
        );
    }

    #[test]
    fn cursor_has_no_inputs() {
        let vars = Vars {
            project_dir: Path::new("/p"),
            home: None,
            inputs: false,
        };
        let mut found = Found::default();
        assert_eq!(
            vars.rewrite("${input:x}${userHome}", &mut found),
            "${input:x}${HOME}"
        );
        assert_eq!(found.unknown.len(), 1);
    }
}
