//! Serde over the parsed JSON(C) AST, so a settings file is read into plain structs while every
//! problem keeps its byte position and field path (`sampling.servers.kit.maxTokens`,
//! `permissions.allow[2]`).
//!
//! Wrapper types that talk to this deserializer:
//! - [`Spanned<T>`]: a value with the byte offsets of itself and its key, for checks made
//!   after deserializing while the document is at hand (a server entry's).
//! - [`Located<T>`]: a value with the line and column of its key and of itself, for checks
//!   made after deserializing (an empty command, a bad pattern) that still name their position.
//! - [`Checked<T>`]: a value that may be broken without breaking what holds it; its problem is
//!   collected and the rest of the file still loads (`sampling` broken, `roots` still read).
//! - [`Skipped`]: a key that is known but read elsewhere (or not at all).
//! - [`expect`]: a value of the kinds a type wants, else `expected {what}, found {kind}`;
//!   [`NumberText`]: a number as written.
//!
//! Every problem's position is resolved while reading, so what was read outlives the text.
//! Keys a struct does not declare are collected with their positions and the keys the struct
//! does declare (see [`Read::unknown`]), so the list of known keys is the struct itself.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

use jsonc_parser::ast;
use serde::de::value::{SeqDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use super::ConfigIssue;
use super::json::{Document, kind_name, prop_name, range_of};

/// A 1-based line and column.
pub(crate) type Pos = (usize, usize);

/// A problem found while deserializing: the message, and (once known) where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    pub(crate) message: String,
    /// Where the innermost value the problem was raised for is, and its field path.
    pub(crate) at: Option<At>,
}

/// Where a problem is: byte offset, line and column, field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct At {
    pub(crate) offset: usize,
    pub(crate) position: Pos,
    pub(crate) field: String,
}

impl Error {
    fn located(mut self, offset: usize, path: &Path<'_>, doc: &Document) -> Error {
        if self.at.is_none() {
            self.at = Some(At {
                offset,
                position: doc.position(offset),
                field: path.to_string(),
            });
        }
        self
    }

    /// As a [`ConfigIssue`] naming the file, position and field (if any).
    pub(crate) fn issue(&self, file: &std::path::Path) -> ConfigIssue {
        let issue = ConfigIssue::error(self.message.clone()).in_file(file);
        match &self.at {
            Some(at) if at.field.is_empty() => issue.at(at.position),
            Some(at) => issue.at(at.position).field(at.field.clone()),
            None => issue,
        }
    }

    pub(crate) fn field(&self) -> &str {
        self.at.as_ref().map_or("", |at| at.field.as_str())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error {
            message: msg.to_string(),
            at: None,
        }
    }
}

/// A key no struct declares, where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unknown {
    /// The full field path (`sampling.servers.kit.extra`).
    pub(crate) field: String,
    /// The key's name alone.
    pub(crate) key: String,
    pub(crate) offset: usize,
    pub(crate) position: Pos,
    /// The keys the struct it was found in declares, in declaration order.
    pub(crate) expected: &'static [&'static str],
}

impl Unknown {
    /// The field path of the object the key is in (`sampling.servers.kit`).
    pub(crate) fn parent(&self) -> &str {
        self.field
            .strip_suffix(self.key.as_str())
            .map_or("", |p| p.strip_suffix('.').unwrap_or(p))
    }
}

/// The outcome of reading a value: what deserialized, the problems of its [`Checked`] parts,
/// and the keys no struct declares.
#[derive(Debug)]
pub(crate) struct Read<T> {
    pub(crate) value: T,
    pub(crate) errors: Vec<Error>,
    pub(crate) unknown: Vec<Unknown>,
}

/// Deserializes `value`, a part of `doc`; `prefix` is the field path of `value` itself ("" for
/// a file's root).
pub(crate) fn from_ast<'de, T: de::Deserialize<'de>>(
    doc: &Document,
    value: &ast::Value<'_>,
    prefix: &str,
) -> Result<Read<T>, Error> {
    let sink = Sink {
        doc,
        errors: RefCell::default(),
        unknown: RefCell::default(),
    };
    let path = if prefix.is_empty() {
        Path::Root
    } else {
        Path::Prefix(prefix)
    };
    let value = T::deserialize(ValueDe {
        value,
        key: None,
        path,
        sink: &sink,
    })?;
    Ok(Read {
        value,
        errors: sink.errors.into_inner(),
        unknown: sink.unknown.into_inner(),
    })
}

struct Sink<'d> {
    doc: &'d Document,
    errors: RefCell<Vec<Error>>,
    unknown: RefCell<Vec<Unknown>>,
}

/// Where a value sits in the file, built only when a message needs it.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Prefix(&'p str),
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Prefix(p) => f.write_str(p),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

const SPANNED: &str = "$switchboard::Spanned";
const CHECKED: &str = "$switchboard::Checked";
const LOCATED: &str = "$switchboard::Located";
const KIND: &str = "$switchboard::Kind";
const NUMBER: &str = "$switchboard::Number";

/// A value whose problem stays its own: a broken one is collected into [`Read::errors`] and
/// what holds it still deserializes. `Absent` when the key is not written.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Checked<T> {
    #[default]
    Absent,
    Broken,
    Ok(T),
}

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Checked<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: de::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Checked<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                Ok(seq.next_element()?.map_or(Checked::Broken, Checked::Ok))
            }
        }
        d.deserialize_struct(CHECKED, &[], V(PhantomData))
    }
}

/// A key that is known here but read by another module (or nowhere): accepted as anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Skipped;

impl<'de> de::Deserialize<'de> for Skipped {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <de::IgnoredAny as de::Deserialize>::deserialize(d).map(|_| Skipped)
    }
}

/// A value and the byte offsets where it and its key (when it is an object's value) start, for
/// checks made while the document is at hand (a server entry's).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned<T> {
    pub(crate) offset: usize,
    pub(crate) key: Option<usize>,
    pub(crate) value: T,
}

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Spanned<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: de::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Spanned<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // The key's offset is one past it, so that 0 means none.
                let [offset, key]: [usize; 2] = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let value = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                Ok(Spanned {
                    offset,
                    key: key.checked_sub(1),
                    value,
                })
            }
        }
        d.deserialize_struct(SPANNED, &[], V(PhantomData))
    }
}

/// A key's value: absent, or written (with the byte offsets of the value and its key) and read,
/// or broken (its problem is collected into [`Read::errors`], under the key's field path).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Keyed<T> {
    #[default]
    Absent,
    Present {
        offset: usize,
        key: Option<usize>,
        /// `None` when the value is broken.
        value: Option<T>,
    },
}

impl<T> Keyed<T> {
    pub(crate) fn is_present(&self) -> bool {
        matches!(self, Keyed::Present { .. })
    }

    /// Where the value starts, when it is written.
    pub(crate) fn at(&self) -> Option<usize> {
        match self {
            Keyed::Present { offset, .. } => Some(*offset),
            Keyed::Absent => None,
        }
    }

    pub(crate) fn key(&self) -> Option<usize> {
        match self {
            Keyed::Present { key, .. } => *key,
            Keyed::Absent => None,
        }
    }
}

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Keyed<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Spanned { offset, key, value } = Spanned::<Checked<T>>::deserialize(d)?;
        Ok(Keyed::Present {
            offset,
            key,
            value: match value {
                Checked::Ok(value) => Some(value),
                Checked::Absent | Checked::Broken => None,
            },
        })
    }
}

/// A value with where it was written, as line and column (resolved while reading, for values
/// kept after the file is gone): its key's position (when it is an object's value) and its own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located<T> {
    pub(crate) key: Option<Pos>,
    pub(crate) at: Pos,
    /// Whether it was written as `{}` or `[]`.
    pub(crate) empty: bool,
    pub(crate) value: T,
}

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Located<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: de::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Located<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let [key_line, key_column, line, column, empty]: [usize; 5] =
                    seq.next_element()?
                        .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let value = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                Ok(Located {
                    key: (key_line > 0).then_some((key_line, key_column)),
                    at: (line, column),
                    empty: empty == 1,
                    value,
                })
            }
        }
        d.deserialize_struct(LOCATED, &[], V(PhantomData))
    }
}

/// Reads a `T` when the value is of one of `kinds` ("a string", "an array", "an object", "a
/// number", "a boolean", "null"); any other kind fails with `expected {what}, found {kind}`.
pub(crate) fn expect<'de, D, T>(
    d: D,
    kinds: &'static [&'static str],
    what: &'static str,
) -> Result<T, D::Error>
where
    D: de::Deserializer<'de>,
    T: de::Deserialize<'de>,
{
    struct V<T> {
        kinds: &'static [&'static str],
        what: &'static str,
        wanted: PhantomData<T>,
    }
    impl<'de, T: de::Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.what)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
            let kind: String = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(0, &self))?;
            if !self.kinds.contains(&kind.as_str()) {
                return Err(de::Error::custom(format!(
                    "expected {}, found {kind}",
                    self.what
                )));
            }
            seq.next_element()?
                .ok_or_else(|| de::Error::invalid_length(1, &self))
        }
    }
    d.deserialize_struct(
        KIND,
        &[],
        V {
            kinds,
            what,
            wanted: PhantomData,
        },
    )
}

/// A number as written (`1e3`, `0`, `1.5`), for messages that quote it; a string or a boolean
/// as its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NumberText(pub(crate) String);

impl<'de> de::Deserialize<'de> for NumberText {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NumberText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NumberText, E> {
                Ok(NumberText(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<NumberText, E> {
                Ok(NumberText(v.to_string()))
            }
        }
        d.deserialize_struct(NUMBER, &[], V)
    }
}

struct ValueDe<'v, 'a, 'p, 's> {
    value: &'v ast::Value<'a>,
    /// The offset of the key, when the value is an object's.
    key: Option<usize>,
    path: Path<'p>,
    sink: &'s Sink<'s>,
}

impl ValueDe<'_, '_, '_, '_> {
    fn start(&self) -> usize {
        range_of(self.value).start
    }
}

impl<'de> de::Deserializer<'de> for ValueDe<'_, '_, '_, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let start = self.start();
        let result = match self.value {
            ast::Value::StringLit(s) => visitor.visit_str(&s.value),
            ast::Value::BooleanLit(b) => visitor.visit_bool(b.value),
            ast::Value::NullKeyword(_) => visitor.visit_unit(),
            ast::Value::NumberLit(n) => {
                if let Ok(v) = n.value.parse::<u64>() {
                    visitor.visit_u64(v)
                } else if let Ok(v) = n.value.parse::<i64>() {
                    visitor.visit_i64(v)
                } else if let Ok(v) = n.value.parse::<f64>() {
                    visitor.visit_f64(v)
                } else {
                    Err(de::Error::custom(format!("invalid number `{}`", n.value)))
                }
            }
            ast::Value::Array(a) => visitor.visit_seq(SeqDe {
                elements: &a.elements,
                index: 0,
                path: &self.path,
                sink: self.sink,
            }),
            ast::Value::Object(o) => visitor.visit_map(MapDe {
                props: &o.properties,
                index: 0,
                fields: None,
                path: &self.path,
                sink: self.sink,
            }),
        };
        result.map_err(|e| e.located(start, &self.path, self.sink.doc))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            ast::Value::NullKeyword(_) => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let (start, path, doc) = (self.start(), self.path, self.sink.doc);
        let result = match (name, self.value) {
            (SPANNED, _) => visitor.visit_seq(Wrapped {
                head: Head::Offsets([start, self.key.map_or(0, |k| k + 1)]),
                de: Some(self),
                checked: false,
            }),
            (CHECKED, _) => visitor.visit_seq(Wrapped {
                head: Head::None,
                de: Some(self),
                checked: true,
            }),
            (LOCATED, _) => {
                let (key_line, key_column) = self.key.map_or((0, 0), |k| doc.position(k));
                let (line, column) = doc.position(start);
                let empty = match self.value {
                    ast::Value::Object(o) => o.properties.is_empty(),
                    ast::Value::Array(a) => a.elements.is_empty(),
                    _ => false,
                };
                visitor.visit_seq(Wrapped {
                    head: Head::Position([key_line, key_column, line, column, usize::from(empty)]),
                    de: Some(self),
                    checked: false,
                })
            }
            (KIND, value) => visitor.visit_seq(Wrapped {
                head: Head::Kind(kind_name(value)),
                de: Some(self),
                checked: false,
            }),
            (NUMBER, ast::Value::NumberLit(n)) => visitor.visit_str(n.value),
            (_, ast::Value::Object(o)) => visitor.visit_map(MapDe {
                props: &o.properties,
                index: 0,
                fields: Some(fields),
                path: &self.path,
                sink: self.sink,
            }),
            _ => return self.deserialize_any(visitor),
        };
        result.map_err(|e| e.located(start, &path, doc))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            ast::Value::StringLit(s) => {
                let start = self.start();
                let de: StrDeserializer<'_, Error> = s.value.as_ref().into_deserializer();
                visitor
                    .visit_enum(de)
                    .map_err(|e| e.located(start, &self.path, self.sink.doc))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// The sequence a wrapper type reads: what the deserializer knows of the value (the head),
/// then the value. [`Spanned`]: (offsets, value); [`Located`]: (positions, value); [`expect`]:
/// (kind, value); [`Checked`]: (the value, or nothing when it is broken).
struct Wrapped<'v, 'a, 'p, 's> {
    head: Head,
    de: Option<ValueDe<'v, 'a, 'p, 's>>,
    checked: bool,
}

enum Head {
    None,
    Offsets([usize; 2]),
    Position([usize; 5]),
    Kind(&'static str),
}

impl<'de> de::SeqAccess<'de> for Wrapped<'_, '_, '_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match std::mem::replace(&mut self.head, Head::None) {
            Head::None => {}
            Head::Offsets(offsets) => {
                let de: SeqDeserializer<_, Error> = SeqDeserializer::new(offsets.into_iter());
                return seed.deserialize(de).map(Some);
            }
            Head::Position(position) => {
                let de: SeqDeserializer<_, Error> = SeqDeserializer::new(position.into_iter());
                return seed.deserialize(de).map(Some);
            }
            Head::Kind(kind) => {
                let de: StrDeserializer<'_, Error> = kind.into_deserializer();
                return seed.deserialize(de).map(Some);
            }
        }
        let Some(de) = self.de.take() else {
            return Ok(None);
        };
        if !self.checked {
            return seed.deserialize(de).map(Some);
        }
        let (start, path, sink) = (de.start(), de.path, de.sink);
        match seed.deserialize(de) {
            Ok(value) => Ok(Some(value)),
            Err(e) => {
                sink.errors
                    .borrow_mut()
                    .push(e.located(start, &path, sink.doc));
                Ok(None)
            }
        }
    }
}

struct SeqDe<'v, 'a, 'p, 's> {
    elements: &'v [ast::Value<'a>],
    index: usize,
    path: &'p Path<'p>,
    sink: &'s Sink<'s>,
}

impl<'de> de::SeqAccess<'de> for SeqDe<'_, '_, '_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some(value) = self.elements.get(self.index) else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(ValueDe {
            value,
            key: None,
            path: Path::Index(self.path, index),
            sink: self.sink,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.elements.len() - self.index)
    }
}

struct MapDe<'v, 'a, 'p, 's> {
    props: &'v [ast::ObjectProp<'a>],
    index: usize,
    /// The struct's declared keys; `None` for a map, which takes any key.
    fields: Option<&'static [&'static str]>,
    path: &'p Path<'p>,
    sink: &'s Sink<'s>,
}

impl<'de> de::MapAccess<'de> for MapDe<'_, '_, '_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        // A struct takes the last of keys written twice, as JSON parsers do (a map does so
        // by itself).
        while self.fields.is_some()
            && let Some(prop) = self.props.get(self.index)
            && self.props[self.index + 1..]
                .iter()
                .any(|later| prop_name(later) == prop_name(prop))
        {
            self.index += 1;
        }
        let Some(prop) = self.props.get(self.index) else {
            return Ok(None);
        };
        let key = prop_name(prop);
        if let Some(fields) = self.fields
            && !fields.contains(&key)
        {
            self.sink.unknown.borrow_mut().push(Unknown {
                field: Path::Key(self.path, key).to_string(),
                key: key.to_owned(),
                offset: prop.range.start,
                position: self.sink.doc.position(prop.range.start),
                expected: fields,
            });
        }
        let de: StrDeserializer<'_, Error> = key.into_deserializer();
        seed.deserialize(de)
            .map(Some)
            .map_err(|e| e.located(prop.range.start, &Path::Key(self.path, key), self.sink.doc))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some(prop) = self.props.get(self.index) else {
            return Err(de::Error::custom("a value without a key"));
        };
        self.index += 1;
        seed.deserialize(ValueDe {
            value: &prop.value,
            key: Some(prop.range.start),
            path: Path::Key(self.path, prop_name(prop)),
            sink: self.sink,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.props.len() - self.index)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Top {
        #[serde(default)]
        good: Checked<Inner>,
        #[serde(default)]
        bad: Checked<Inner>,
        #[serde(default)]
        list: Vec<Located<String>>,
        #[serde(rename = "other", default)]
        _other: Skipped,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Inner {
        max_tokens: Option<u32>,
        #[serde(default)]
        servers: BTreeMap<String, u32>,
    }

    fn read(text: &str) -> (Document, Read<Top>) {
        let doc = Document::new(PathBuf::from("f.json"), text.to_owned());
        let read = {
            let root = doc.parse().unwrap().unwrap();
            from_ast::<Top>(&doc, &root, "").unwrap()
        };
        (doc, read)
    }

    #[test]
    fn problems_name_their_position_and_field_and_spare_the_rest() {
        let (doc, read) = read(
            "{\n  \"good\": {\"maxTokens\": 5},\n  \"bad\": {\"servers\": {\"kit\": \"x\"}},\n  \"list\": [\"a\", \"b\"],\n  \"other\": [1, {}],\n  \"extra\": 1\n}",
        );
        assert!(matches!(
            read.value.good,
            Checked::Ok(Inner {
                max_tokens: Some(5),
                ..
            })
        ));
        assert_eq!(read.value.bad, Checked::Broken);
        let issue = read.errors[0].issue(&doc.path);
        assert_eq!(issue.position, Some((3, 30)));
        assert_eq!(issue.field.as_deref(), Some("bad.servers.kit"));
        assert!(issue.message.contains("expected u32"), "{issue}");
        assert_eq!(read.value.list[1].value, "b");
        assert_eq!(read.value.list[1].at, (4, 17));
        assert_eq!(read.value.list[1].key, None);
        assert_eq!(read.unknown[0].position, (6, 3));
        assert_eq!(read.unknown[0].expected, ["good", "bad", "list", "other"]);
        assert_eq!(read.unknown.len(), 1);
        assert_eq!(read.unknown[0].field, "extra");
        assert_eq!(doc.position(read.unknown[0].offset), (6, 3));
    }

    #[test]
    fn problems_name_the_struct_or_the_key() {
        let (_, first) = read(r#"{"good": {"maxTokens": 1, "nope": 2}, "bad": "x", "good": 3}"#);
        // The last `good` is the one read, as JSON parsers do.
        assert_eq!(first.errors[0].field(), "bad");
        assert!(first.errors[0].message.contains("expected struct Inner"));
        assert_eq!(first.errors[1].field(), "good");
        assert!(
            first.errors[1]
                .message
                .contains("invalid type: integer `3`")
        );
        let (_, read) = read(r#"{"good": {"maxTokens": 1, "nope": 2}}"#);
        assert_eq!(read.errors[0].field(), "good.nope");
        assert!(read.errors[0].message.contains("unknown field `nope`"));
        assert_eq!(read.unknown[0].field, "good.nope");
    }

    impl PartialEq for Inner {
        fn eq(&self, other: &Self) -> bool {
            self.max_tokens == other.max_tokens && self.servers == other.servers
        }
    }
}
