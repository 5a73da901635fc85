//! Fuzz targets of the MCPB bundle reader (property tests, run by `cargo test`): any bytes as a
//! `.mcpb` file, a real bundle with bytes changed, inserted or appended, and a real bundle with
//! a signature block of any framing and any DER-like contents. Each reads without a panic, and
//! no signature the test did not make with a trusted key ever reads as a valid one.
//!
//! `PROPTEST_CASES` sets the number of cases (proptest's default: 256, about a second).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write as _;

use proptest::prelude::*;
use proptest::sample::Index;
use switchboard::config::Environment;
use switchboard::config::bundle::{BundleSignature, read_bundle};

/// A small bundle that reads: a manifest and one file, deflated.
fn valid_bundle() -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let manifest = serde_json::json!({
        "manifest_version": "0.3",
        "name": "fuzzed",
        "version": "1.0.0",
        "description": "A bundle the fuzz targets change",
        "author": {"name": "Test"},
        "server": {
            "type": "binary",
            "entry_point": "server/run.sh",
            "mcp_config": {"command": "sh", "args": ["${__dirname}/server/run.sh"]}
        }
    });
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("manifest.json", options).unwrap();
    zip.write_all(manifest.to_string().as_bytes()).unwrap();
    zip.start_file("server/run.sh", options.unix_permissions(0o755))
        .unwrap();
    zip.write_all(b"#!/bin/sh\nexit 0\n").unwrap();
    zip.finish().unwrap().into_inner()
}

/// `MCPB_SIG_V1`, a length (as given, right or not), the DER, `padding` zeros, `MCPB_SIG_END`.
fn sig_block(length: u32, der: &[u8], padding: usize) -> Vec<u8> {
    let mut out = b"MCPB_SIG_V1".to_vec();
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(der);
    out.extend(std::iter::repeat_n(0, padding));
    out.extend_from_slice(b"MCPB_SIG_END");
    out
}

/// DER-like bytes: tag-length-value elements, nested, with lengths that may lie.
fn der_like() -> impl Strategy<Value = Vec<u8>> {
    let leaf = (
        prop::sample::select(vec![0x02u8, 0x04, 0x05, 0x06, 0x0c, 0x17, 0x30, 0x31, 0xa0]),
        prop::collection::vec(any::<u8>(), 0..24),
        any::<bool>(),
    )
        .prop_map(|(tag, body, lie)| tlv(tag, &body, lie));
    leaf.prop_recursive(4, 64, 6, |inner| {
        (
            prop::sample::select(vec![0x30u8, 0x31, 0xa0, 0xa3, 0x04]),
            prop::collection::vec(inner, 0..6),
            any::<bool>(),
        )
            .prop_map(|(tag, parts, lie)| tlv(tag, &parts.concat(), lie))
    })
}

/// One element; `lie`: its length says one byte more than it holds, in the long form.
fn tlv(tag: u8, body: &[u8], lie: bool) -> Vec<u8> {
    let len = body.len() + usize::from(lie);
    let mut out = vec![tag];
    if len < 0x80 && !lie {
        out.push(len as u8);
    } else {
        out.push(0x82);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    }
    out.extend_from_slice(body);
    out
}

/// Reads `bytes` as a bundle file; what the reader said of its signature when it read.
fn read(bytes: &[u8]) -> Option<BundleSignature> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fuzzed.mcpb");
    std::fs::write(&file, bytes).unwrap();
    let mut env: Environment = [("HOME", dir.path().display().to_string())]
        .into_iter()
        .collect();
    env.set_current_dir(dir.path());
    read_bundle(&file, &env).ok().map(|info| info.signature)
}

/// No fuzzed signature is a good one: the test signs nothing.
fn not_signed(signature: Option<BundleSignature>) -> Result<(), TestCaseError> {
    prop_assert!(
        !matches!(signature, Some(BundleSignature::Signed { .. })),
        "a signature the test never made was accepted: {signature:?}"
    );
    Ok(())
}

#[test]
fn the_unchanged_bundle_reads_as_unsigned() {
    // The base every case changes is a bundle that reads, so the cases reach past the zip.
    assert_eq!(read(&valid_bundle()), Some(BundleSignature::Unsigned));
}

proptest! {
    #![proptest_config(common::fuzz_config())]

    /// Any bytes at all.
    #[test]
    fn any_bytes_read_without_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        not_signed(read(&bytes))?;
    }

    /// A real bundle with bytes overwritten, inserted and cut anywhere (the zip's records,
    /// the deflated manifest, the end record and its comment length).
    #[test]
    fn a_changed_bundle_reads_without_a_panic(
        flips in prop::collection::vec((any::<Index>(), any::<u8>()), 0..8),
        insert in prop::option::of((any::<Index>(), prop::collection::vec(any::<u8>(), 1..64))),
        cut in prop::option::of(any::<Index>()),
    ) {
        let mut bytes = valid_bundle();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if let Some((at, extra)) = insert {
            let i = at.index(bytes.len() + 1);
            bytes.splice(i..i, extra);
        }
        if let Some(at) = cut {
            bytes.truncate(at.index(bytes.len() + 1));
        }
        not_signed(read(&bytes))?;
    }

    /// A real bundle and a signature block of any framing: a length that is right or wrong,
    /// DER-like contents, zero padding or not, the end record's comment length covering the
    /// block or not, a second zip or junk between block and footer, bytes after the footer.
    #[test]
    fn a_signature_block_of_any_shape_reads_without_a_panic(
        der in der_like(),
        length_off in -3i64..3,
        padding in 0usize..8,
        comment_covers in any::<bool>(),
        between in prop::option::of(prop::collection::vec(any::<u8>(), 1..32)),
        wrapped in any::<bool>(),
        after in prop::option::of(prop::collection::vec(any::<u8>(), 1..16)),
    ) {
        let mut bytes = valid_bundle();
        let length = u32::try_from((der.len() as i64 + length_off).max(0)).unwrap();
        let mut block = sig_block(length, &der, padding);
        let footer = block.len() - b"MCPB_SIG_END".len();
        if wrapped {
            // The wrapping layout of issue 42: another archive between the DER and the footer.
            block.splice(footer..footer, valid_bundle());
        } else if let Some(junk) = between {
            block.splice(footer..footer, junk);
        }
        if comment_covers {
            let at = bytes.len() - 22;
            let len = u16::try_from(block.len().min(u16::MAX as usize)).unwrap();
            bytes[at + 20..at + 22].copy_from_slice(&len.to_le_bytes());
        }
        bytes.extend_from_slice(&block);
        if let Some(tail) = after {
            bytes.extend_from_slice(&tail);
        }
        not_signed(read(&bytes))?;
    }
}
