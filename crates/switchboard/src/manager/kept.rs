//! The lists kept across runs: each server's tools, resources, resource templates and prompts,
//! as it last listed them, in `<state dir>/lists/<server>.json` (owner-only, written
//! atomically). A lazy server's catalogue comes from them without a process.
//!
//! A file is bound to the entry's launch hash ([`ServerConfig::launch_hash`]): an edited entry
//! finds none. A list also goes when its server says it changed (`list_changed`). Once its
//! `ttlMs` ran out, a tool list is no longer fresh: a lazy server is then started at the
//! host's start to list afresh, and until it does, the old list is what it lists. Only this
//! process's view is cached in memory: a file is read once.
//!
//! With a [`SharedStore`], the lists are `switchboard:lists:<server>:<launch hash>` in Redis
//! instead (every lazy server's read in one `MGET` at start), still checked against the
//! entry's hash when read; a list filled or dropped here is announced to the other replicas,
//! which [`forget`](KeptLists::forget) their copy and read it again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::config::{ConfigHash, ServerConfig};

/// The most a kept list's file may hold before it is not read at all.
const MAX_KEPT_FILE: u64 = 32 << 20;
use crate::connection::ToolDef;
use crate::connection::requests::CacheHints;
use crate::shared::{Changed, PREFIX, SharedStore};

/// How long a list stays in the shared store without being written again.
const SHARED_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Which of a server's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

/// One kept list: when it was fetched, how long the server said it stays good, and its items.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listed<I> {
    /// Milliseconds since the epoch.
    pub(crate) fetched_at: u64,
    /// The server's `ttlMs`, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl_ms: Option<u64>,
    /// The server's `cacheScope`, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_scope: Option<String>,
    pub(crate) items: I,
}

impl ListKind {
    /// The listing's name, as the session records its cache hints.
    pub(crate) fn what(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resource templates",
            ListKind::Prompts => "prompts",
        }
    }
}

impl<I> Listed<I> {
    fn new(items: I, hints: &CacheHints) -> Self {
        Listed {
            fetched_at: now_ms(),
            ttl_ms: hints.ttl_ms,
            cache_scope: hints.cache_scope.clone(),
            items,
        }
    }

    /// Whether the server's `ttlMs` (if any) has not run out. A `ttlMs` of 0 is what a
    /// 2026-07-28 server sends when it sets none (rmcp fills it in): honoured, it would start
    /// every lazy server on every run, so only a positive one expires a kept list.
    fn fresh(&self) -> bool {
        self.ttl_ms
            .filter(|ttl| *ttl > 0)
            .is_none_or(|ttl| self.fetched_at.saturating_add(ttl) > now_ms())
    }

    /// When the list was fetched.
    pub(crate) fn fetched(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.fetched_at)
    }
}

/// A server's kept lists (one file), with the items of its tool list as `T` and of its other
/// lists as `V`: parsed ([`Kept`]), counted ([`Head`]) or skipped.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lists<T, V> {
    /// The launch hash of the entry the lists came from.
    hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Listed<T>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resources: Option<Listed<V>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resource_templates: Option<Listed<V>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prompts: Option<Listed<V>>,
}

/// A server's kept lists, parsed.
pub(crate) type Kept = Lists<Vec<ToolDef>, Vec<Value>>;

/// What a server's kept lists say without their items: when and how long, and how many.
type Head = Lists<Count, Count>;

/// How many items a list has, counted while parsing skips them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Counting;
        impl<'de> Visitor<'de> for Counting {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        deserializer.deserialize_seq(Counting)
    }
}

impl<T, V> Lists<T, V> {
    fn slot(&self, kind: ListKind) -> Option<&Option<Listed<V>>> {
        match kind {
            ListKind::Tools => None,
            ListKind::Resources => Some(&self.resources),
            ListKind::ResourceTemplates => Some(&self.resource_templates),
            ListKind::Prompts => Some(&self.prompts),
        }
    }

    fn values_mut(&mut self, kind: ListKind) -> Option<&mut Option<Listed<V>>> {
        match kind {
            ListKind::Tools => None,
            ListKind::Resources => Some(&mut self.resources),
            ListKind::ResourceTemplates => Some(&mut self.resource_templates),
            ListKind::Prompts => Some(&mut self.prompts),
        }
    }

    /// A list of values (not tools), when kept and fresh.
    pub(crate) fn values(&self, kind: ListKind) -> Option<&Listed<V>> {
        self.slot(kind)?.as_ref().filter(|l| l.fresh())
    }

    /// The tool list, when kept and fresh.
    pub(crate) fn tool_list(&self) -> Option<&Listed<T>> {
        self.tools.as_ref().filter(|l| l.fresh())
    }
}

fn head_of<I>(list: &Option<Listed<Vec<I>>>) -> Option<Listed<Count>> {
    list.as_ref().map(|l| Listed {
        fetched_at: l.fetched_at,
        ttl_ms: l.ttl_ms,
        cache_scope: l.cache_scope.clone(),
        items: Count(l.items.len()),
    })
}

impl Kept {
    fn head(&self) -> Head {
        Lists {
            hash: self.hash.clone(),
            tools: head_of(&self.tools),
            resources: head_of(&self.resources),
            resource_templates: head_of(&self.resource_templates),
            prompts: head_of(&self.prompts),
        }
    }
}

/// A server's kept lists as held in memory: the JSON text they were read or written as, and
/// their [`Head`]. Items are parsed when used: held parsed, a hundred lazy servers' tools were
/// the largest part of the host's memory, and each catalogue built from them copied them again.
#[derive(Debug)]
pub(crate) struct Held {
    text: Box<str>,
    head: Head,
}

impl Held {
    fn new(text: &str) -> serde_json::Result<Held> {
        Ok(Held {
            head: serde_json::from_str(text)?,
            text: text.into(),
        })
    }

    /// The lists, parsed (a file another version wrote that no longer parses: `None`).
    fn parse<T: serde::de::DeserializeOwned + Default, V: serde::de::DeserializeOwned + Default>(
        &self,
    ) -> Option<Lists<T, V>> {
        serde_json::from_str(&self.text)
            .inspect_err(|e| tracing::debug!("ignoring the kept lists: {e}"))
            .ok()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// Every server's kept lists: files in a folder (none: this process only), read once.
#[derive(Debug)]
pub(crate) struct KeptLists {
    dir: Option<PathBuf>,
    /// Replaces `dir` when set.
    shared: Option<SharedStore>,
    /// What was read or written, by server name (`None`: no file, or a broken one).
    cache: Mutex<HashMap<String, Option<Arc<Held>>>>,
}

impl KeptLists {
    pub(crate) fn new(state_dir: Option<&Path>, shared: Option<SharedStore>) -> KeptLists {
        KeptLists {
            dir: state_dir.map(|d| d.join("lists")),
            shared,
            cache: Mutex::default(),
        }
    }

    /// The shared store's key of a server's lists for one entry.
    fn key(name: &str, hash: &str) -> String {
        format!("{PREFIX}lists:{name}:{hash}")
    }

    fn parse(name: &str, text: &str) -> Option<Arc<Held>> {
        match Held::new(text) {
            Ok(kept) => Some(Arc::new(kept)),
            Err(e) => {
                tracing::debug!(server = name, "ignoring the kept lists: {e}");
                None
            }
        }
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        // Server names are `[A-Za-z0-9][A-Za-z0-9_-]*`: safe as file names.
        self.dir.as_ref().map(|d| d.join(format!("{name}.json")))
    }

    fn read(&self, name: &str, hash: &str) -> Option<Arc<Held>> {
        if let Some(store) = &self.shared {
            return match store.get_many_blocking(&[Self::key(name, hash)]) {
                Ok(mut got) => got.pop().flatten().and_then(|t| Self::parse(name, &t)),
                Err(e) => {
                    tracing::debug!(server = name, "cannot read the kept lists: {e}");
                    None
                }
            };
        }
        let path = self.path(name)?;
        // A list of thousands of tools with their schemas is a few megabytes; a file far past
        // that is not read (it cost every listing seconds and a gigabyte): the server is
        // listed again when it runs.
        let size = std::fs::metadata(&path).ok()?.len();
        if size > MAX_KEPT_FILE {
            tracing::warn!(
                server = name,
                "the kept tool list {} is {size} bytes, over the {} MiB a kept list may be: \
                 not read",
                path.display(),
                MAX_KEPT_FILE >> 20
            );
            return None;
        }
        let text = std::fs::read_to_string(path).ok()?;
        Self::parse(name, &text)
    }

    /// Reads these servers' files at once, spread over the machine's cores: a start with
    /// many lazy servers parses them all, and parsing is most of its time.
    /// With a shared store, all in one round trip.
    pub(crate) fn preload<'a>(&self, entries: impl IntoIterator<Item = &'a ServerConfig>) {
        let wanted: Vec<(&str, &str)> = {
            let cache = self.cache.lock();
            entries
                .into_iter()
                .map(|c| (c.name.as_str(), c.launch_hash.0.as_str()))
                .filter(|(n, _)| !cache.contains_key(*n))
                .collect()
        };
        if (self.dir.is_none() && self.shared.is_none()) || wanted.is_empty() {
            return;
        }
        let read = match &self.shared {
            Some(store) => {
                let keys: Vec<String> = wanted.iter().map(|(n, h)| Self::key(n, h)).collect();
                let texts = match store.get_many_blocking(&keys) {
                    Ok(texts) => texts,
                    Err(e) => {
                        // Taken as nothing kept, not asked again server by server (each
                        // would wait for the store); an announcement makes one read again.
                        tracing::warn!("cannot read the kept lists: {e}");
                        vec![None; keys.len()]
                    }
                };
                let pairs: Vec<(&str, Option<String>)> =
                    wanted.iter().map(|(n, _)| *n).zip(texts).collect();
                crate::cores::map_on_cores(&pairs, |(name, text)| {
                    (*name, text.as_deref().and_then(|t| Self::parse(name, t)))
                })
            }
            None => {
                crate::cores::map_on_cores(&wanted, |(name, hash)| (*name, self.read(name, hash)))
            }
        };
        let mut cache = self.cache.lock();
        for (name, kept) in read {
            cache.entry(name.to_owned()).or_insert(kept);
        }
    }

    /// The server's kept lists, when they were made with this very entry.
    fn get(&self, config: &ServerConfig) -> Option<Arc<Held>> {
        let name = config.name.as_str();
        let mut cache = self.cache.lock();
        let kept = cache
            .entry(name.to_owned())
            .or_insert_with(|| self.read(name, &config.launch_hash.0))
            .clone()?;
        // Only a list of this very entry is trusted, wherever it was read.
        (kept.head.hash == config.launch_hash.0).then_some(kept)
    }

    /// The server's kept tool list (of this entry), even when its `ttlMs` ran out since: what
    /// a lazy server lists until it starts again. Whether it is still fresh is
    /// [`tools_fresh`](Self::tools_fresh)'s to say.
    pub(crate) fn tools(&self, config: &ServerConfig) -> Option<(Vec<ToolDef>, SystemTime)> {
        let kept = self.get(config)?;
        kept.head.tools.as_ref()?;
        let list = kept.parse::<Vec<ToolDef>, IgnoredAny>()?.tools?;
        let fetched = list.fetched();
        Some((list.items, fetched))
    }

    /// How many tools the server's kept list has (of this entry, fresh or not), and when it
    /// was fetched: what a listing of states shows, without copying the tools.
    pub(crate) fn tool_count(&self, config: &ServerConfig) -> Option<(usize, SystemTime)> {
        let kept = self.get(config)?;
        let list = kept.head.tools.as_ref()?;
        Some((list.items.0, list.fetched()))
    }

    /// Whether the server has a kept tool list of this entry whose `ttlMs` has not run out: a
    /// lazy server without one is started at the host's start to list afresh.
    pub(crate) fn tools_fresh(&self, config: &ServerConfig) -> bool {
        self.get(config)
            .is_some_and(|kept| kept.head.tool_list().is_some())
    }

    /// A kept list of resources, templates or prompts (of this entry), when fresh.
    pub(crate) fn values(&self, config: &ServerConfig, kind: ListKind) -> Option<Vec<Value>> {
        let kept = self.get(config)?;
        kept.head.values(kind)?;
        let mut lists = kept.parse::<IgnoredAny, Vec<Value>>()?;
        Some(lists.values_mut(kind)?.take()?.items)
    }

    /// Keeps a tool list the server just gave, with its cache hints.
    pub(crate) fn put_tools(&self, config: &ServerConfig, tools: &[ToolDef], hints: &CacheHints) {
        let mut filled = false;
        self.change(config.name.as_str(), &config.launch_hash, |kept| {
            filled = kept.tools.is_none();
            kept.tools = Some(Listed::new(tools.to_vec(), hints));
        });
        if filled {
            self.announce(config, ListKind::Tools);
        }
    }

    /// Drops this process's copy of a server's lists: another replica changed them, the next
    /// use reads them again.
    pub(crate) fn forget(&self, name: &str) {
        let mut cache = self.cache.lock();
        cache.remove(name);
    }

    /// Tells the other replicas (with a shared store) that a list of `config`'s server was
    /// dropped or filled, after the write that did it.
    pub(crate) fn announce(&self, config: &ServerConfig, kind: ListKind) {
        if let Some(store) = &self.shared {
            let what = match kind {
                ListKind::Tools => Changed::Tools,
                ListKind::Resources | ListKind::ResourceTemplates => Changed::Resources,
                ListKind::Prompts => Changed::Prompts,
            };
            store.announce(config.name.as_str(), &config.launch_hash.0, what);
        }
    }

    /// Keeps a list of resources, templates or prompts the server just gave.
    pub(crate) fn put_values(
        &self,
        config: &ServerConfig,
        kind: ListKind,
        items: &[Value],
        hints: &CacheHints,
    ) {
        let mut filled = false;
        self.change(config.name.as_str(), &config.launch_hash, |kept| {
            if let Some(slot) = kept.values_mut(kind) {
                filled = slot.is_none();
                *slot = Some(Listed::new(items.to_vec(), hints));
            }
        });
        if filled && kind != ListKind::ResourceTemplates {
            self.announce(config, kind);
        }
    }

    /// Forgets one list (its server said it changed).
    pub(crate) fn invalidate(&self, config: &ServerConfig, kind: ListKind) {
        let present = self.get(config).is_some_and(|kept| match kind {
            ListKind::Tools => kept.head.tools.is_some(),
            other => kept.head.values(other).is_some(),
        });
        if !present {
            return;
        }
        self.change(
            config.name.as_str(),
            &config.launch_hash,
            |kept| match kept.values_mut(kind) {
                Some(slot) => *slot = None,
                None => kept.tools = None,
            },
        );
    }

    /// Applies `change` to the server's lists (started afresh when they were another entry's)
    /// and writes them.
    fn change(&self, name: &str, hash: &ConfigHash, change: impl FnOnce(&mut Kept)) {
        let mut cache = self.cache.lock();
        let current = cache
            .entry(name.to_owned())
            .or_insert_with(|| self.read(name, &hash.0));
        let mut kept = match current.as_deref() {
            Some(held) if held.head.hash == hash.0 => held.parse().unwrap_or_default(),
            _ => Kept::default(),
        };
        kept.hash.clone_from(&hash.0);
        change(&mut kept);
        let text = match serde_json::to_string(&kept) {
            Ok(text) => text,
            Err(e) => {
                tracing::debug!(server = name, "cannot keep the lists: {e}");
                return;
            }
        };
        let held = Arc::new(Held {
            head: kept.head(),
            text: text.into_boxed_str(),
        });
        drop(kept);
        *current = Some(held.clone());
        drop(cache);
        if let Some(store) = &self.shared {
            let text = held.text.to_string();
            store.write_later(Self::key(name, &hash.0), Some(text), Some(SHARED_TTL));
            return;
        }
        let Some(path) = self.path(name) else { return };
        if let Err(e) = crate::config::write_private(&path, held.text.as_bytes()) {
            tracing::debug!(path = %path.display(), "cannot keep the lists: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(raw: serde_json::Value) -> ServerConfig {
        crate::manager::tests::server("kit", raw)
    }

    fn tool(name: &str) -> ToolDef {
        ToolDef {
            name: name.to_owned(),
            title: None,
            description: Some("says hello".to_owned()),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            annotations: crate::connection::Annotations::default(),
            icons: None,
            meta: None,
        }
    }

    #[test]
    fn lists_survive_a_restart_and_go_with_a_changed_entry() {
        let dir = tempfile::tempdir().unwrap();
        let config = entry(serde_json::json!({"command": "kit", "startup": "lazy"}));
        let none = CacheHints::default();
        KeptLists::new(Some(dir.path()), None).put_tools(&config, &[tool("hello")], &none);

        // Another process (a restart) reads the file.
        let later = KeptLists::new(Some(dir.path()), None);
        let (tools, _) = later.tools(&config).unwrap();
        assert_eq!(tools, vec![tool("hello")]);
        // When it starts or how long it idles is not what it lists.
        let idle = entry(serde_json::json!({"command": "kit", "idleTimeout": 5}));
        assert!(later.tools(&idle).is_some());
        // Another command is another server.
        let changed = entry(serde_json::json!({"command": "kit", "args": ["-v"]}));
        assert!(later.tools(&changed).is_none());

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = dir.path().join("lists").join("kit.json");
            let mode = std::fs::metadata(file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(dir.path().join("lists"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn a_kept_list_past_its_cap_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let config = entry(serde_json::json!({"command": "kit", "startup": "lazy"}));
        let none = CacheHints::default();
        KeptLists::new(Some(dir.path()), None).put_tools(&config, &[tool("hello")], &none);
        let file = dir.path().join("lists").join("kit.json");
        assert!(
            KeptLists::new(Some(dir.path()), None)
                .tools(&config)
                .is_some()
        );
        // The same list grown past the cap (a sparse tail of spaces: nothing is written).
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.set_len(MAX_KEPT_FILE + 1).unwrap();
        assert!(
            KeptLists::new(Some(dir.path()), None)
                .tools(&config)
                .is_none()
        );
    }

    #[test]
    fn a_changed_list_or_an_expired_ttl_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let config = entry(serde_json::json!({"command": "kit"}));
        let kept = KeptLists::new(Some(dir.path()), None);
        let none = CacheHints::default();
        kept.put_tools(&config, &[tool("hello")], &none);
        let prompts = [serde_json::json!({"name": "p"})];
        kept.put_values(&config, ListKind::Prompts, &prompts, &none);
        kept.invalidate(&config, ListKind::Tools);
        assert!(kept.tools(&config).is_none());
        let later = KeptLists::new(Some(dir.path()), None);
        assert!(later.tools(&config).is_none());
        assert_eq!(
            later.values(&config, ListKind::Prompts),
            Some(prompts.to_vec())
        );
        assert_eq!(later.tool_count(&config), None);

        // The server's `ttlMs` is kept with the list; once it ran out, the list is gone.
        let second = CacheHints {
            ttl_ms: Some(1_000),
            cache_scope: Some("private".to_owned()),
        };
        kept.put_tools(&config, &[tool("hello")], &second);
        assert!(KeptLists::new(Some(dir.path()), None).tools_fresh(&config));
        let mut listed = Listed::new(vec![tool("hello")], &second);
        listed.fetched_at -= 1_001;
        assert!(!listed.fresh());
        let expired = CacheHints {
            ttl_ms: Some(1),
            ..second.clone()
        };
        kept.put_tools(&config, &[tool("hello")], &expired);
        // The clock moves past the 1 ms (no sleep: the time is what is waited for).
        let until = now_ms() + 2;
        while now_ms() < until {
            std::hint::spin_loop();
        }
        let later = KeptLists::new(Some(dir.path()), None);
        // Still listed, no longer fresh: a start lists afresh.
        assert!(later.tools(&config).is_some());
        assert!(!later.tools_fresh(&config));
        // 0: the server set none.
        let unset = CacheHints {
            ttl_ms: Some(0),
            cache_scope: Some("private".to_owned()),
        };
        let mut listed = Listed::new(vec![tool("hello")], &unset);
        listed.fetched_at -= 1_000_000;
        assert!(listed.fresh());
    }
}
