//! The OS keychain under the token store and the secret store (`secrets`), through
//! `keyring-core` and one small store crate per platform: the macOS Keychain, the Windows
//! Credential Manager, on Linux the freedesktop Secret Service (GNOME Keyring, KWallet; cargo
//! feature `secret-service`, pure Rust over D-Bus). The kernel's keyutils store is not
//! offered: it forgets everything at reboot, and where no login session keyring exists each
//! thread that touches it may get a keyring of its own (seen here: a record written from one
//! thread was not found from another).
//!
//! Service `switchboard`; the account is the store key (a server's token record: `<server>
//! <url>`, the record as JSON; a configured secret: `secret <key>`). Errors are our own words
//! plus the platform's message, never the secret.

use std::sync::{Arc, OnceLock};
#[cfg(all(target_os = "linux", feature = "secret-service"))]
use std::time::Duration;

use keyring_core::{CredentialStore, Entry, Error};

/// The keychain service name of every entry.
pub(crate) const SERVICE: &str = "switchboard";

/// How long the probe of the Secret Service may take before the file is used instead.
#[cfg(all(target_os = "linux", feature = "secret-service"))]
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// One keychain. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Keychain {
    store: Arc<CredentialStore>,
    name: &'static str,
}

impl std::fmt::Debug for Keychain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Keychain {
    /// The platform's keychain, probed once per process (bounded): why there is none otherwise.
    pub(crate) fn platform() -> Result<Keychain, String> {
        static PROBED: OnceLock<Result<Keychain, String>> = OnceLock::new();
        PROBED.get_or_init(probe_platform).clone()
    }

    /// What this keychain is, for messages.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    fn entry(&self, key: &str) -> Result<Entry, String> {
        Entry::new_in_store(&self.store, SERVICE, key).map_err(|e| describe(&e))
    }

    /// The secret stored under `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Result<Option<String>, String> {
        match self.entry(key)?.get_password() {
            Ok(secret) => Ok(Some(secret)),
            Err(Error::NoEntry) => Ok(None),
            Err(e) => Err(describe(&e)),
        }
    }

    /// Stores `secret` under `key`, replacing what was there.
    pub(crate) fn set(&self, key: &str, secret: &str) -> Result<(), String> {
        self.entry(key)?
            .set_password(secret)
            .map_err(|e| describe(&e))
    }

    /// Removes the entry under `key`; whether there was one.
    pub(crate) fn delete(&self, key: &str) -> Result<bool, String> {
        match self.entry(key)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(Error::NoEntry) => Ok(false),
            Err(e) => Err(describe(&e)),
        }
    }
}

/// A keyring error in words that never carry the secret (`BadEncoding` and `BadDataFormat`
/// hold its bytes; their `Display` does not print them, but we do not rely on that).
fn describe(error: &Error) -> String {
    match error {
        Error::PlatformFailure(e) => format!("the platform failed: {e}"),
        Error::NoStorageAccess(e) => format!("no access to the keychain: {e}"),
        Error::NoEntry => "no such entry".to_owned(),
        Error::BadEncoding(_) => "the stored secret is not UTF-8".to_owned(),
        Error::BadDataFormat(..) => "the stored secret is malformed".to_owned(),
        Error::BadStoreFormat(why) => format!("the keychain's data is malformed: {why}"),
        Error::TooLong(what, limit) => {
            format!("the {what} is longer than the keychain's limit of {limit}")
        }
        Error::Invalid(what, why) => format!("the {what} is not valid: {why}"),
        Error::Ambiguous(entries) => format!("{} entries match", entries.len()),
        Error::NotSupportedByStore(what) => format!("not supported by this keychain: {what}"),
        other => format!("keychain error: {other}"),
    }
}

#[cfg(target_os = "macos")]
fn probe_platform() -> Result<Keychain, String> {
    let store: Arc<CredentialStore> = apple_native_keyring_store::keychain::Store::new()
        .map_err(|e| format!("the macOS Keychain cannot be opened: {}", describe(&e)))?;
    Ok(Keychain {
        store,
        name: "the macOS Keychain",
    })
}

#[cfg(target_os = "windows")]
fn probe_platform() -> Result<Keychain, String> {
    let store: Arc<CredentialStore> = windows_native_keyring_store::Store::new().map_err(|e| {
        format!(
            "the Windows Credential Manager cannot be opened: {}",
            describe(&e)
        )
    })?;
    Ok(Keychain {
        store,
        name: "the Windows Credential Manager",
    })
}

/// The Secret Service: connecting may wait on D-Bus activation, so the probe runs on a thread
/// of its own and is given up after [`PROBE_TIMEOUT`].
#[cfg(all(target_os = "linux", feature = "secret-service"))]
fn probe_platform() -> Result<Keychain, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("switchboard-keychain-probe".to_owned())
        .spawn(move || {
            let probed = zbus_secret_service_keyring_store::Store::new()
                .map_err(|e| describe(&e))
                .and_then(|store| {
                    let keychain = Keychain {
                        store,
                        name: "the Secret Service",
                    };
                    keychain.get("probe").map(|_| keychain)
                });
            let _ = tx.send(probed);
        })
        .map_err(|e| format!("cannot start the keychain probe: {e}"))?;
    match rx.recv_timeout(PROBE_TIMEOUT) {
        Ok(Ok(keychain)) => Ok(keychain),
        Ok(Err(e)) => Err(format!("the Secret Service does not answer: {e}")),
        Err(_) => Err(format!(
            "the Secret Service did not answer within {PROBE_TIMEOUT:?}"
        )),
    }
}

#[cfg(all(target_os = "linux", not(feature = "secret-service")))]
fn probe_platform() -> Result<Keychain, String> {
    Err("this build has no Secret Service support (cargo feature `secret-service`)".to_owned())
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
fn probe_platform() -> Result<Keychain, String> {
    Err("there is no OS keychain support on this platform".to_owned())
}
