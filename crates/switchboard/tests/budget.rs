//! The output budget on real files in a temporary folder.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::{ImageFormat, ImageReader, RgbImage, RgbaImage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard::budget::{BudgetError, OutputBudget, OverflowMode, estimate_tokens};

fn budget(dir: &Path) -> OutputBudget {
    OutputBudget::new(dir.join("out"))
}

fn text_of(result: &Value, i: usize) -> &str {
    result["content"][i]["text"].as_str().unwrap()
}

/// The one file the budget wrote, which must sit directly in the output folder.
fn only_file(files: &[PathBuf], dir: &Path) -> PathBuf {
    assert_eq!(files.len(), 1, "{files:?}");
    let file = files[0].clone();
    assert_eq!(file.parent(), Some(dir));
    file
}

fn png(width: u32, height: u32) -> Vec<u8> {
    // Plain bands: quick to encode in a debug build, still a real picture.
    let img = RgbaImage::from_fn(width, height, |x, _| {
        image::Rgba([(x / 500 * 30) as u8, 90, 128, 255])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, ImageFormat::Png).unwrap();
    out.into_inner()
}

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(width, height, |x, _| {
        image::Rgb([(x / 500 * 30) as u8, 90, 64])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, ImageFormat::Jpeg).unwrap();
    out.into_inner()
}

fn decode(data: &str) -> (ImageFormat, u32, u32) {
    let bytes = STANDARD.decode(data).unwrap();
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .unwrap();
    let format = reader.format().unwrap();
    let img = reader.decode().unwrap();
    (format, img.width(), img.height())
}

#[test]
fn a_result_within_the_budget_is_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let result = json!({
        "content": [
            {"type": "text", "text": "hello", "annotations": {"audience": ["user"]}},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
            {"type": "resource", "resource": {"uri": "mem://x", "text": "inline"}}
        ],
        "structuredContent": {"greeting": "hello"},
        "isError": false,
        "_meta": {"x": 1}
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("srv", "greet", result.clone())
        .unwrap();
    assert_eq!(out.result, result);
    assert!(!out.overflowed);
    assert!(out.files.is_empty());
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    assert_eq!(out.estimated_tokens, estimate_tokens(&result));
    // Nothing was written, so the folder was not even created.
    assert!(!tmp.path().join("out").exists());
}

#[test]
fn estimates_are_documented_arithmetic() {
    assert_eq!(estimate_tokens(&json!("abcd")), 1);
    assert_eq!(estimate_tokens(&json!("abcde")), 2);
    assert_eq!(estimate_tokens(&json!("")), 0);
    assert_eq!(estimate_tokens(&json!(12)), 1);
    // {"type": "text", "text": 8 chars}: 1 + 1 + 1 + 2
    assert_eq!(
        estimate_tokens(&json!({"type": "text", "text": "12345678"})),
        5
    );
    // An image by its area (1 500 × 1 000 / 750 = 2 000), not its base64 length.
    let data = STANDARD.encode(png(1500, 1000));
    let item = json!({"type": "image", "data": data, "mimeType": "image/png"});
    // type (1) + "image" (2) + data key (1) + 2 000 + mimeType key (2) + "image/png" (3)
    assert_eq!(estimate_tokens(&item), 2_009);
}

#[test]
fn over_the_budget_the_text_is_persisted_with_a_preview() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let text: String = (0..2_000)
        .map(|i| format!("line {i}: ünïcode ✓\n"))
        .collect();
    let result = json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
        "_meta": {"trace": "abc"}
    });
    let out = budget(tmp.path())
        .with_max_tokens(1_000)
        .apply_to_tool_result("srv", "dump", result)
        .unwrap();
    assert!(out.overflowed);
    let file = only_file(&out.files, &dir);
    assert!(
        file.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("srv__dump__")
    );
    assert_eq!(file.extension().unwrap(), "txt");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    // Everything but the content is kept.
    assert_eq!(out.result["isError"], json!(true));
    assert_eq!(out.result["_meta"], json!({"trace": "abc"}));
    let content = out.result["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    let note = text_of(&out.result, 0);
    assert!(note.contains(&file.display().to_string()), "{note}");
    assert!(note.contains(&format!("{} bytes", text.len())), "{note}");
    assert!(
        note.contains(&format!("about {} tokens", out.estimated_tokens)),
        "{note}"
    );
    let preview: String = text.chars().take(2_000).collect();
    assert!(
        note.ends_with(&format!(
            "Preview (the first 2000 of {} characters of text):\n{preview}",
            text.chars().count()
        )),
        "{note}"
    );
    assert_eq!(out.notes.len(), 1);
    assert!(
        out.notes[0].starts_with("result of about "),
        "{:?}",
        out.notes
    );
}

#[test]
fn over_the_budget_a_structured_result_is_persisted_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let rows: Vec<Value> = (0..500)
        .map(|i| json!({"id": i, "name": format!("row {i}")}))
        .collect();
    let png_data = STANDARD.encode(png(10, 10));
    let result = json!({
        "content": [
            {"type": "text", "text": serde_json::to_string(&rows).unwrap()},
            {"type": "image", "data": png_data, "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///rows.csv", "name": "rows.csv"}
        ],
        "structuredContent": {"rows": rows}
    });
    let out = budget(tmp.path())
        .with_max_tokens(500)
        .apply_to_tool_result("db", "query", result.clone())
        .unwrap();
    assert!(out.overflowed);
    let file = only_file(&out.files, &tmp.path().join("out"));
    assert_eq!(file.extension().unwrap(), "json");
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(saved, result);
    // The note first, then what is not text: the image and the link stay inline.
    let content = out.result["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert!(text_of(&out.result, 0).contains("saved as JSON"));
    assert_eq!(content[1], result["content"][1]);
    assert_eq!(content[2], result["content"][2]);
    assert!(out.result.get("structuredContent").is_none());
}

#[test]
fn truncate_mode_cuts_the_text_with_a_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "é".repeat(2_000);
    let result = json!({
        "content": [
            {"type": "text", "text": text},
            {"type": "text", "text": "x".repeat(100)}
        ]
    });
    let out = budget(tmp.path())
        .with_max_tokens(100)
        .with_mode(OverflowMode::Truncate)
        .apply_to_tool_result("srv", "big", result)
        .unwrap();
    assert!(out.overflowed);
    assert!(out.files.is_empty());
    // Tokens: "content" (2) + (3 + 500) + (3 + 25) = 533, 433 over. Allowance: 100 − 2 −
    // overhead (2 items × (3 + 1)) − 32 for the marker = 58 tokens = 232 characters.
    let kept = "é".repeat(232);
    assert_eq!(
        out.result,
        json!({"content": [{
            "type": "text",
            "text": format!(
                "{kept}\n[… truncated: 1868 more characters; 433 tokens over the budget]"
            )
        }]})
    );
    assert!(estimate_tokens(&out.result) <= 100);
    assert_eq!(
        out.notes,
        vec![
            "result of about 533 tokens is over the budget of 100: truncated (1868 characters dropped)"
                .to_owned()
        ]
    );
}

#[test]
fn truncate_mode_drops_structured_content() {
    let tmp = tempfile::tempdir().unwrap();
    let result = json!({
        "content": [{"type": "text", "text": "short"}],
        "structuredContent": {"blob": "y".repeat(4_000)}
    });
    let out = budget(tmp.path())
        .with_max_tokens(100)
        .with_mode(OverflowMode::Truncate)
        .apply_to_tool_result("srv", "t", result)
        .unwrap();
    assert!(out.overflowed);
    assert!(out.result.get("structuredContent").is_none());
    assert_eq!(text_of(&out.result, 0), "short");
    let marker = text_of(&out.result, 1);
    assert!(
        marker.starts_with("[… truncated: 0 more characters;")
            && marker.ends_with("[structuredContent omitted]"),
        "{marker}"
    );
}

#[test]
fn above_the_warning_threshold_a_note_is_left() {
    let tmp = tempfile::tempdir().unwrap();
    let result = json!({"content": [{"type": "text", "text": "w".repeat(200)}]});
    let out = budget(tmp.path())
        .with_max_tokens(1_000)
        .with_warn_tokens(10)
        .apply_to_tool_result("srv", "t", result.clone())
        .unwrap();
    assert!(!out.overflowed);
    assert_eq!(out.result, result);
    assert_eq!(
        out.notes,
        vec!["large result: about 55 tokens (warning above 10, budget 1000)".to_owned()]
    );
}

#[test]
fn a_wide_png_is_downsized_and_stays_png() {
    let tmp = tempfile::tempdir().unwrap();
    let result = json!({
        "content": [{
            "type": "image",
            "data": STANDARD.encode(png(4000, 1000)),
            "mimeType": "image/png",
            "annotations": {"priority": 1}
        }]
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("shots", "screen", result)
        .unwrap();
    let item = &out.result["content"][0];
    assert_eq!(item["type"], "image");
    assert_eq!(item["mimeType"], "image/png");
    assert_eq!(item["annotations"], json!({"priority": 1}));
    assert_eq!(
        decode(item["data"].as_str().unwrap()),
        (ImageFormat::Png, 1568, 392)
    );
    assert_eq!(
        out.notes,
        vec!["image resized from 4000×1000 to 1568×392 (image/png)".to_owned()]
    );
    assert!(out.files.is_empty());
    assert!(
        !out.overflowed,
        "images do not count against the text budget"
    );
    assert_eq!(out.estimated_tokens, 17 + (1568 * 392_u64).div_ceil(750));
}

#[test]
fn a_jpeg_stays_jpeg() {
    let tmp = tempfile::tempdir().unwrap();
    let result = json!({
        "content": [{"type": "image", "data": STANDARD.encode(jpeg(2000, 1500)), "mimeType": "image/jpeg"}]
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("cam", "snap", result)
        .unwrap();
    let item = &out.result["content"][0];
    assert_eq!(item["mimeType"], "image/jpeg");
    assert_eq!(
        decode(item["data"].as_str().unwrap()),
        (ImageFormat::Jpeg, 1568, 1176)
    );
}

#[test]
fn a_small_image_is_left_as_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let result = json!({
        "content": [{"type": "image", "data": STANDARD.encode(png(64, 32)), "mimeType": "image/png"}]
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("srv", "t", result.clone())
        .unwrap();
    assert_eq!(out.result, result);
    assert!(out.notes.is_empty());
}

#[test]
fn an_undecodable_image_goes_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let bytes = b"\x89PNG but not really an image".to_vec();
    let result = json!({
        "content": [{
            "type": "image",
            "data": STANDARD.encode(&bytes),
            "mimeType": "image/png",
            "annotations": {"audience": ["assistant"]}
        }]
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("srv", "broken", result)
        .unwrap();
    let file = only_file(&out.files, &dir);
    assert_eq!(file.extension().unwrap(), "png");
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    let item = &out.result["content"][0];
    assert_eq!(item["type"], "text");
    assert_eq!(item["annotations"], json!({"audience": ["assistant"]}));
    let text = item["text"].as_str().unwrap();
    assert!(
        text.starts_with("[image that could not be decoded ("),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "(image/png, {} bytes) saved to {}]",
            bytes.len(),
            file.display()
        )),
        "{text}"
    );
}

#[test]
fn audio_goes_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let bytes: Vec<u8> = (0..=255).collect();
    let result = json!({
        "content": [
            {"type": "text", "text": "here it is"},
            {"type": "audio", "data": STANDARD.encode(&bytes), "mimeType": "audio/wav"}
        ]
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("voice", "speak", result)
        .unwrap();
    let file = only_file(&out.files, &dir);
    assert_eq!(file.extension().unwrap(), "wav");
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(
        out.result,
        json!({"content": [
            {"type": "text", "text": "here it is"},
            {"type": "text", "text": format!("[audio (audio/wav, 256 bytes) saved to {}]", file.display())}
        ]})
    );
}

#[test]
fn an_embedded_blob_goes_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let bytes = b"%PDF-1.7 pretend".to_vec();
    let result = json!({
        "content": [{
            "type": "resource",
            "resource": {"uri": "file:///docs/report.pdf", "mimeType": "application/pdf", "blob": STANDARD.encode(&bytes)}
        }]
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("docs", "fetch", result)
        .unwrap();
    let file = only_file(&out.files, &dir);
    assert_eq!(file.extension().unwrap(), "pdf");
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(
        text_of(&out.result, 0),
        format!(
            "[resource \"file:///docs/report.pdf\" (application/pdf, 16 bytes) saved to {}]",
            file.display()
        )
    );
}

#[test]
fn a_resource_read_keeps_text_inline_and_blobs_in_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let result = json!({
        "contents": [
            {"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# Notes"},
            {"uri": "file:///logo.bin", "mimeType": "application/octet-stream", "blob": STANDARD.encode([1, 2, 3]), "_meta": {"k": "v"}}
        ]
    });
    let out = budget(tmp.path())
        .apply_to_resource("files", result)
        .unwrap();
    let file = only_file(&out.files, &dir);
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("files__logo_bin__"), "{name}");
    assert!(name.ends_with(".bin"), "{name}");
    assert_eq!(std::fs::read(&file).unwrap(), [1, 2, 3]);
    assert_eq!(
        out.result,
        json!({"contents": [
            {"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# Notes"},
            {
                "uri": "file:///logo.bin",
                "mimeType": "text/plain",
                "text": format!("[resource \"file:///logo.bin\" (application/octet-stream, 3 bytes) saved to {}]", file.display()),
                "_meta": {"k": "v"}
            }
        ]})
    );
}

#[test]
fn a_large_resource_text_is_persisted() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "r".repeat(10_000);
    let result =
        json!({"contents": [{"uri": "file:///big.log", "mimeType": "text/plain", "text": text}]});
    let out = budget(tmp.path())
        .with_max_tokens(100)
        .apply_to_resource("logs", result)
        .unwrap();
    assert!(out.overflowed);
    let file = only_file(&out.files, &tmp.path().join("out"));
    assert!(
        file.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("logs__big_log__")
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let contents = out.result["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1);
    assert_eq!(contents[0]["uri"], "file:///big.log");
    assert!(
        contents[0]["text"]
            .as_str()
            .unwrap()
            .contains(&file.display().to_string())
    );
}

#[test]
fn names_a_server_chooses_never_escape_the_output_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("deep").join("out");
    let budget = OutputBudget::new(dir.clone()).with_max_tokens(10);
    let evil = "../../../../../../../../etc/passwd";
    let mut files = Vec::new();

    let tool = json!({
        "content": [
            {"type": "audio", "data": STANDARD.encode(b"a"), "mimeType": "../../x/../y"},
            {"type": "resource", "resource": {"uri": format!("file://{evil}"), "blob": STANDARD.encode(b"b"), "mimeType": "a/../../b"}},
            {"type": "resource_link", "uri": format!("file://{evil}"), "name": evil},
            {"type": "text", "text": "t".repeat(200)}
        ]
    });
    let out = budget.apply_to_tool_result(evil, evil, tool).unwrap();
    assert!(out.overflowed);
    // The link is passed on untouched: it names nothing on this machine.
    assert_eq!(out.result["content"][3]["name"], evil);
    files.extend(out.files);

    let resource = json!({
        "contents": [
            {"uri": format!("file:///{evil}"), "blob": STANDARD.encode(b"c")},
            {"uri": "..", "mimeType": "text/plain", "text": "t".repeat(200)},
            {"uri": "x/..\\..\\windows", "blob": STANDARD.encode(b"d")}
        ]
    });
    let out = budget.apply_to_resource("..\\..\\srv", resource).unwrap();
    files.extend(out.files);

    assert_eq!(files.len(), 6, "{files:?}");
    let canonical = dir.canonicalize().unwrap();
    for file in &files {
        assert_eq!(file.parent(), Some(dir.as_path()));
        assert_eq!(
            file.canonicalize().unwrap().parent(),
            Some(canonical.as_path())
        );
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)),
            "{name}"
        );
        assert_eq!(name.matches('.').count(), 1, "{name}");
    }
    // Nothing else was created anywhere under the temporary root.
    let mut all = Vec::new();
    walk(tmp.path(), &mut all);
    all.sort();
    let mut expected: Vec<PathBuf> = files.clone();
    expected.sort();
    assert_eq!(all, expected);
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[cfg(unix)]
#[test]
fn the_folder_and_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let result = json!({"content": [{"type": "audio", "data": STANDARD.encode(b"abc"), "mimeType": "audio/ogg"}]});
    let out = budget(tmp.path())
        .apply_to_tool_result("srv", "t", result)
        .unwrap();
    let file = only_file(&out.files, &dir);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&file), 0o600);
}

#[test]
fn files_are_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let budget = budget(tmp.path());
    let mut files = Vec::new();
    for i in 0..20u8 {
        let result = json!({"content": [{"type": "audio", "data": STANDARD.encode([i]), "mimeType": "audio/ogg"}]});
        files.extend(
            budget
                .apply_to_tool_result("srv", "t", result)
                .unwrap()
                .files,
        );
    }
    for (i, file) in files.iter().enumerate() {
        assert_eq!(std::fs::read(file).unwrap(), [i as u8]);
    }
}

#[test]
fn a_50_mb_result_goes_to_a_file_and_comes_back_small() {
    let tmp = tempfile::tempdir().unwrap();
    let line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ\n";
    let text = line.repeat(50 * 1024 * 1024 / line.len() + 1);
    assert!(text.len() > 50 * 1024 * 1024);
    let len = text.len();
    let result = json!({"content": [{"type": "text", "text": text.clone()}]});
    let out = budget(tmp.path())
        .apply_to_tool_result("srv", "huge", result)
        .unwrap();
    assert!(out.overflowed);
    assert_eq!(out.estimated_tokens, 5 + (len as u64).div_ceil(4));
    let file = only_file(&out.files, &tmp.path().join("out"));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), len as u64);
    assert!(
        std::fs::read_to_string(&file).unwrap() == text,
        "file differs"
    );
    let returned = serde_json::to_string(&out.result).unwrap();
    assert!(returned.len() < 4_000, "{} bytes", returned.len());
}

#[test]
fn a_result_that_is_not_an_object_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let budget = budget(tmp.path());
    assert_eq!(
        budget.apply_to_tool_result("s", "t", json!([1])),
        Err(BudgetError::NotAnObject {
            what: "tool result"
        })
    );
    assert_eq!(
        budget
            .apply_to_resource("s", json!({"contents": "x"}))
            .unwrap_err()
            .to_string(),
        "`contents` of a resource result must be an array"
    );
}

#[test]
fn a_webp_becomes_png() {
    let tmp = tempfile::tempdir().unwrap();
    let img = RgbaImage::from_fn(1600, 400, |x, _| {
        image::Rgba([(x / 400 * 60) as u8, 10, 200, 255])
    });
    let mut webp = Cursor::new(Vec::new());
    img.write_to(&mut webp, ImageFormat::WebP).unwrap();
    let result = json!({
        "content": [{"type": "image", "data": STANDARD.encode(webp.into_inner()), "mimeType": "image/webp"}]
    });
    let out = budget(tmp.path())
        .apply_to_tool_result("srv", "t", result)
        .unwrap();
    let item = &out.result["content"][0];
    assert_eq!(item["mimeType"], "image/png");
    assert_eq!(
        decode(item["data"].as_str().unwrap()),
        (ImageFormat::Png, 1568, 392)
    );
}

#[test]
fn a_server_budget_overrides_the_global_one() {
    use switchboard::config::{Environment, Origin, Scope, parse_entry_value};
    let entry = |extra: Value| {
        let mut entry = json!({"command": "true"});
        entry
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let origin = Origin {
            scope: Scope::User,
            file: None,
        };
        parse_entry_value("srv", &entry, origin, &Environment::default(), "<test>")
            .unwrap()
            .0
    };
    let tmp = tempfile::tempdir().unwrap();
    let global = budget(tmp.path());
    assert_eq!(global.max_tokens, 25_000);
    assert_eq!(global.warn_tokens, 10_000);
    assert_eq!(global.mode, OverflowMode::Persist);
    assert_eq!(global.max_image_edge, 1568);

    let own = global.for_server(&entry(json!({"maxOutputTokens": 50})));
    assert_eq!(own, global.clone().with_max_tokens(50));
    assert_eq!(global.for_server(&entry(json!({}))), global);

    let result = json!({"content": [{"type": "text", "text": "z".repeat(400)}]});
    assert!(
        own.apply_to_tool_result("srv", "t", result.clone())
            .unwrap()
            .overflowed
    );
    assert!(
        !global
            .apply_to_tool_result("srv", "t", result)
            .unwrap()
            .overflowed
    );
}
